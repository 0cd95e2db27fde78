"""The process run `install()` starts (`DEVTOOL_TRACE` set) and `devtool.record` in it, in real child
processes against the fake provider: a `@devtool.record` function called in the process run is a run of
its own (its name, entrypoint and output) that replays with no request and no tool run, while the
process run keeps what happened before and after it; and `devtool run` of a module that calls
`install()` at import time records one run, the command's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson

from devtool.core.debugger import restore_snapshot
from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider

ANSWER = "Lisbon is sunny: walk the Alfama."
SCRIPT = """
import openai
import devtool
import devtool.instrument

devtool.instrument.install()


@devtool.tool
def weather(city: str) -> str:
    with open("tool_runs.txt", "a") as runs:
        runs.write(city + "\\n")
    return f"{city}: sunny"


def ask(text):
    answer = openai.OpenAI().chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": text}]
    )
    return answer.choices[0].message.content


@devtool.record("trip")
def main():
    return ask("Plan a day: " + weather("Lisbon"))


if __name__ == "__main__":
    ask("Warm up")
    print(main())
    weather("Porto")
"""


def runs_in(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each run's events in `path`, by the name its `runWith:start` gives it."""
    events = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    names = {e["trace"]["traceId"]: e["name"] for e in events if e["type"] == "runWith:start"}
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        runs.setdefault(names[event["trace"]["traceId"]], []).append(event)
    return runs


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


def tool_cities(events: list[dict[str, Any]]) -> list[str]:
    return [city for city in ("Lisbon", "Porto") for e in events if e["type"] == "tools:execute:end" and city in str(e)]


def project(tmp_path: Path, fake: FakeProvider) -> dict[str, str]:
    (tmp_path / "trip_script.py").write_text(SCRIPT)
    fake.reply({"text": "Warm."}, last="Warm up", times=None)
    fake.reply({"text": ANSWER}, last="Plan a day", times=None)
    env = {k: v for k, v in os.environ.items() if k not in ("DEVTOOL_URL", "DEVTOOL_TRACE", "DEVTOOL_TOKEN")}
    return child_env({**env, **fake.env()})


def python(tmp_path: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def record_script(tmp_path: Path, fake: FakeProvider) -> tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    env = project(tmp_path, fake)
    trace = tmp_path / "process.jsonl"
    assert python(tmp_path, {**env, "DEVTOOL_TRACE": str(trace)}, "trip_script.py") == ANSWER + "\n"
    assert fake.count() == 2
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\nPorto\n"
    return env, runs_in(trace)


def test_a_record_function_in_the_process_run_is_a_run_of_its_own(tmp_path: Path, fake_provider: FakeProvider) -> None:
    _, runs = record_script(tmp_path, fake_provider)
    assert sorted(runs) == ["trip", "trip_script"]
    trip, process = runs["trip"], runs["trip_script"]
    assert trip[0]["metadata"]["entrypoint"] == "trip_script:main"
    assert trip[-1]["type"] == "runWith:end"
    assert trip[-1]["result"] == ANSWER
    assert kinds(trip).count("turn:end") == 1
    assert tool_cities(trip) == ["Lisbon"]
    # The process run holds the request before the record function and the tool call after it.
    assert "entrypoint" not in process[0]["metadata"]
    assert kinds(process)[-1] == "runWith:end"
    assert kinds(process).count("turn:end") == 1
    assert tool_cities(process) == ["Porto"]


def test_the_record_functions_run_replays_with_no_request_and_no_tool_run(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    env, runs = record_script(tmp_path, fake_provider)
    (tmp_path / "snapshot.json").write_bytes(orjson.dumps(restore_snapshot(runs["trip"])))
    entrypoint = runs["trip"][0]["metadata"]["entrypoint"]
    replayed = python(
        tmp_path, env, "-m", "devtool", "run", entrypoint, "--snapshot", "snapshot.json", "--trace", "again.jsonl"
    )
    assert json.loads(replayed) == ANSWER
    assert fake_provider.count() == 2  # served from the snapshot
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\nPorto\n"  # the tool did not run again
    assert list(runs_in(tmp_path / "again.jsonl")) == ["trip"]


def test_devtool_run_of_a_module_that_installs_at_import_records_only_its_own_run(
    tmp_path: Path, fake_provider: FakeProvider
) -> None:
    env = project(tmp_path, fake_provider)
    trace = tmp_path / "run.jsonl"
    out = python(
        tmp_path,
        {**env, "DEVTOOL_TRACE": str(trace)},
        "-m",
        "devtool",
        "run",
        "trip_script:main",
        "--trace",
        str(trace),
    )
    assert json.loads(out) == ANSWER
    runs = runs_in(trace)
    assert list(runs) == ["trip"]  # no process run beside the command's
    trip = runs["trip"]
    assert trip[0]["metadata"]["entrypoint"] == "trip_script:main"
    assert trip[-1]["result"] == ANSWER
    assert kinds(trip).count("turn:end") == 1
    assert tool_cities(trip) == ["Lisbon"]
    assert fake_provider.count() == 1
