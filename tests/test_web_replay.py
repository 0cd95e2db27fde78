"""Replay: which entrypoints may run and how, the confirming page, a real replay through a real
server into a new run, and the comparison of that run with its original."""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from html import unescape as html_unescape
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from devtool.actions.replay_runner import Declaration, ReplayPlan, ReplayRefused, check_entrypoint
from devtool.core import create_agent, create_tool, memory
from devtool.demo import research
from devtool.store import Store, load_file
from devtool.store.queries.navigation import search_spans
from devtool.web import create_app
from devtool.web.settings import Settings
from devtool.web.state import AppState
from tests.conftest import CORPUS, REPO, DevtoolRunner, running_serve
from tests.off_loop import audited
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


def project(root: Path, source: str) -> Path:
    """A project folder `root` with package `agents` and its module `billing.py` holding `source`."""
    (root / "agents").mkdir(exist_ok=True)
    (root / "agents" / "__init__.py").write_text("")
    module = root / "agents" / "billing.py"
    module.write_text(source)
    return module


DECLARED = "from devtool.core import replayable\n\n\n@replayable\nasync def main(props):\n    return props\n"


def test_project_code_and_the_bundled_demo_may_run_when_declared_replayable(tmp_path: Path) -> None:
    module = project(tmp_path, DECLARED)
    declared = check_entrypoint("agents.billing:main", tmp_path)
    assert (declared.module_path, declared.line) == (module, 4)
    assert declared.source == "@replayable\nasync def main(props):\n    return props"
    assert check_entrypoint("devtool.demo.research:main", tmp_path).module_path.name == "research.py"
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    with pytest.raises(ReplayRefused, match="outside"):
        check_entrypoint("tests.web_runs:record", elsewhere)


@pytest.mark.parametrize(
    "source",
    [
        "import devtool.core\n\n@devtool.core.replayable\ndef main(props):\n    return props\n",
        "from devtool.core import replayable\n\ndef run(props):\n    return props\n\nmain = replayable(run)\n",
    ],
    ids=["dotted-decorator", "assigned"],
)
def test_other_ways_of_declaring_it(tmp_path: Path, source: str) -> None:
    module = project(tmp_path, source)
    assert check_entrypoint("agents.billing:main", tmp_path).module_path == module


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("async def main(props):\n    return props\n", "agents.billing:main is not declared replayable"),
        (DECLARED + "\n\ndef main(props):\n    return 1\n", "agents.billing:main is not declared replayable"),
        ("from other import main\n", "agents.billing:main is not declared replayable"),
        ("x = 1\n", "agents.billing defines no main"),
        ("def main(:\n", "cannot be read as Python"),
    ],
    ids=["undecorated", "redefined-after", "imported", "missing", "broken"],
)
def test_a_function_its_module_does_not_declare_replayable_is_refused(tmp_path: Path, source: str, why: str) -> None:
    project(tmp_path, source)
    with pytest.raises(ReplayRefused, match=re.escape(why)):
        check_entrypoint("agents.billing:main", tmp_path)


@pytest.mark.parametrize(
    "entrypoint",
    # What the probe ran, or could have, with the DevTool started in its own repository.
    ["bench.bench_store:timed_process", "devtool.cli:main", "devtool.demo.billing:JsonlSink", "tests.web_runs:record"],
)
def test_importable_code_that_never_declared_itself_replayable_is_refused(entrypoint: str) -> None:
    with pytest.raises(ReplayRefused, match="is not declared replayable"):
        check_entrypoint(entrypoint, REPO)


