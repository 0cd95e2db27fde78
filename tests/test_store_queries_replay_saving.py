"""What a replay saved, from the store: the calls its journal served, and what they cost when recorded."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from devtool.core import MemorySink, run_with
from devtool.core.debugger import restore_snapshot
from devtool.demo import research
from devtool.store import Store, load_file
from devtool.store.live_append import append_events
from devtool.store.queries import get_run
from devtool.store.queries.replay_saving import _saving, _serves, replay_saving


def recorded(path: Path, snapshot: dict[str, Any] | None = None, **metadata: Any) -> list[dict[str, Any]]:
    """The research demo run (a replay of `snapshot` when given), written to `path`; its events."""
    sink = MemorySink()
    asyncio.run(run_with(lambda: research.main({}), sinks=[sink], snapshot=snapshot, metadata=metadata or None))
    path.write_text("".join(json.dumps(event) + "\n" for event in sink.events))
    return sink.events  # type: ignore[return-value]


def test_a_fully_cached_replay_cost_nothing_and_saved_the_recorded_cost(tmp_path: Path) -> None:
    original = recorded(tmp_path / "original.jsonl")
    original_id = original[0]["trace"]["traceId"]
    replay = recorded(
        tmp_path / "replay.jsonl", dict(restore_snapshot(original)), replay={"originalTraceId": original_id}
    )
    store = Store(tmp_path / "s.duckdb")
    try:
        for name in ("original.jsonl", "replay.jsonl"):
            load_file(store, tmp_path / name)
        calls = [e for e in original if e["type"] == "model:call:end"]
        tools = sum(len(e["toolResults"]) for e in original if e["type"] == "tools:execute:end")
        saving = replay_saving(store, get_run(store, replay[0]["trace"]["traceId"]))
        assert saving is not None
        assert saving.served_prompts == len(calls) == 11
        assert saving.served_tools == tools
        assert saving.served_calls == len(calls) + tools
        assert saving.saved_micro_usd == pytest.approx(sum(e["costs"]["micro_usd"] for e in calls))
        assert saving.unknown == 0
        assert saving.model_calls == 0  # nothing called: it cost $0
        assert replay_saving(store, get_run(store, original_id)) is None  # the original served nothing
        # A replay not printed (an older store's) counts its served tools from its events, alike.
        with store.transaction() as conn:
            conn.execute("DELETE FROM printed_runs WHERE trace_id = ?", [replay[0]["trace"]["traceId"]])
        # Kept while the store has no other event (and the run the same summary): cleared, the run unprinted.
        _saving.cache_clear()
        _serves.cache_clear()
        assert replay_saving(store, get_run(store, replay[0]["trace"]["traceId"])) == saving
    finally:
        store.close()


def test_a_served_turn_whose_recording_is_not_stored_is_unknown(tmp_path: Path) -> None:
    original = recorded(tmp_path / "original.jsonl")
    replay = recorded(tmp_path / "replay.jsonl", dict(restore_snapshot(original)))
    store = Store(tmp_path / "s.duckdb")
    try:
        load_file(store, tmp_path / "replay.jsonl")
        saving = replay_saving(store, get_run(store, replay[0]["trace"]["traceId"]))
        assert saving is not None
        assert saving.saved_micro_usd is None
        assert saving.unknown == saving.served_prompts == 11
    finally:
        store.close()


def test_a_live_replay_shows_its_saving_once_it_has_served_a_call(tmp_path: Path) -> None:
    """What a run served is kept by its summary: a live replay that served nothing yet, then its served
    turns, is asked again as its summary changes (the header of a live run asks on every refresh)."""
    original = recorded(tmp_path / "original.jsonl")
    replay = recorded(tmp_path / "replay.jsonl", dict(restore_snapshot(original)))
    replay_id = replay[0]["trace"]["traceId"]
    first_served = next(i for i, e in enumerate(replay) if e["type"] == "turn:end" and e.get("cache") is True)
    store = Store(tmp_path / "s.duckdb")
    try:
        load_file(store, tmp_path / "original.jsonl")
        append_events(store, replay[:first_served])
        before = get_run(store, replay_id)
        assert replay_saving(store, before) is None  # nothing served yet
        append_events(store, replay[first_served:])
        after = get_run(store, replay_id)
        saving = replay_saving(store, after)
        assert saving is not None
        assert saving.served_prompts == 11
        assert replay_saving(store, before) is None  # the run as it was: kept
    finally:
        store.close()
