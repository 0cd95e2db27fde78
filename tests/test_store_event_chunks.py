"""Id ranges that each hold a chunk of events, whatever gaps the ids leave."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from devtool.store import Store
from devtool.store.event_chunks import event_chunks
from tests.conftest import Trace
from tests.test_store_derive_stream import stage


def stored(tmp_path: Path, events: int, gap: int) -> tuple[Store, list[int]]:
    """A store of `events` events numbered `gap` ids apart (1: dense), and their ids."""
    t = Trace()
    root = t.start("runWith", agentId="")
    for n in range(events - 2):
        t.point("sys:log", root, message=f"line {n}")
    t.end(root, success=True)
    store = Store(tmp_path / "chunks.duckdb")
    with store.transaction() as conn:
        stage(conn, t.events, gap=gap)
    return store, [row[0] for row in store.query("SELECT event_id FROM events ORDER BY event_id")]


@pytest.mark.parametrize("gap", [1, 3, 1000], ids=["dense", "a few apart", "far apart"])
def test_each_range_holds_a_chunk_of_events_and_together_they_hold_each_once(tmp_path: Path, gap: int) -> None:
    store, ids = stored(tmp_path, 100, gap)
    try:
        with store.reader() as conn:
            ranges = list(event_chunks(conn, ids[0], ids[-1], 16))
    finally:
        store.close()
    held = [[i for i in ids if lo <= i <= hi] for lo, hi in ranges]
    assert [i for chunk in held for i in chunk] == ids
    assert all(lo <= hi < next_lo for (lo, hi), (next_lo, _) in itertools.pairwise(ranges))
    assert all(8 <= len(chunk) <= 16 for chunk in held[:-1])
    assert 1 <= len(held[-1]) <= 16
    if gap == 1000:  # ranges of 16 ids would hold one event each
        assert len(ranges) == 7


def test_no_range_past_the_last_id(tmp_path: Path) -> None:
    store, ids = stored(tmp_path, 10, 1)
    try:
        with store.reader() as conn:
            assert list(event_chunks(conn, ids[-1] + 1, ids[-1], 16)) == []
            assert list(event_chunks(conn, ids[0], ids[-1], 100)) == [(ids[0], ids[-1])]
    finally:
        store.close()