def test_the_command_is_an_argument_list_with_one_value_per_argument(tmp_path: Path) -> None:
    declared = Declaration(tmp_path / "x.py", 1, "")
    plan = ReplayPlan("a" * 64, "t" * 32, "devtool.demo.research:main", "--to=http://evil", declared)
    argv = plan.argv("http://127.0.0.1:9", "r1")
    assert argv[:5] == [sys.executable, "-m", "devtool", "run", "devtool.demo.research:main"]
    assert '--props="--to=http://evil"' in argv
    assert [a for a in argv if a.startswith("--to=")] == ["--to=http://127.0.0.1:9"]
    assert "--only-replayable" in argv
    metadata = json.loads(next(a for a in argv if a.startswith("--metadata=")).removeprefix("--metadata="))
    assert metadata == {"replay": {"id": "r1", "snapshotId": "a" * 64, "originalTraceId": "t" * 32}}


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("from subprocess import run\n", "sneaky:run is not declared replayable by sneaky"),
        # Its own `replayable`, not devtool's: it passes a reading of the source, not the child's check.
        (
            "def replayable(f):\n    return f\n\n@replayable\ndef run(props):\n    import subprocess\n"
            "    subprocess.run(props)\n",
            "sneaky:run is not declared replayable by sneaky",
        ),
    ],
    ids=["imported", "look-alike-decorator"],
)
def test_the_child_runs_only_what_its_module_declared_replayable(
    devtool: DevtoolRunner, tmp_path: Path, source: str, why: str
) -> None:
    (tmp_path / "sneaky.py").write_text(source)
    marker = tmp_path / "ran"
    done = devtool("run", "sneaky:run", "--only-replayable", "--props", json.dumps(["touch", str(marker)]))
    assert done.returncode == 2
    assert why in done.stderr
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
    declared = one(page, "#replay-declared").text()
    assert re.search(r"@replayable\s+at\s+\S*research\.py:\d+", declared), declared
    assert "async def main(props" in one(page, "#replay-source").text()
    assert "Rust or Go?" in one(page, "#replay-props").text()
    argv = one(page, "#replay-argv").text().splitlines()
    # The very argument list the child gets: this server's address and the replay's id included.
    assert argv[:5] == [sys.executable, "-m", "devtool", "run", "devtool.demo.research:main"]
    assert f"--props={json.dumps(RESEARCH['props'], separators=(',', ':'))}" in argv
    assert "--to=http://testserver:80" in argv
    metadata = json.loads(next(a for a in argv if a.startswith("--metadata=")).removeprefix("--metadata="))
    assert re.fullmatch(r"[0-9a-f]{32}", metadata["replay"]["id"])


def test_a_replay_starts_only_with_the_confirmation_of_a_page_this_server_showed(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), metadata=RESEARCH)
    snapshot = rewound(client, store, trace_id, "fetch_page", "tools:execute", "before")
    page = html(client.get(f"{snapshot}/replay").text)
    csrf = one(page, "#replay-go input[name=_csrf]").attributes["value"] or ""
    confirm = one(page, "#replay-go input[name=confirm]").attributes["value"] or ""
    # No browser headers here, so the server's access rules alone would let these through.
    attempts = [
        {"fingerprint": "anything"},  # the form of before: what a script could compute without a page
        {"confirm": confirm},  # without the page token
        {"_csrf": csrf},  # without a confirmation
        {"_csrf": csrf, "confirm": "0" * len(confirm)},  # one this server never showed
        {"_csrf": "x" * len(csrf), "confirm": confirm},
    ]
    for form in attempts:
        response = client.post(f"{snapshot}/replay", data=form)
        assert response.status_code == 403, form
    assert AppState.of(client.app).replays._by_id == {}  # type: ignore[arg-type]


