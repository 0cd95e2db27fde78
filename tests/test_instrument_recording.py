"""`devtool.record` and the environment switches: an existing script recorded by one added line, as a
real process, and replayed by `devtool run` from its recorded entrypoint with no request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

import devtool
from devtool.core import MemorySink
from devtool.core.debugger import restore_snapshot
from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider
from tests.conftest import running_serve
from tests.instrument_agents import script
from tests.test_instrument_programs import page_names
from tests.test_web_replay import http
from tests.web_runs import html, one

SCRIPT = """
import openai
import devtool
import devtool.instrument
from devtool.core import replayable

devtool.instrument.openai()


@replayable
@devtool.record("support-bot", to="trace.jsonl")
def main():
    client = openai.OpenAI()
    answer = client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
    return answer.choices[0].message.content


if __name__ == "__main__":
    print(main())
"""


def events(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_a_recorded_script_replays_from_its_entrypoint(tmp_path: Path, fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "Hello from the model."})
    (tmp_path / "support_bot.py").write_text(SCRIPT)
    env = child_env({**os.environ, **fake_provider.env()})
    done = subprocess.run(
        [sys.executable, "support_bot.py"], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the model.\n"
    recorded = events(tmp_path / "trace.jsonl")
    start = recorded[0]
    assert start["type"] == "runWith:start"
    assert start["name"] == "support-bot"
    assert start["metadata"]["entrypoint"] == "support_bot:main"
    assert fake_provider.count() == 1

    snapshot = tmp_path / "snapshot.json"
    snapshot.write_bytes(orjson.dumps(restore_snapshot(recorded)))
    (tmp_path / "trace.jsonl").unlink()
    replay = subprocess.run(
        [
            sys.executable,
            "-m",
            "devtool",
            "run",
            "support_bot:main",
            "--only-replayable",
            "--snapshot",
            str(snapshot),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout) == "Hello from the model."
    assert fake_provider.count() == 1  # served from the snapshot: no request
    assert not (tmp_path / "trace.jsonl").exists()  # the decorated main joined devtool run's run


def test_install_with_devtool_trace_records_the_whole_process(tmp_path: Path, fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "recorded"})
    script = "import devtool.instrument, openai\ndevtool.instrument.install()\n" + (
        "print(openai.OpenAI().chat.completions.create(model='gpt-4.1-mini', messages=[{'role': 'user', "
        "'content': 'hi'}]).choices[0].message.content)\n"
    )
    (tmp_path / "plain_script.py").write_text(script)
    env = child_env({**os.environ, **fake_provider.env(), "DEVTOOL_TRACE": str(tmp_path / "process.jsonl")})
    done = subprocess.run([sys.executable, "plain_script.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    kinds = [e["type"] for e in events(tmp_path / "process.jsonl")]
    assert kinds[0] == "runWith:start"
    assert kinds[-1] == "runWith:end"
    assert "turn:end" in kinds
    assert events(tmp_path / "process.jsonl")[0]["name"] == "plain_script"


def test_a_block_is_one_run_and_a_nested_record_joins_it(tmp_path: Path) -> None:
    sink = MemorySink()

    @devtool.tool
    def step(n: int) -> int:
        return n + 1

    with devtool.record("outer", to=[sink, tmp_path / "block.jsonl"]) as outer:
        step(1)
        with devtool.record("inner", to=tmp_path / "never.jsonl") as inner:
            step(2)
    assert inner.trace_id is None
    assert not (tmp_path / "never.jsonl").exists()
    trace_ids = {e["trace"]["traceId"] for e in sink.events}
    assert trace_ids == {outer.trace_id}
    assert [e["type"] for e in sink.events].count("tools:execute:end") == 2
    assert len(events(tmp_path / "block.jsonl")) == len(sink.events)


AGENT = """
import json
import openai
import devtool
import devtool.instrument
from devtool.core import replayable

devtool.instrument.openai()
SPEC = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [{"type": "function", "function": {"name": n, "parameters": SPEC}} for n in ("weather", "hotels")]


def ran(what):
    with open("side-effects.log", "a") as log:
        log.write(what + "\\n")


@devtool.tool
def weather(city):
    ran("weather")
    return city + ": sunny"


@devtool.tool
def hotels(city):
    ran("hotels")
    return ["Ritz"]


