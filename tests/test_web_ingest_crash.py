"""SIGKILL during ingest, against a real `devtool serve`: killed while two writers post batches,
restarted on the same DuckDB file, every acknowledged batch is found whole, no batch is found in
part, and the pages answer after each restart. `bench/soak.py` runs more rounds."""

from __future__ import annotations

from pathlib import Path

from testkit.crash import kill_during_ingest


def test_killed_mid_ingest_it_keeps_every_acknowledged_batch_whole_and_restarts(tmp_path: Path) -> None:
    report = kill_during_ingest(tmp_path / "crash.duckdb", tmp_path / "serve.log", rounds=3)
    assert report.rounds == 3
    assert report.acknowledged_batches >= 3, report  # something was in flight to lose
    assert report.lost == []
    assert report.partial == []
    assert report.pages_down == []
