"""The replay page's lines to replay a run by hand, run exactly as a real server shows them: the Python
script with `python`, the shell line pasted into a real `bash -c`, with hostile props that a shell
would run if the line were not quoted. Each replays a real recorded run (a model request to the fake
provider, then a tool with a side effect) from a snapshot cut after the tool: the replay becomes a new
run in the server, with no provider request and no tool run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from devtool.actions.replay_by_hand import by_hand
from testkit.fake_provider import FakeProvider
from tests.conftest import running_serve
from tests.test_web_replay import http
from tests.web_runs import html, one

AGENT = '''\
"""An agent the DevTool will not run itself (nothing here is @replayable)."""
from pathlib import Path

import openai

import devtool
import devtool.instrument

devtool.instrument.openai()
RUNS = Path(__file__).with_name("tool-runs.txt")


@devtool.tool
def note(text: str) -> str:
    with RUNS.open("a") as runs:
        runs.write(text + "\\n")
    return f"noted {len(text)} characters"


def ask(text: str) -> str:
    answer = openai.OpenAI().chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": text}])
    return note(text=answer.choices[0].message.content + " / " + text)


async def main(props):
    return ask(props["q"])


@devtool.record("handy-script")
def script():
    return ask("from the script")
'''


def hostile(marker: Path) -> str:
    """Props text that runs `touch MARKER` in a shell if pasted unquoted (or quoted the naive way)."""
    return f"'; touch {marker}; ' $(touch {marker}) `touch {marker}`"


def child_env(fake: FakeProvider, trace: Path | None = None) -> dict[str, str]:
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    env.update(fake.env())
    if trace is not None:
        env["DEVTOOL_TRACE"] = str(trace)
    return env


def recorded(project: Path, fake: FakeProvider, entry: str, marker: Path) -> Path:
    """A run of `handy:main` (by `devtool run`, with hostile props) or of `handy.script()` (a
    `@devtool.record` script run as a program, with no props): its trace file."""
    trace = project / "recorded.jsonl"
    if entry == "main":
        props = json.dumps({"q": hostile(marker)})
        command = [sys.executable, "-m", "devtool", "run", "handy:main", "--props", props, "--trace", str(trace)]
        done = subprocess.run(command, cwd=project, env=child_env(fake), capture_output=True, text=True, timeout=60)
    else:
        command = [sys.executable, "-c", "import handy; handy.script()"]
        done = subprocess.run(
            command, cwd=project, env=child_env(fake, trace), capture_output=True, text=True, timeout=60
        )
    assert done.returncode == 0, done.stderr
    return trace


def runs_in(base: str) -> set[str]:
    return set(re.findall(r'href="/runs/([0-9a-f]{32})"', http(f"{base}/")[1]))


def replayed_run(base: str, before: set[str]) -> str:
    """The run the replay became, once the server has it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = runs_in(base) - before
        if new:
            return new.pop()
        time.sleep(0.2)
    raise AssertionError("the replay never became a run in the server")


@pytest.mark.parametrize("entry", ["main", "script"])
@pytest.mark.parametrize("how", ["python", "shell"])
def test_the_shown_lines_run_as_shown_and_replay_the_run(
    tmp_path: Path, fake_provider: FakeProvider, entry: str, how: str
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "handy.py").write_text(AGENT)
    marker = tmp_path / "pwned"
    fake_provider.reply({"text": "Written down"})
    trace = recorded(project, fake_provider, entry, marker)
    tool_runs = (project / "tool-runs.txt").read_text()
    assert fake_provider.count() == 1
    trace_id = json.loads(trace.read_text().splitlines()[0])["trace"]["traceId"]
    with running_serve(tmp_path / "s.db", str(trace)) as server:
        base = server.url.rstrip("/")
        page = http(f"{base}/runs/{trace_id}/search?q=note")[1]
        span = re.search(r'data-span="([0-9a-f]{16})"', page)
        assert span, page
        status, _, headers = http(f"{base}/runs/{trace_id}/rewind", {"span_id": span.group(1), "anchor": "after"})
        assert status == 303
        confirm = html(http(f"{base}{headers['location']}/replay")[1])
        assert not confirm.css("#replay-run")  # not @replayable: the DevTool will not run it itself
        python, shell = one(confirm, "#replay-python").text(), one(confirm, "#replay-shell").text()
        assert "props = null" not in python
        assert f"from handy import {entry}" in python
        before = runs_in(base)
        if how == "python":
            (project / "replay_it.py").write_text(python)
            command = [sys.executable, "replay_it.py"]
        else:
            assert shell.startswith(f"devtool run handy:{entry} ")
            command = ["bash", "-c", shell]
        done = subprocess.run(
            command, cwd=project, env=child_env(fake_provider), capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        replay = replayed_run(base, before)
        # The DevTool knows the run for a replay of the original (its header), and that it ran nothing
        # live: its actions say nothing of calls that ran live (no "Ran live: 0 ... · 0 ...").
        summary = html(http(f"{base}/runs/{replay}/actions")[1])
        assert not summary.css("#live-calls")
        header = html(http(f"{base}/runs/{replay}/header")[1])
        assert one(header, "#replay-saving").text().startswith("2 calls served from the snapshot")
    assert not marker.exists()  # the hostile props ran nothing
    assert fake_provider.count() == 1  # the model's answer came from the snapshot...
    assert (project / "tool-runs.txt").read_text() == tool_runs  # ...and so did the tool's
    assert replay != trace_id


@pytest.mark.parametrize(
    "props",
    [
        "'; touch /tmp/x; '",
        {"q": "$(reboot)", "n": [1, 2.5, True, None], "s": "a\"b'c\\d\n\u2028"},
        ["--to=http://evil"],
        "",
    ],
)
def test_the_props_are_one_quoted_word_and_the_same_python_value(props: object) -> None:
    lines = by_hand("agents.billing:main", props, "http://127.0.0.1:1/snapshots/a.json", "http://127.0.0.1:1")
    words = _split(lines.shell)
    assert words[:3] == ["devtool", "run", "agents.billing:main"]
    assert json.loads(words[words.index("--props") + 1]) == props
    namespace: dict[str, object] = {}
    script = lines.python
    exec(script[script.index("props = ") : script.index("call = ")], namespace)
    assert namespace["props"] == props


def _split(shell_line: str) -> list[str]:
    """The words bash makes of `shell_line` (bash itself, not Python's shlex)."""
    done = subprocess.run(
        ["bash", "-c", f'set -- {shell_line}; for w in "$@"; do printf "%s\\0" "$w"; done'],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split("\0")[:-1]


@pytest.mark.parametrize(
    "entrypoint",
    ["os:system; rm -rf ~", "$(reboot):main", "import:main", "a.b:c.d", None, ["x:y"], "dеvtool:main"],
)
def test_an_entrypoint_that_is_not_plain_names_is_never_written_into_the_lines(entrypoint: object) -> None:
    lines = by_hand(entrypoint, None, "http://127.0.0.1:1/s.json", "http://127.0.0.1:1")
    assert not lines.known
    assert "from your_agent import main" in lines.python
    assert lines.shell.startswith("devtool run your_agent:main ")
    compile(lines.python, "replay.py", "exec")