@devtool.agent
def researcher(question):
    client = openai.OpenAI()
    messages = [{"role": "user", "content": question}]
    while True:
        answer = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS)
        message = answer.choices[0].message
        if not message.tool_calls:
            return message.content
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            output = {"weather": weather, "hotels": hotels}[call.function.name](**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(output)})


@replayable
@devtool.record("lisbon-planner")
def main():
    return researcher("Plan a day in Lisbon")


if __name__ == "__main__":
    print(main())
"""


@pytest.fixture
def project(tmp_path: Path, fake_provider: FakeProvider) -> Iterator[tuple[Path, str, dict[str, str]]]:
    """A project folder with an agent script, and a real `devtool serve` started in it (as a user starts
    it to replay their agents) with the SDKs pointed at the fake provider: (folder, URL, environment)."""
    (tmp_path / "lisbon_planner.py").write_text(AGENT)
    env = child_env({**os.environ, **fake_provider.env()})
    with running_serve(tmp_path / "s.db", env=env, cwd=tmp_path) as server:
        yield tmp_path, server.url.rstrip("/"), env


def replay_in_devtool(base: str, snapshot: str) -> str:
    """The DevTool's Replay of `snapshot` (its page's path), confirmed and run to its end: the new run's id."""
    _, confirm, _ = http(f"{base}{snapshot}/replay")
    # What a person's click sends: the page's one-time confirmation and its page token.
    form = dict(re.findall(r'name="(confirm|_csrf)" value="([^"]+)"', confirm))
    assert set(form) == {"confirm", "_csrf"}, confirm
    status, _, headers = http(f"{base}{snapshot}/replay", form)
    assert status == 303
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        _, body, found = http(f"{base}{headers['location']}", headers={"HX-Request": "true"})
        if found.get("HX-Redirect"):
            new_run: str = found["HX-Redirect"].removeprefix("/runs/")
            break
        assert "failed" not in body, body
        time.sleep(0.2)
    else:
        raise AssertionError("the replay never became a run")
    while time.monotonic() < deadline:
        _, header, _ = http(f"{base}/runs/{new_run}/header")
        if "s-completed" in header:
            return new_run
        time.sleep(0.2)
    raise AssertionError(f"the replay {new_run} never completed")


