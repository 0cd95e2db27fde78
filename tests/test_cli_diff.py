"""`devtool diff` and short run ids on the command line, as real processes, on a store and beside a
real `devtool serve` that owns it."""

from __future__ import annotations

import json
from pathlib import Path

from devtool.store import Store
from tests.conftest import DevtoolRunner, running_serve
from tests.test_actions_compare import TOOL, program
from tests.web_runs import record


def three_runs(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A store with a run, the same program again, and one whose tool answered differently."""
    db = tmp_path / "runs.duckdb"
    store = Store(db)
    try:
        a = record(store, tmp_path, program("cats sleep all day"), name="a")
        same = record(store, tmp_path, program("cats sleep all day"), name="same")
        other = record(store, tmp_path, program("cats hunt all night"), name="other")
    finally:
        store.close()
    return db, a, same, other


def test_diff_exits_1_with_the_first_divergence_and_0_for_the_same_runs(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, a, same, other = three_runs(tmp_path)
    # By the short ids the UI shows.
    differ = devtool("diff", a[:12], other[:12], "--db", str(db))
    assert differ.returncode == 1, differ.stderr
    lines = differ.stdout.splitlines()
    assert lines[0].startswith("differ: ")
    assert lines[1] == f"first divergence: the output of tool fetch_page in researcher #0  ({TOOL})"
    assert lines[2] == "  output.text: cats [-sleep-]{+hunt+} all [-day-]{+night+}"
    assert "downstream:" in lines
    assert "  researcher #0 (output, memory)" in lines

    agree = devtool("diff", a, same, "--db", str(db))
    assert agree.returncode == 0, agree.stderr
    assert agree.stdout.startswith(f"same: runs {a[:12]} and {same[:12]} agree in all ")

    as_json = devtool("diff", a[:8], other[:8], "--db", str(db), "--json")
    assert as_json.returncode == 1
    answer = json.loads(as_json.stdout)
    assert answer["firstDivergence"]["callId"] == TOOL
    assert (answer["a"], answer["b"]) == (a, other)


def test_diff_and_export_refuse_an_unknown_or_ambiguous_short_id(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, a, _, _ = three_runs(tmp_path)
    missing = devtool("diff", a, "0000dead", "--db", str(db))
    assert missing.returncode == 2
    assert "no run '0000dead'" in missing.stderr
    # Ids are random hex: a one-character prefix is too short to name a run, whatever it starts.
    short = devtool("export", a[:1], "--db", str(db))
    assert short.returncode == 2
    assert "first 4 or more characters" in short.stderr


def test_export_and_diff_take_short_ids_beside_a_running_server(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, a, same, other = three_runs(tmp_path)
    with running_serve(db):
        exported = devtool("export", a[:12], "--db", str(db), "-o", "a.jsonl.gz")
        assert exported.returncode == 0, exported.stderr
        assert "exporting through it" in exported.stderr
        assert (tmp_path / "a.jsonl.gz").stat().st_size > 0
        differ = devtool("diff", a[:12], other[:12], "--db", str(db))
        assert differ.returncode == 1, differ.stderr
        assert f"({TOOL})" in differ.stdout.splitlines()[1]
        assert devtool("diff", a[:12], same[:12], "--db", str(db)).returncode == 0
        unknown = devtool("export", "0000dead", "--db", str(db))
        assert unknown.returncode == 2
        assert "no run '0000dead'" in unknown.stderr