def test_a_hostile_entrypoint_is_shown_refused_and_never_started(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
    hostile = {"entrypoint": "os:system", "props": "rm -rf ~"}
    trace_id = record(store, tmp_path, lambda: research.main({"delay": 0}), metadata=hostile)
    snapshot = rewound(client, store, trace_id, "writer", "agent", "after")
    page = html(client.get(f"{snapshot}/replay").text)
    assert "standard library" in one(page, "#replay-refused").text()
    assert not page.css("#replay-run")
    response = client.post(f"{snapshot}/replay", data={"confirm": "anything", "_csrf": "anything"})
    assert response.status_code in (403, 422)
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
    assert "from your_agent import main" in lines
    assert 'asyncio.run(run_with(call, snapshot=snapshot, sinks=[sink], metadata={"snapshot": url}))' in lines
    assert not page.css("#replay-run")


def test_the_compare_page_aligns_calls_by_call_id_and_opens_on_the_first_divergence(
    client: TestClient, store: Store, tmp_path: Path
) -> None:
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
    # By the short ids the UI shows: redirected to the whole ids, so the link can be shared.
    short = client.get(f"/compare?a={left[:12]}&b={right[:12]}", follow_redirects=False)
    assert short.status_code == 303
    assert short.headers["location"] == f"/compare?a={left}&b={right}"
    page = html(client.get(short.headers["location"]).text)
    child = "root/agent:parent:0/agent:child:0"
    tool = f"{child}/tool:lookup:0"
    # The tool's input changed first (it was asked "b", not "a"): the page opens there.
    assert one(page, "#divergence-title").text() == "First divergence: tool lookup in child #0"
    assert [f.attributes["data-field"] for f in page.css("#first-divergence .field-diff")] == ["input", "output"]
    word_diff = one(page, '#first-divergence .field-diff[data-field="input"] .word-diff')
    assert [d.text() for d in word_diff.css("del")] == ["a"]
    assert [i.text() for i in word_diff.css("ins")] == ["b"]
    downstream = [a.text() for a in page.css("#downstream a")]
    assert "child #0" in downstream
    # Every frame on the path to a difference is open; the extra agent only the left run made is marked.
    for call_id in ("root", "root/agent:parent:0", child):
        assert "checked" in one(page, f'li[data-call-id="{call_id}"] > input.cmp-open').attributes, call_id
    assert "first divergence" in one(page, f'li[data-call-id="{tool}"]').text()
    assert "only in one run" in one(page, 'li[data-call-id="root/agent:parent:0/agent:extra:0"]').text()
    # The memory of the child, key by key.
    chosen = html(client.get(f"/compare?a={left}&b={right}&call={child}").text)
    row = one(chosen, '#first-divergence .field-diff[data-field="memory"] tr.key-changed')
    assert row.css("code")[0].text() == "answer"
    # The JSON answer: the first divergence, how many calls differ of how many.
    answer = client.get(f"/compare?a={left[:8]}&b={right[:8]}", headers={"Accept": "application/json"}).json()
    assert answer["firstDivergence"] == {
        "callId": tool,
        "name": "tool lookup in child #0",
        "field": "input",
        "path": ".input.q",
        "a": {"tool": "lookup", "input": {"q": "a"}},
        "b": {"tool": "lookup", "input": {"q": "b"}},
    }
    assert (answer["a"], answer["b"]) == (left, right)
    assert answer["differing"] == answer["total"] == 6  # the run, parent, child, its tool, extra and its tool
    same = client.get(f"/compare?a={left}&b={left}", headers={"Accept": "application/json"}).json()
    assert (same["firstDivergence"], same["differing"]) == (None, 0)
    missing = client.get(f"/compare?a={left}&b=0000dead", headers={"Accept": "application/json"})
    assert missing.status_code == 404
    assert "0000dead" in missing.json()["error"]


# A real replay, through a real server.


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """`devtool serve` on loopback with a recorded research run; (its URL, the run's trace id)."""
    trace = tmp_path / "research.jsonl"
    store = Store(tmp_path / "recording.duckdb")
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), name="research", metadata=RESEARCH)
    store.close()
    with running_serve(tmp_path / "s.db", str(trace)) as server:
        yield server.url.rstrip("/"), trace_id


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


