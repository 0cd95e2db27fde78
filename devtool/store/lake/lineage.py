"""A span's events and its ancestors', copied out of the lake without reading the whole run.

The lake's events have no index by span, and span ids are random: `WHERE span_id IN (...)` reads
every row group of the run, at a million events every event's `span_id` and body (1.3-2.0 s). But a
publish writes a run's events in the publisher's order, which is the order they were recorded in, so
each Parquet row group's min/max of `ts` is a short window of the run, and DuckDB skips the row groups
a filter on `ts` rules out (a run published in one transaction is one file of ~9 row groups a
million events). A span's start and end events are at its lake spans row's `start_ts` and `end_ts`
(that is how both are derived), so the lineage (the span and its ancestors, read from the lake's `spans`, a
fraction of the events' bytes) comes first, then the events of those spans at those instants, and,
for a span with more events than its start and end, within its times: a few row groups.

Whether that read found every event of the lineage is checked by counts, not assumed: after the load,
each span's `events` here against the lake's (the publisher's count of its events). A span short of
them (an event outside its times: a log line after its end, a clock gone back) is read again whole, by
span id, the scan of before; the exactly-once keys store each event once. A run whose events were not
recorded in time order is read correctly, only with less skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from devtool.store.database import Store
from devtool.store.lake.attach import Lake
from devtool.store.lake.fetch import copy_events

# A span and its ancestors, up the lake's spans of the run (read once), with their times and counts.
_LINEAGE = """
    WITH RECURSIVE tree AS MATERIALIZED (
        SELECT span_id, parent_span_id, start_ts, end_ts, events FROM devtool_lake.spans WHERE trace_id = $trace
    ), up AS (
        SELECT * FROM tree WHERE span_id = $span
        UNION
        SELECT t.* FROM tree t JOIN up ON t.span_id = up.parent_span_id
    )
    SELECT span_id, start_ts, end_ts, events FROM up
"""

Lineage = Sequence[tuple[str, float, float | None, int]]


def copy_lineage(store: Store, lake: Lake, trace_id: str, span_id: str) -> int:
    """Copy the events of span `span_id` of run `trace_id` and of its ancestors from the lake (those
    stored already are not stored again); how many it stored."""
    lineage = lineage_of(store, trace_id, span_id)
    if not lineage:
        return 0
    where, params = at_their_times(lineage)
    stored = copy_events(store, lake, trace_id, where, params, keys=False).events
    short = short_spans(store, trace_id, lineage)
    if short:
        ids = {f"s{n}": span for n, span in enumerate(short)}
        where = f"span_id IN ({', '.join('$' + name for name in ids)})"
        stored += copy_events(store, lake, trace_id, where, ids, keys=False).events
    return stored


def lineage_of(store: Store, trace_id: str, span_id: str) -> Lineage:
    """Span `span_id` of run `trace_id` and its ancestors as the lake's spans hold them: (span id, start,
    end, events) each, none when the lake has no such span."""
    rows: Lineage = store.query(_LINEAGE, {"trace": trace_id, "span": span_id})
    return rows


def at_their_times(lineage: Lineage) -> tuple[str, dict[str, object]]:
    """The lake events' filter for the spans of `lineage` at their times: each span's start and end
    instants, or its whole time when it has more events than those two. Constants as parameters, so
    that DuckDB prunes row groups by them."""
    params: dict[str, object] = {}
    instants: dict[float, str] = {}
    spells: list[str] = []
    for n, (span, start, end, events) in enumerate(lineage):
        params[f"s{n}"] = span
        if events > 2:
            params[f"from{n}"] = start
            if end is None:
                spells.append(f"ts >= $from{n}")
            else:
                params[f"to{n}"] = end
                spells.append(f"ts BETWEEN $from{n} AND $to{n}")
            continue
        for at in (start, end):
            if at is not None and at not in instants:
                instants[at] = f"at{len(instants)}"
                params[instants[at]] = at
    times = [f"ts IN ({', '.join('$' + name for name in instants.values())})"] if instants else []
    spans = ", ".join(f"$s{n}" for n in range(len(lineage)))
    return f"span_id IN ({spans}) AND ({' OR '.join(times + spells)})", params


def short_spans(store: Store, trace_id: str, lineage: Lineage) -> list[str]:
    """The spans of `lineage` that have fewer events here than the lake counts."""
    here = dict(
        store.query(
            "SELECT span_id, events FROM spans WHERE trace_id = ? AND span_id = ANY(?::VARCHAR[])",
            [trace_id, [span for span, *_ in lineage]],
        )
    )
    return [span for span, _, _, events in lineage if here.get(span, 0) < events]
