"""A rewind's cut of a run still being copied from the lake: the events up to the cut, all of them, in
the order a store holding the whole run reads them.

While a run is copied (`opening.py`), a span link copies that span's lineage out of order, so the events
before a span may not be here yet, and those that are were not all stored in the publisher's order: a
span's end copied with a link is stored before its children's events of the same instant, copied after.
A snapshot made from that would be of another run. So `prefix_events` first copies the span's lineage (its
cut event), then the events up to the cut the store lacks (through `copy_events`: the exactly-once keys
store each once; the next chunk of the copy skips them likewise), and reads the prefix here in the lake's
order (its `ts`, then the publisher's event ids: the order a store that loaded the whole run reads, by
its `ts` and then its load order), with the same filters `queries.run_events` applies. The store's ids
stay out of order once the copy is done: a run a link copied out of order (`lake_unordered`) is read in
the lake's order for every rewind after, and is never given a frame index (whose walk is in id order).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Literal

import orjson

from devtool.store import list_param
from devtool.store.collector import collector_paused
from devtool.store.database import Store
from devtool.store.lake.attach import Lake
from devtool.store.lake.fetch import copy_events
from devtool.store.lake.opening import asked_first, copied_unordered, open_span

# The lake's events up to the cut (`$cut_ts`, `$cut_id`: the cut event's ts and publisher's id), inclusive.
_PREFIX = "trace_id = $trace AND (ts < $cut_ts OR (ts = $cut_ts AND event_id <= $cut_id))"
# Of them, those not stored here and not in the part copied in order (`$copied`: the opening's cut).
_MISSING = (
    f"{_PREFIX} AND event_id > $copied AND event_key NOT IN (SELECT event_key FROM main.events WHERE trace_id = $trace)"
)


def lake_cut(store: Store, trace_id: str, span_id: str, anchor: Literal["before", "after"]) -> tuple[float, int] | None:
    """The lake's `ts` and publisher's id of the event that cuts run `trace_id` at span `span_id`'s start
    (`before`) or end (`after`), found by its key in the store; None when the store has no such event."""
    column = "end_event_id" if anchor == "after" else "start_event_id"
    rows = store.query(
        f"""SELECT l.ts, l.event_id FROM spans s JOIN events e ON e.event_id = s.{column}
            JOIN devtool_lake.events l ON l.trace_id = e.trace_id AND l.event_key = e.event_key
            WHERE s.trace_id = $trace AND s.span_id = $span""",
        {"trace": trace_id, "span": span_id},
    )
    return (float(rows[0][0]), int(rows[0][1])) if rows else None


def prefix_events(
    store: Store,
    lake: Lake,
    trace_id: str,
    span_id: str,
    anchor: Literal["before", "after"],
    *,
    skip_types: Collection[str] = (),
    drop_fields: Collection[str] = (),
) -> list[dict[str, Any]] | None:
    """Run `trace_id`'s events up to the cut at span `span_id`'s `anchor`, in the lake's order, without
    `skip_types` (never the cut's own event) and the top-level keys `drop_fields`; while the run is being
    copied, those the store lacks are copied from the lake first. None when the run is neither being
    copied nor copied out of order (`copied_unordered`: the store's own order is the run's), or the lake
    has no such cut."""
    copied = store.query("SELECT cut FROM lake_opening WHERE trace_id = ?", [trace_id])
    if not copied and not copied_unordered(store, trace_id):
        return None
    if copied:
        open_span(store, lake, trace_id, span_id)
    cut = lake_cut(store, trace_id, span_id, anchor)
    if cut is None:
        return None
    params: dict[str, object] = {"trace": trace_id, "cut_ts": cut[0], "cut_id": cut[1]}
    if copied:
        missing = {"cut_ts": cut[0], "cut_id": cut[1], "copied": copied[0][0]}
        if store.query(f"SELECT count(*) FROM devtool_lake.events WHERE {_MISSING}", {**missing, "trace": trace_id})[0][
            0
        ]:
            with asked_first(trace_id):  # before the rest's next chunk, as a link's copy
                copy_events(store, lake, trace_id, _MISSING, missing, keys=False)
    body, keep = "e.body", "true"
    if drop_fields:
        # A JSON merge patch that sets a key to null removes it (RFC 7396), as `queries.run_events` does.
        body = "json_merge_patch(e.body, $drop)"
        params["drop"] = orjson.dumps(dict.fromkeys(drop_fields)).decode()
    if skip_types:
        keep = f"(e.type NOT IN (SELECT unnest({list_param.of('skip')})) OR l.event_id = $cut_id)"
        params["skip"] = list_param.values(skip_types)
    rows = store.query(
        f"""SELECT {body} FROM events e
            JOIN (SELECT event_key, ts, event_id FROM devtool_lake.events WHERE {_PREFIX}) l USING (event_key)
            WHERE e.trace_id = $trace AND {keep} ORDER BY l.ts, l.event_id""",
        params,
    )
    with collector_paused():
        return [orjson.loads(row[0]) for row in rows]
