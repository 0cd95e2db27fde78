"""Replay: which entrypoints may run and how, the confirming page, a real replay through a real
server into a new run, and the comparison of that run with its original."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from devtool.actions.replay_runner import ReplayPlan, ReplayRefused, check_entrypoint
from devtool.core import create_agent, create_tool, memory
from devtool.demo import research
from devtool.store import Store, load_file
from devtool.store.queries.navigation import search_spans
from devtool.web import create_app
from devtool.web.pages.compare import compare
from devtool.web.settings import Settings
from devtool.web.state import AppState
from tests.conftest import CORPUS, DevtoolRunner
from tests.web_runs import html, one, record

RESEARCH = {"entrypoint": "devtool.demo.research:main", "props": {"question": "Rust or Go?", "delay": 0}}


@pytest.mark.parametrize(
    ("entrypoint", "why"),
    [
        ("os:system", "standard library"),
        ("subprocess:run", "standard library"),
        ("builtins:exec", "standard library"),
        ("pytest:main", "installed package"),
        ("devtool.cli:main; rm -rf ~", "is not module:function"),
        ("$(reboot):main", "is not module:function"),
        ("--help:main", "is not module:function"),
        ("dеvtool.demo.research:main", "is not module:function"),  # a Cyrillic "е"
        ("devtool.demo.research", "is not module:function"),
        (["devtool.demo.research:main"], "is not module:function"),
        ("no_such_module_here:main", "there is no module 'no_such_module_here'"),
        ("agent.nope:main", "there is no module 'nope' in package 'agent'"),
    ],
)
def test_what_a_replay_refuses_to_run(tmp_path: Path, entrypoint: Any, why: str) -> None:
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "__init__.py").write_text("")
    with pytest.raises(ReplayRefused, match=re.escape(why)):
        check_entrypoint(entrypoint, tmp_path)


def test_project_code_and_the_bundled_demo_may_run(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "__init__.py").write_text("")
    (tmp_path / "agents" / "billing.py").write_text("async def main(props): return props\n")
    assert check_entrypoint("agents.billing:main", tmp_path) == tmp_path / "agents" / "billing.py"
    assert check_entrypoint("devtool.demo.research:main", tmp_path).name == "research.py"
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with pytest.raises(ReplayRefused, match="outside"):
        check_entrypoint("tests.web_runs:record", elsewhere)


def test_the_command_is_an_argument_list_with_one_value_per_argument(tmp_path: Path) -> None:
    plan = ReplayPlan("a" * 64, "t" * 32, "devtool.demo.research:main", "--to=http://evil", tmp_path / "x.py")
    argv = plan.argv("http://127.0.0.1:9", "r1")
    assert argv[:5] == [sys.executable, "-m", "devtool", "run", "devtool.demo.research:main"]
    assert '--props="--to=http://evil"' in argv
    assert [a for a in argv if a.startswith("--to=")] == ["--to=http://127.0.0.1:9"]
    assert "--defined-in-module" in argv
    metadata = json.loads(next(a for a in argv if a.startswith("--metadata=")).removeprefix("--metadata="))
    assert metadata == {"replay": {"id": "r1", "snapshotId": "a" * 64, "originalTraceId": "t" * 32}}


def test_a_function_the_module_only_imported_is_not_run(devtool: DevtoolRunner, tmp_path: Path) -> None:
    (tmp_path / "sneaky.py").write_text("from subprocess import run\n")
    marker = tmp_path / "ran"
    done = devtool("run", "sneaky:run", "--defined-in-module", "--props", json.dumps(["touch", str(marker)]))
    assert done.returncode == 2
    assert "sneaky:run is not defined in sneaky (it comes from elsewhere): refusing to run it" in done.stderr
    assert not marker.exists()


@pytest.fixture
def client(store: Store, tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(store, Settings(replay_root=tmp_path)), follow_redirects=False) as client:
        yield client


def rewound(client: TestClient, store: Store, trace_id: str, text: str, kind: str, anchor: str) -> str:
    span = next(hit.span_id for hit in search_spans(store, trace_id, text) if hit.kind == kind)
    response = client.post(f"/runs/{trace_id}/rewind", data={"span_id": span, "anchor": anchor})
    assert response.status_code == 303, response.text
    return str(response.headers["location"])


def test_the_confirming_page_shows_exactly_what_will_run(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), metadata=RESEARCH)
    snapshot = rewound(client, store, trace_id, "fetch_page", "tools:execute", "before")
    page = html(client.get(f"{snapshot}/replay").text)
    assert one(page, "#replay-entrypoint").text() == "devtool.demo.research:main"
    assert "Rust or Go?" in one(page, "#replay-props").text()
    argv = one(page, "#replay-argv").text().splitlines()
    assert argv[1:5] == ["-m", "devtool", "run", "devtool.demo.research:main"]
    assert f"--props={json.dumps(RESEARCH['props'], separators=(',', ':'))}" in argv
    fingerprint = one(page, "input[name=fingerprint]").attributes["value"]
    stale = client.post(f"{snapshot}/replay", data={"fingerprint": "0" * 32})
    assert stale.status_code == 409
    assert fingerprint != "0" * 32


def test_a_hostile_entrypoint_is_shown_refused_and_never_started(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    hostile = {"entrypoint": "os:system", "props": "rm -rf ~"}
    trace_id = record(store, tmp_path, lambda: research.main({"delay": 0}), metadata=hostile)
    snapshot = rewound(client, store, trace_id, "writer", "agent", "after")
    page = html(client.get(f"{snapshot}/replay").text)
    assert "standard library" in one(page, "#replay-refused").text()
    assert not page.css("#replay-run")
    response = client.post(f"{snapshot}/replay", data={"fingerprint": "anything"})
    assert response.status_code == 422
    assert AppState.of(client.app).replays._by_id == {}  # type: ignore[arg-type]


def test_a_run_without_an_entrypoint_shows_the_lines_to_replay_it_by_hand(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = record(store, tmp_path, lambda: research.main({"delay": 0}))
    snapshot = rewound(client, store, trace_id, "writer", "agent", "after")
    page = html(client.get(f"{snapshot}/replay").text)
    assert "has no recorded entrypoint" in one(page, "#replay-by-hand h2").text()
    lines = one(page, "#replay-python").text()
    assert f"http://testserver{snapshot}.json" in lines
    assert "run_with(lambda: main(props), snapshot=snapshot, sinks=[sink])" in lines
    assert not page.css("#replay-run")


def test_compare_aligns_frames_by_call_id_and_marks_what_differs(store: Store, tmp_path: Path) -> None:
    def program(answer: str, *, extra: bool) -> Any:
        lookup = create_tool("lookup", lambda q: {"q": q})

        async def child(props: Any) -> Any:
            memory()["answer"] = answer
            return await lookup(q=answer)

        async def parent(props: Any) -> Any:
            first = await create_agent("child", child)({})
            if extra:
                await create_agent("extra", child)({})
            return first

        return lambda: create_agent("parent", parent)({})

    left = record(store, tmp_path, program("a", extra=True), name="left")
    right = record(store, tmp_path, program("b", extra=False), name="right")
    rows = {row.call_id: row for row in compare(store, left, right).rows}
    assert list(rows) == [
        "root",
        "root/agent:parent:0",
        "root/agent:parent:0/agent:child:0",
        "root/agent:parent:0/agent:extra:0",
    ]
    child = rows["root/agent:parent:0/agent:child:0"]
    assert child.output_differs
    assert child.memory_differs
    assert not child.status_differs
    assert [c.key for c in child.memory_changes if c.change == "changed"] == ["answer"]
    extra = rows["root/agent:parent:0/agent:extra:0"]
    assert extra.left is not None
    assert extra.right is None
    assert extra.differs
    assert child.right is not None
    assert (child.right.cached, child.right.live) == (0, 1)


# A real replay, through a real server.


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`devtool serve` on loopback with a recorded research run; (its URL, the run's trace id)."""
    trace = tmp_path / "research.jsonl"
    store = Store(tmp_path / "recording.duckdb")
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), name="research", metadata=RESEARCH)
    store.close()
    process = subprocess.Popen(
        [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(tmp_path / "s.db"), str(trace)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()
    assert first.startswith("DevTool at "), first + (process.stderr.read() if process.stderr else "")
    yield first.split(" at ", 1)[1].strip().rstrip("/"), trace_id
    process.terminate()
    process.wait(timeout=10)


def http(url: str, form: dict[str, str] | None = None, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    data = None if form is None else "&".join(f"{k}={urllib.parse.quote(v)}" for k, v in form.items()).encode()

    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    opener = urllib.request.build_opener(Keep)
    try:
        with opener.open(urllib.request.Request(url, data=data, headers=headers or {}), timeout=30) as response:
            return response.status, response.read().decode(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(), error.headers


def test_a_replay_runs_in_a_child_process_and_becomes_a_run_that_compares_with_its_original(
    served: tuple[str, str],
) -> None:
    base, original = served
    status, page, _ = http(f"{base}/runs/{original}/search?q=fetch_page")
    span = re.search(r'data-span="([0-9a-f]{16})"', page)
    assert span, page
    status, _, headers = http(f"{base}/runs/{original}/rewind", {"span_id": span.group(1), "anchor": "before"})
    assert status == 303
    snapshot = headers["location"]
    status, confirm, _ = http(f"{base}{snapshot}/replay")
    fingerprint = re.search(r'name="fingerprint" value="([0-9a-f]+)"', confirm)
    assert fingerprint
    status, _, headers = http(f"{base}{snapshot}/replay", {"fingerprint": fingerprint.group(1)})
    assert status == 303
    replay_page = headers["location"]
    deadline = time.monotonic() + 60
    new_run = None
    while time.monotonic() < deadline:
        status, body, headers = http(f"{base}{replay_page}", headers={"HX-Request": "true"})
        if headers.get("HX-Redirect"):
            new_run = headers["HX-Redirect"].removeprefix("/runs/")
            break
        assert "failed" not in body, body
        time.sleep(0.2)
    assert new_run, "the replay never became a run"
    while time.monotonic() < deadline:
        _, actions, _ = http(f"{base}/runs/{new_run}/actions")
        _, compared, _ = http(f"{base}/runs/{new_run}/compare")
        if "completed</span></th>" in compared.split("replay ·", 1)[-1].split("</tr>", 1)[0]:
            break
        time.sleep(0.2)
    assert f'href="/runs/{original}"' in actions
    assert f'href="{snapshot}"' in actions
    summary = one(html(compared), "#compare-summary").text()
    assert re.search(r"0\s+frames differ", summary), summary
    researcher = one(html(compared), 'tr[data-call-id="root/agent:research-lead:0/agent:researcher:0"]')
    cached, live = (int(b.text().split()[0]) for b in researcher.css("td.side:last-child .badge"))
    assert cached >= 3  # its first turn, its search and its second turn came from the snapshot...
    assert live >= 3  # ...the fetches it was rewound to before, and the turn after them, ran live


def test_a_typescript_run_shows_its_props_and_the_node_lines_to_replay_it(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    (trace_id,) = load_file(store, CORPUS / "rejelly" / "simple.trace.jsonl").traces
    snapshot = rewound(client, store, trace_id, "assistant", "agent", "after")
    page = html(client.get(f"{snapshot}/replay").text)
    lines = one(page, "#replay-node").text()
    assert 'const props = {"question":"What is the weather in Paris?"};' in lines
    assert f'fetch("http://testserver{snapshot}.json")' in lines
    assert "await runWith(main, { initialProps: props, snapshot, enableSnapshot: true });" in lines
    assert 'enableReview({ endpoint: "http://testserver/api/v1/traces" })' in lines
    assert not page.css("#replay-python")


def test_a_python_run_shows_the_props_it_was_recorded_with(client: TestClient, store: Store, tmp_path: Path) -> None:
    async def main() -> str:
        return await create_agent("asker", lambda props: props["topic"])({"topic": "interop"})  # type: ignore[no-any-return]

    # Recorded the way an agent streams into the DevTool without `devtool run`: props in the metadata.
    trace_id = record(store, tmp_path, main, metadata={"props": {"topic": "interop"}})
    snapshot = rewound(client, store, trace_id, "asker", "agent", "after")
    page = html(client.get(f"{snapshot}/replay").text)
    assert 'props = {"topic":"interop"}' in one(page, "#replay-python").text()
    assert not page.css("#replay-node")
