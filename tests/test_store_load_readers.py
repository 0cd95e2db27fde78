"""A JSONL file read by several readers at once: the same events, ids in the file's order, all or nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from devtool.store import BadLinesError, Store, load_file
from devtool.store.event_sql import file_relation, insert_events
from devtool.store.loaders.traces import _cuts
from tests.conftest import Trace


def big_run() -> Trace:
    """A run of about 4.5 MB: enough for a file to be cut between readers."""
    trace = Trace()
    root = trace.start("runWith")
    for index in range(3000):
        agent = trace.start("agent", root, agentId="worker", callId=f"root/agent:worker:{index}", note="z" * 500)
        trace.end(agent, success=True)
    trace.end(root, success=True)
    return trace


def stored(store: Store) -> dict[str, list[Any]]:
    return {
        "events": store.query("SELECT * EXCLUDE (source_id) FROM events ORDER BY event_id"),
        "spans": store.query("SELECT * FROM spans ORDER BY trace_id, span_id"),
        "runs": store.query("SELECT * EXCLUDE (source_id) FROM runs ORDER BY trace_id"),
        "words": store.query("SELECT * FROM search_terms ORDER BY ALL"),
    }


def with_threads(path: Path, threads: int) -> Store:
    store = Store(path)
    with store.writer() as conn:
        conn.execute(f"SET threads = {threads}")
    return store


def test_readers_cut_at_any_lines_give_each_event_its_place_in_the_file(tmp_path: Path) -> None:
    trace = Trace()
    for index in range(5):
        trace.span("custom:span", name=f"tick {index}")
    texts = [orjson.dumps(event) for event in trace.events]
    # Blank lines and CRLF endings are no events: the ids of the events a reader keeps skip none.
    path = tmp_path / "ten.jsonl"
    path.write_bytes(b"\r\n".join(texts[:4]) + b"\r\n\r\n" + b"\n".join(texts[4:]) + b"\n\n")
    for number, cuts in enumerate([(), (3,), (1, 2, 9), (4, 40)]):
        store = Store(tmp_path / f"{number}.duckdb")
        try:
            with store.transaction() as conn:
                relation = file_relation("newline_delimited", 1 << 20, cuts)
                count, _, _ = insert_events(conn, relation, 1, {"path": str(path)}, derive_spans=False, unordered=True)
            found = store.query("SELECT event_id, body FROM events ORDER BY event_id")
        finally:
            store.close()
        assert count == len(texts), cuts
        assert [event_id for event_id, _ in found] == list(range(1, len(texts) + 1)), cuts
        assert [orjson.loads(body) for _, body in found] == [orjson.loads(text) for text in texts], cuts


def test_a_file_read_by_two_readers_stores_what_one_reader_stores(tmp_path: Path) -> None:
    path = big_run().write(tmp_path / "big.jsonl")
    assert len(_cuts(str(path), 2)) == 1  # two readers share it
    one, two = with_threads(tmp_path / "one.duckdb", 1), with_threads(tmp_path / "two.duckdb", 2)
    try:
        assert load_file(one, path).events == load_file(two, path).events == 6002
        assert stored(one) == stored(two)
        ids = [row[0] for row in stored(two)["events"]]
        assert ids == list(range(1, 6003))
    finally:
        one.close()
        two.close()


@pytest.mark.parametrize("where", ["first", "second"])
def test_a_bad_line_in_either_readers_share_refuses_the_file_whole(tmp_path: Path, where: str) -> None:
    path = big_run().write(tmp_path / "big.jsonl")
    text = path.read_bytes().split(b"\n")
    bad = 100 if where == "first" else len(text) - 100
    text[bad] = b'{"type": "agent:start", "timestamp": "soon"}'
    path.write_bytes(b"\n".join(text))
    store = with_threads(tmp_path / "s.duckdb", 2)
    try:
        with pytest.raises(BadLinesError) as refused:
            load_file(store, path)
        assert refused.value.problems[0].line == bad + 1
        assert store.query("SELECT count(*) FROM events") == [(0,)]
        with store.writer() as conn:  # the failed insert left the writer keeping insertion order again
            assert conn.execute("SELECT current_setting('preserve_insertion_order')").fetchall() == [(True,)]
        assert load_file(store, big_run().write(tmp_path / "good.jsonl")).events == 6002
    finally:
        store.close()