def replayed(base: str, original: str) -> tuple[str, str, str]:
    """Run `original` again through the server at `base`, rewound to before its first page fetch, as a
    person does (rewind, the confirm page, its POST); (the snapshot's page, the replay's page, the run
    the replay became)."""
    status, page, _ = http(f"{base}/runs/{original}/search?q=fetch_page")
    span = re.search(r'data-span="([0-9a-f]{16})"', page)
    assert span, page
    status, _, headers = http(f"{base}/runs/{original}/rewind", {"span_id": span.group(1), "anchor": "before"})
    assert status == 303
    snapshot = headers["location"]
    status, confirm, _ = http(f"{base}{snapshot}/replay")
    shown = json.loads(re.search(r"--metadata=(\{.*\})", html_unescape(confirm)).group(1))  # type: ignore[union-attr]
    form = {name: value for name, value in re.findall(r'name="(confirm|_csrf)" value="([^"]+)"', confirm)}
    assert set(form) == {"confirm", "_csrf"}
    status, _, headers = http(f"{base}{snapshot}/replay", form)
    assert status == 303
    assert headers["location"] == f"/replays/{shown['replay']['id']}"  # the replay that was shown
    assert http(f"{base}{snapshot}/replay", form)[0] == 403  # a confirmation starts one replay
    replay_page = headers["location"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status, body, headers = http(f"{base}{replay_page}", headers={"HX-Request": "true"})
        if headers.get("HX-Redirect"):
            return snapshot, replay_page, headers["HX-Redirect"].removeprefix("/runs/")
        assert "failed" not in body, body
        time.sleep(0.2)
    raise AssertionError("the replay never became a run")


def test_a_replay_runs_in_a_child_process_and_becomes_a_run_that_compares_with_its_original(
    served: tuple[str, str],
) -> None:
    base, original = served
    snapshot, _, new_run = replayed(base, original)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        _, header, _ = http(f"{base}/runs/{new_run}/header")
        if "s-completed" in header:
            break
        time.sleep(0.2)
    _, actions, _ = http(f"{base}/runs/{new_run}/actions")
    assert f'href="/runs/{original}"' in actions
    assert f'href="{snapshot}"' in actions
    status, _, headers = http(f"{base}/runs/{new_run}/compare")
    assert (status, headers["location"]) == (303, f"/compare?a={original}&b={new_run}")
    _, compared, _ = http(f"{base}{headers['location']}")
    summary = one(html(compared), "#compare-summary").text()
    assert "The runs are the same" in summary, summary
    researcher = one(html(compared), 'li[data-call-id="root/agent:research-lead:0/agent:researcher:0"]')
    cached, live = (int(b.text().split()[0]) for b in researcher.css(".served")[0].css(".badge"))
    assert cached >= 3  # its first turn, its search and its second turn came from the snapshot...
    assert live >= 3  # ...the fetches it was rewound to before, and the turn after them, ran live
    # Why each live call ran, told against the run it replayed: the rewind cut the fetches off.
    reasons = one(html(compared), "#live-calls").text()
    assert "fetch_page" in reasons, reasons
    assert "ran live: not recorded" not in reasons, reasons
    _, backwards, _ = http(f"{base}/compare?a={new_run}&b={original}")
    assert not html(backwards).css("#live-calls")  # the original replayed nothing


def test_a_replays_output_is_shown_while_its_server_runs_and_nothing_of_it_outlives_the_server(
    tmp_path: Path,
) -> None:
    temp = tmp_path / "temp"  # the server's temporary folder (TMPDIR), and so its replays'
    temp.mkdir()
    store = Store(tmp_path / "recording.duckdb")
    original = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), name="research", metadata=RESEARCH)
    store.close()

    def left_behind() -> list[Path]:
        return [path for path in temp.rglob("*") if "replay" in path.name]

    env = {**os.environ, "TMPDIR": str(temp)}
    with running_serve(tmp_path / "s.db", str(tmp_path / "research.jsonl"), env=env) as server:
        base = server.url.rstrip("/")
        _, replay_page, _ = replayed(base, original)
        deadline = time.monotonic() + 60
        while "exited with 0" not in (page := http(f"{base}{replay_page}")[1]) and time.monotonic() < deadline:
            time.sleep(0.2)
        # What the child wrote, on its replay page while the server runs: its result line last.
        output = one(html(page), ".replay-log pre").text().strip().splitlines()
        assert json.loads(output[-1]), output
        assert left_behind() == []  # in a file without a name
    assert left_behind() == []


def test_a_replays_child_is_started_off_the_event_loop(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace_id = record(store, tmp_path, lambda: research.main(RESEARCH["props"]), metadata=RESEARCH)
    snapshot = rewound(client, store, trace_id, "fetch_page", "tools:execute", "before")
    page = html(client.get(f"{snapshot}/replay").text)
    form = {
        name: one(page, f"#replay-go input[name={name}]").attributes["value"] or "" for name in ("confirm", "_csrf")
    }
    with audited("subprocess.Popen") as started:
        response = client.post(f"{snapshot}/replay", data=form)
    assert response.status_code == 303
    replay = AppState.of(client.app).replays.get(response.headers["location"].rsplit("/", 1)[1])  # type: ignore[arg-type]
    assert replay is not None
    # Starting a process blocks until it runs: in a worker thread, where no event loop is held up.
    assert started == [("subprocess.Popen", False)]
    replay.process.kill()  # it streams to http://testserver, which only this test client answers
    replay.process.wait(30)


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
    assert "props = {'topic': 'interop'}" in one(page, "#replay-python").text()
    assert not page.css("#replay-node")
