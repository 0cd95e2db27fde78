"""A `with devtool.record(name, entrypoint=main)` block, recorded in a process of its own with
`install()` only (a Pydantic AI agent and its tool against the fake provider), replayed as the DevTool's
Replay runs it (`devtool run MODULE:FUNC --only-replayable --snapshot --name`, the arguments of its
`ReplayPlan`): the replay asks nothing, runs no tool, is called as the recorded run, and compares equal
with it, whether the block set the run's output (`run.result`) or left it without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from devtool.actions.compare import compare
from devtool.actions.replay_by_hand import by_hand
from devtool.actions.replay_runner import ReplayPlan, check_entrypoint
from devtool.core.debugger import restore_snapshot
from devtool.store import Store
from devtool.store.load import load_file
from devtool.store.queries.run_meta import run_start
from testkit.fake_provider import FakeProvider
from tests.conftest import REPO
from tests.framework_agents import ANSWER, script
from tests.test_instrument_frameworks import MODULE as DECORATED

# The trip agent of the `@devtool.record` test, its `main` a plain replayable function here.
MODULE = DECORATED.replace('@devtool.record("trip")\n', "")
assert "@devtool.record" not in MODULE

RECORD = """
import sys
import devtool
from trip import main

with devtool.record("trip", entrypoint=main, to="first.jsonl") as run:
    answer = main()
    if sys.argv[1] == "set":
        run.result = answer
"""


@pytest.mark.parametrize("output", ["set", "unset"])
def test_a_record_block_replays_under_its_name_and_compares_equal(
    output: str, tmp_path: Path, fake_provider: FakeProvider, store: Store
) -> None:
    (tmp_path / "trip.py").write_text(MODULE)
    (tmp_path / "record_trip.py").write_text(RECORD)
    script(fake_provider)
    env = {**os.environ, **fake_provider.env(api_key="sk-frameworks-0123456789"), "PYTHONPATH": str(REPO)}

    def python(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    python("record_trip.py", output)
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\n"
    assert fake_provider.count() == 2
    (first,) = load_file(store, tmp_path / "first.jsonl").traces
    start = run_start(store, first)
    assert (start.metadata["entrypoint"], start.name) == ("trip:main", "trip")

    # What the Replay button runs: the plan made from the recorded run's start (its name too).
    plan = ReplayPlan(
        "s" * 64, first, start.metadata["entrypoint"], start.props, check_entrypoint("trip:main", tmp_path), start.name
    )
    argv = plan.argv("http://127.0.0.1:1", "r1")
    assert "--name=trip" in argv
    assert by_hand("trip:main", start.props, "http://x/s.json", "http://x", start.name).shell.endswith("--name trip")
    events = [orjson.loads(line) for line in (tmp_path / "first.jsonl").read_bytes().splitlines()]
    (tmp_path / "snapshot.json").write_bytes(orjson.dumps(restore_snapshot(events)))
    replay_args = [a for a in argv[3:] if not a.startswith(("--to=", "--snapshot=", "--props="))]
    assert (
        orjson.loads(python(*argv[1:3], *replay_args, "--snapshot", "snapshot.json", "--trace", "again.jsonl"))
        == ANSWER
    )
    assert fake_provider.count() == 2
    assert (tmp_path / "tool_runs.txt").read_text() == "Lisbon\n"

    (again,) = load_file(store, tmp_path / "again.jsonl").traces
    comparison = compare(store, first, again)
    assert comparison.same, comparison.differences
    roots = store.query("SELECT name FROM spans WHERE trace_id IN (?, ?) AND kind = 'runWith'", [first, again])
    assert [name for (name,) in roots] == ["trip", "trip"]
    ends = store.query(
        "SELECT json_extract(body, '$.result') FROM events WHERE trace_id IN (?, ?) AND type = 'runWith:end' "
        "ORDER BY trace_id = ?",
        [first, again, again],
    )
    recorded_output = orjson.dumps(ANSWER).decode() if output == "set" else "null"
    assert [value for (value,) in ends] == [recorded_output, orjson.dumps(ANSWER).decode()]
