"""A lake run's first paint (issue 44), with real `devtool serve` child processes and a real PostgreSQL
catalog: what the first answer was made from (the run's head, here; in the lake, one small Parquet row
group of its events read for it) and that it shows what a local page of the same events shows."""

from __future__ import annotations

from pathlib import Path

import orjson

from devtool.store.lake import HEAD
from devtool.store.lake.tables import EVENTS_ROW_GROUP
from testkit.postgres import Lakes
from testkit.served import start

from .conftest import DevtoolRunner
from .test_lake_servers import LakeReader, _published, http, serve, wait_for

# A run of several of the lake's row groups of events.
SPANS = EVENTS_ROW_GROUP * 3 // 4


def workspace(page: bytes) -> bytes:
    """The page below its header (the header says how much of a lake run is here, and the lake's status)."""
    at = page.find(b'<div id="workspace"')
    assert at > 0, page[:500]
    return page[at:]


def test_a_lake_runs_first_page_is_its_head_read_from_one_row_group(
    lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner
) -> None:
    catalog, data = lakes.new()
    events, trace = _published(devtool, tmp_path, catalog, data, "painted", SPANS)
    head = tmp_path / "head.jsonl"
    head.write_bytes(b"\n".join(orjson.dumps(event) for event in events[:HEAD]) + b"\n")

    # What the head's read reads: the lake writes a run's events in row groups of EVENTS_ROW_GROUP rows,
    # in the publisher's order, so the ids of the run's first HEAD events are in the first group alone.
    lake = LakeReader(catalog)
    try:
        files = [row[0] for row in lake.rows("SELECT data_file FROM ducklake_list_files('lake', 'events')")]
        groups = lake.conn.execute(
            "SELECT row_group_id, row_group_num_rows, stats_min::BIGINT, stats_max::BIGINT FROM parquet_metadata(?) "
            "WHERE path_in_schema = 'event_id' ORDER BY 3",
            [files],
        ).fetchall()
        cut = lake.one(f"SELECT max(event_id) FROM (SELECT event_id FROM lake.events ORDER BY 1 LIMIT {HEAD})")
    finally:
        lake.conn.close()
    assert sum(rows for _, rows, _, _ in groups) == len(events)
    assert len(groups) >= 2
    assert max(rows for _, rows, _, _ in groups) <= EVENTS_ROW_GROUP
    assert [rows for _, rows, low, _ in groups if low <= cut] == [EVENTS_ROW_GROUP]

    local = start(tmp_path / "local.duckdb", str(head), log=tmp_path / "local.log")
    whole = start(tmp_path / "whole.duckdb", str(tmp_path / "run.jsonl"), log=tmp_path / "whole.log")
    reader = serve(tmp_path / "reader.duckdb", catalog, data, "reader")
    try:
        status, page, headers = http(f"{reader.url}runs/{trace}")
        assert status == 200, page[:500]
        # When it answered, the head was here and nothing more: the page is a page of those events.
        assert headers["Lake-Copied"] == f"{HEAD}/{len(events)}"
        assert f'{HEAD:,} <span class="muted">of {len(events):,}</span>'.encode() in page
        status, local_page, _ = http(f"{local.url}runs/{trace}")
        assert status == 200, local_page[:500]
        assert workspace(page) == workspace(local_page)  # the same spans, timeline, tree and detail

        def copied() -> bytes | None:
            status, page, headers = http(f"{reader.url}runs/{trace}")
            return page if status == 200 and "Lake-Copied" not in headers else None

        page = wait_for("the rest of the run", copied)
        assert workspace(page) == workspace(http(f"{whole.url}runs/{trace}")[1])
    finally:
        for server in (local, whole, reader):
            server.stop()
    for name in ("local", "whole", "reader"):
        assert "Traceback" not in (tmp_path / f"{name}.log").read_text(), name
