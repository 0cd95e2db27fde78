"""A journal on a time axis: marks bounded per column, invocations paired with their runs, positions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtool.store import NotFoundError, Store, load_file
from devtool.store.queries.journal_lane import entry_position, journal_invocations, journal_marks, journal_span
from tests.conftest import CORPUS, Trace

BILLING = CORPUS / "promptise" / "billing-ops.journal.jsonl"


def write(path: Path, entries: list[tuple[str, str, dict[str, object]]], process: str = "p") -> Path:
    lines = [
        json.dumps(
            {
                "entry_id": f"e{i}",
                "process_id": process,
                "timestamp": stamp,
                "entry_type": entry_type,
                "data": data,
            }
        )
        for i, (stamp, entry_type, data) in enumerate(entries)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_marks_are_one_per_type_and_column(store: Store, tmp_path: Path) -> None:
    entries = [
        (f"2026-07-01T00:00:00.{i:03d}+00:00", "context_update" if i % 2 else "tool_call", {}) for i in range(1000)
    ]
    load_file(store, write(tmp_path / "j.jsonl", entries))
    span = journal_span(store, "p")
    assert (span.entries, span.types, span.end_ms - span.start_ms) == (1000, 2, 999.0)
    marks = journal_marks(store, "p", start_ms=span.start_ms, end_ms=span.end_ms, buckets=10)
    assert len(marks) == 20
    assert sum(m.count for m in marks) == 1000
    assert {m.column for m in marks} == set(range(10))
    assert all(m.entry_id is None and m.data is None for m in marks)
    fine = journal_marks(store, "p", start_ms=span.start_ms, end_ms=span.start_ms + 4, buckets=100)
    assert [(m.entry_id, m.entry_type, m.count) for m in fine] == [
        ("e0", "tool_call", 1),
        ("e1", "context_update", 1),
        ("e2", "tool_call", 1),
        ("e3", "context_update", 1),
        ("e4", "tool_call", 1),
    ]
    with pytest.raises(ValueError, match="buckets must be between"):
        journal_marks(store, "p", start_ms=0, end_ms=1, buckets=0)


def test_invocations_pair_by_trace_id_with_the_run_when_loaded(store: Store, tmp_path: Path) -> None:
    run = Trace(start_ms=1_782_864_000_010.0)  # 2026-07-01T00:00:00.010Z
    root = run.start("agent", agentId="worker")
    run.end(root, at=1_782_864_000_090.0)
    load_file(store, run.write(tmp_path / "run.jsonl"))
    entries = [
        ("2026-07-01T00:00:00.000+00:00", "trigger_event", {}),
        ("2026-07-01T00:00:00.005+00:00", "invocation_start", {"invocation": 1, "trace_id": run.trace_id}),
        (
            "2026-07-01T00:00:00.100+00:00",
            "invocation_result",
            {"invocation": 1, "trace_id": run.trace_id, "success": False},
        ),
        ("2026-07-01T00:00:00.200+00:00", "invocation_start", {"invocation": 2, "trace_id": "0" * 32}),
    ]
    load_file(store, write(tmp_path / "j.jsonl", entries))
    first, second = journal_invocations(store, "p")
    assert (first.trace_id, first.number, first.start_entry_id, first.result_entry_id) == (run.trace_id, 1, "e1", "e2")
    assert (first.success, first.run_name, first.run_status) == (False, "worker", "completed")
    assert first.end_ms - first.start_ms == pytest.approx(95.0)
    assert (first.first_ms, first.last_ms) == (first.start_ms, first.end_ms)  # the run lies within its entries
    assert (second.number, second.result_entry_id, second.success, second.run_name) == (2, None, None, None)
    assert (first.run_spans, second.run_spans) == (1, None)


def test_entry_position(store: Store) -> None:
    load_file(store, BILLING)
    assert entry_position(store, "billing-ops", "e01") == 0
    assert entry_position(store, "billing-ops", "e10") == 9
    with pytest.raises(NotFoundError, match="no entry 'zz' in process journal 'billing-ops'"):
        entry_position(store, "billing-ops", "zz")
    with pytest.raises(NotFoundError, match="no process journal 'nope'"):
        journal_span(store, "nope")
