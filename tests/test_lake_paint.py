"""A lake run's first paint (issue 44), with real `devtool serve` child processes and a real PostgreSQL
catalog: what the first answer was made from (the run's head, here; in the lake, one small Parquet row
group of its events read for it) and that it shows what a local page of the same events shows, but for
what is true of a run copied and not of a run running: its spans whose end is not here yet are
`copying`, never `running` (`store/queries/unended.py`), and it is not refreshed as a live run is."""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from devtool.store.lake import HEAD
from devtool.store.lake.tables import EVENTS_ROW_GROUP
from testkit.lake_runs import run_events, trace_id_of
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


# What a page of a run that is running has and one of a run being copied has not: its panes' refreshes
# on the live stream's messages (the timeline also every 2 s).
LIVE_REFRESH = rb' hx-get="[^"]*" hx-trigger="sse:spans(, every 2s)?"( hx-select="#tree")? hx-swap="outerHTML"'
COPYING_TITLE = (
    b" title=\"not here yet: this run is being copied from the team's lake, and this span's end has not come\""
)


def as_copying(local: bytes) -> bytes:
    """A local page of a run's head as a page of the same head copied from the lake reads: each span whose
    end is not here `copying` where the local page has it `running` (its badge, with a title saying why,
    its tree row, its bar and the bar's title), and no live refresh."""
    page = re.sub(LIVE_REFRESH, b"", local)
    page = page.replace(
        b'<span class="badge s-running">running</span>',
        b'<span class="badge s-copying"' + COPYING_TITLE + b">copying</span>",
    )
    return page.replace(b" s-running", b" s-copying").replace(b' \xc2\xb7 running"', b' \xc2\xb7 copying"')


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
        wait_for("the reader to list the run", lambda: trace.encode() in http(reader.url)[1])
        status, page, headers = http(f"{reader.url}runs/{trace}")
        assert status == 200, page[:500]
        assert b'title="as the team\'s lake lists it">completed</span>' in page
        # When it answered, the head was here and nothing more: the page is a page of those events.
        assert headers["Lake-Copied"] == f"{HEAD}/{len(events)}"
        assert f'{HEAD:,} <span class="muted">of {len(events):,}</span>'.encode() in page
        status, local_page, _ = http(f"{local.url}runs/{trace}")
        assert status == 200, local_page[:500]
        # The same spans, timeline, tree and detail; the spans whose end is not here (the root, the last
        # step started) are running on the local page of those events, copying on the lake's.
        assert workspace(page) == as_copying(workspace(local_page))
        assert b"running" not in workspace(page)
        # The root in the tree (the last step started is past its first page of children), and on the timeline.
        assert workspace(page).count(b'<span class="badge s-copying"' + COPYING_TITLE + b">copying</span>") == 1
        assert re.search(rb'<rect class="bar k-runWith s-copying"', workspace(page))
        assert b"copying" not in workspace(local_page)

        # A run really running on the same server, sent live: running, and its page follows its stream.
        running = run_events("running here", 3)[:-2]  # its root and third step started, neither ended
        status, body, _ = http(f"{reader.url}api/v1/traces", body=orjson.dumps(running))
        assert status == 200, body
        live_id = trace_id_of("running here")
        live_page = wait_for("the running run's spans", lambda: _derived(http(f"{reader.url}runs/{live_id}")[1]))
        assert workspace(live_page).count(b'<span class="badge s-running">running</span>') == 2
        assert b"copying" not in live_page
        assert b'sse-connect="/runs/' + live_id.encode() in live_page
        assert re.search(LIVE_REFRESH, workspace(live_page))

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


def _derived(page: bytes) -> bytes | None:
    """A run page once its spans are derived (a live run's page shows what is derived so far)."""
    return page if b"step 2" in page else None