def test_an_instrumented_script_is_rewound_replayed_forked_and_compared_in_the_devtool(
    project: tuple[Path, str, dict[str, str]], fake_provider: FakeProvider
) -> None:
    folder, base, env = project
    script(fake_provider)
    trace = folder / "trace.jsonl"
    done = subprocess.run(
        [sys.executable, "lisbon_planner.py"],
        cwd=folder,
        env={**env, "DEVTOOL_URL": base, "DEVTOOL_TRACE": str(trace)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Stay central.\n"
    assert fake_provider.count() == 3
    log = folder / "side-effects.log"
    assert log.read_text().split() == ["weather", "hotels"]
    recorded = events(trace)
    trace_id = recorded[0]["trace"]["traceId"]
    names = page_names(base, trace_id, {"researcher", "turn 2", "weather", "hotels"})
    assert {"researcher", "turn 0", "turn 1", "turn 2", "weather", "hotels"} <= set(names), names

    # The turn's details: the model, its usage and the answer it gave.
    turns = [e for e in recorded if e["type"] == "turn:start"]
    _, details, _ = http(f"{base}/runs/{trace_id}/select?span={turns[2]['trace']['spanId']}")
    assert "gpt-4.1-mini" in details
    assert "Stay central." in details

    # Rewind before the second request; the DevTool's Replay runs the recorded entrypoint from there.
    status, _, headers = http(
        f"{base}/runs/{trace_id}/rewind", {"span_id": turns[1]["trace"]["spanId"], "anchor": "before"}
    )
    assert status == 303
    rewound = headers["location"]
    replay = replay_in_devtool(base, rewound)
    assert fake_provider.count() == 3 + 2  # the second and third requests, nothing before the cut
    assert log.read_text().split() == ["weather", "hotels", "hotels"]  # weather came from the snapshot
    _, compared, _ = http(f"{base}/compare?a={trace_id}&b={replay}")
    row = one(html(compared), 'li[data-call-id="root/agent:researcher:0"]')
    cached, live = (int(b.text().split()[0]) for b in row.css(".served")[0].css(".badge"))
    assert (cached, live) == (2, 3)  # turn 0 and weather served; turns 1, 2 and hotels live

    # Fork the rewound snapshot without weather's journal entry: its replay calls weather again.
    page = html(http(f"{base}{rewound}")[1])
    (call,) = [i for i in page.css('input[name^="call."]') if i.attributes["value"] == "root/agent:researcher:0"]
    index = str(call.attributes["name"]).removeprefix("call.")
    (box,) = [b for b in page.css("input[name=drop]") if str(b.attributes["value"]).startswith(f"{index}:tool:")]
    form = {str(call.attributes["name"]): "root/agent:researcher:0", "drop": str(box.attributes["value"])}
    status, _, headers = http(f"{base}{rewound}/fork", form)
    assert status == 303
    replay_in_devtool(base, headers["location"])
    assert fake_provider.count() == 5 + 2
    assert log.read_text().split() == ["weather", "hotels", "hotels", "weather", "hotels"]


WHOLE_PROCESS = """
import openai
import devtool.instrument

devtool.instrument.install()
client = openai.OpenAI()
for n in range(3):
    client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": f"q{n}"}])
stream = client.chat.completions.create(
    model="gpt-4.1-mini",
    messages=[{"role": "user", "content": "streamed"}],
    stream=True,
    stream_options={"include_usage": True},
)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices))
"""


def test_a_script_that_exits_normally_leaves_every_deferred_turn_in_its_file_and_in_the_devtool(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    """The run of a whole process (`DEVTOOL_URL` and `DEVTOOL_TRACE` both) ends at the interpreter's exit,
    its last request's bookkeeping still deferred then: nothing is lost on either side, in order."""
    fake_provider.reply({"text": "done", "usage": {"input": 4, "output": 2}}, times=None)
    (tmp_path / "exits.py").write_text(WHOLE_PROCESS)
    with running_serve(tmp_path / "s.db") as server:
        url = server.url.rstrip("/")
        env = child_env(
            {**os.environ, **fake_provider.env(), "DEVTOOL_URL": url, "DEVTOOL_TRACE": str(tmp_path / "t.jsonl")}
        )
        done = subprocess.run(
            [sys.executable, "exits.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "done\n"
        recorded = events(tmp_path / "t.jsonl")
        turns = [(e["type"], e["callId"]) for e in recorded if e["type"] in ("turn:start", "turn:end")]
        assert turns == [(kind, f"root/turn:gpt-4.1-mini:{n}") for n in range(4) for kind in ("turn:start", "turn:end")]
        assert recorded[-1]["type"] == "runWith:end"
        assert recorded[-1]["metrics"]["modelCalls"] == 4
        assert recorded[-1]["metrics"]["totalTokens"] == 4 * 6
        trace_id = recorded[0]["trace"]["traceId"]
        wanted = {"turn 0", "turn 1", "turn 2", "turn 3"}
        assert wanted <= set(page_names(url, trace_id, wanted))


FAILING = """
import openai
import devtool
import devtool.instrument

devtool.instrument.openai()


@devtool.record("failing-bot", to="trace.jsonl")
def main():
    client = openai.OpenAI()
    for n in range(2):
        client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": f"q{n}"}])
    raise RuntimeError("the agent broke after two requests")


main()
"""


def test_an_agent_that_raises_right_after_its_requests_leaves_their_turns_before_its_error(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    fake_provider.reply({"text": "fine", "usage": {"input": 4, "output": 2}}, times=None)
    (tmp_path / "failing.py").write_text(FAILING)
    env = child_env({**os.environ, **fake_provider.env()})
    done = subprocess.run(
        [sys.executable, "failing.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "RuntimeError: the agent broke after two requests" in done.stderr
    recorded = events(tmp_path / "trace.jsonl")
    types = [e["type"] for e in recorded]
    turn = ["turn:start", "model:call:start", "model:call:end", "turn:end"]
    assert types == ["runWith:start", *turn, *turn, "runWith:end"]
    end = recorded[-1]
    assert end["success"] is False
    assert end["error"]["message"] == "the agent broke after two requests"
    assert end["metrics"]["modelCalls"] == 2
