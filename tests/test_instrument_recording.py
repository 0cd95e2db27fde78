"""`devtool.record` and the environment switches: an existing script recorded by one added line, as a
real process, and replayed by `devtool run` from its recorded entrypoint with no request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

import devtool
from devtool.core import MemorySink
from devtool.core.debugger import restore_snapshot
from testkit.fake_provider import FakeProvider

SCRIPT = """
import openai
import devtool
import devtool.instrument

devtool.instrument.openai()


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
    env = {**os.environ, **fake_provider.env()}
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
            "--defined-in-module",
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
    env = {**os.environ, **fake_provider.env(), "DEVTOOL_TRACE": str(tmp_path / "process.jsonl")}
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
