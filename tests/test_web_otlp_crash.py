"""SIGKILL during OTLP ingest with bad spans mixed in, against a real `devtool serve` reading requests
in a worker process (issue 42): every acknowledged request is stored but for its bad spans, which its
answer refused one by one; none is found in part; no answer is a 5xx. `bench/soak.py --otlp-rounds`
runs more rounds."""

from __future__ import annotations

from pathlib import Path

from testkit.otlp_crash import kill_during_otlp_ingest


def test_killed_mid_otlp_ingest_with_bad_spans_it_keeps_every_good_span_acknowledged(tmp_path: Path) -> None:
    report = kill_during_otlp_ingest(tmp_path / "otlp.duckdb", tmp_path / "serve.log", rounds=2, size=60, bad=4)
    assert report.rounds == 2
    assert report.acknowledged_batches >= 2, report  # something was in flight to lose
    assert report.refused_spans == 4 * report.acknowledged_batches
    assert report.server_errors == []
    assert report.wrong_answers == []
    assert report.lost == []
    assert report.partial == []
    assert report.pages_down == []
