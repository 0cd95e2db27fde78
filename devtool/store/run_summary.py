"""A run's summary row (`runs`): counted from all its events and spans, or updated from what changed.

`rebuild(conn, traces)` counts a run's summary from every event and span it has: what a load does,
and the reference. `update(conn, after_event_id, moved=...)` is what an append to stored runs does:
it adds the new events' counts to the stored row and, for the spans, takes away what the re-derived
spans counted before (`replaced`) and adds what they count now (`derived`, placed in `placed`), so
its cost follows the append, not the run. Where a delta cannot know the answer it rebuilds that run instead:
a span moved under a new parent (depths changed beyond the re-derived spans), an agent span came or
changed (its ids and the run's name are the agents'), a root span changed (the run's status is its
roots'), the span that names the run changed, or the deepest span may have become shallower. Those
are a run's first and last moments and a few in between; its hundreds of turns and tool calls are
deltas. A cost is added batch by batch, so it may differ from one sum in its last bits.

The run's name is its shallowest, earliest agent's, or else its earliest root span's, ties broken by
span id; `name_key`/`name_span` (migration 9) keep which span that is, so an update compares the new
spans with it and does not read the others. tests/test_store_run_summary.py checks that after any
sequence of appends the updated rows equal a rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from devtool.store import list_param
from devtool.store.span_sql import SHOWN, shown

# The end of a model request, over `events` columns: a `model:call`'s, or a turn's that counts its own
# tokens (an OpenTelemetry chat span is the request itself; the DevTool's own turns never carry usage).
MODEL_REQUEST_END = "(type = 'model:call:end' OR (type = 'turn:end' AND prompt_tokens IS NOT NULL))"

# What names a run, as an ordered key: an agent's (shallowest, then earliest) before a root span's.
_AGENT = "kind = 'agent'"
_ROOT = "depth = 0 AND NOT instant"
_AGENT_KEY = "{'k': depth * 1e15 + start_ts, 's': span_id}"
_ROOT_KEY = "{'k': start_ts, 's': span_id}"

# The events' part of a summary, of `{events}` grouped by trace.
_EVENT_COUNTS = f"""
    SELECT trace_id, count(*) AS n, min(ts) AS started, max(ts) AS ended,
           coalesce(sum(prompt_tokens) FILTER (WHERE {MODEL_REQUEST_END}), 0) AS prompt_tokens,
           coalesce(sum(completion_tokens) FILTER (WHERE {MODEL_REQUEST_END}), 0) AS completion_tokens,
           min(event_id) AS first_id, max(event_id) AS last_id, arg_min(source_id, event_id) AS source_id,
           sum(cost_micro_usd) FILTER (WHERE {MODEL_REQUEST_END}) AS cost_micro_usd,
           count(*) FILTER (WHERE {MODEL_REQUEST_END} AND success AND cost_micro_usd IS NULL) AS unpriced_calls
    FROM {{events}}
    GROUP BY trace_id
"""

# The events of the runs in `{traces}`, all of them with ids above `{after}`.
_OF_RUNS = "events WHERE event_id > {after} AND trace_id IN (SELECT trace_id FROM {traces})"

# A run's counts are of the spans its page shows (the frame tree and the timeline): a log line, an error
# event or a model call inside a turn is not one more span, and the runs list, the run's header and
# the load's summary all say the same number.
_REBUILD = f"""
    INSERT INTO runs BY NAME
    SELECT
        e.trace_id,
        coalesce(s.name, e.trace_id) AS name,
        e.started AS started_ts, e.ended AS ended_ts,
        coalesce(s.status, 'completed') AS status,
        e.n AS events, coalesce(s.spans, 0) AS spans, coalesce(s.agents, 0) AS agents,
        coalesce(s.failed, 0) AS failed, coalesce(s.running, 0) AS running,
        e.prompt_tokens, e.completion_tokens,
        coalesce(s.agent_ids, '') AS agent_ids,
        e.first_id AS first_event_id, e.last_id AS last_event_id,
        e.cost_micro_usd, e.unpriced_calls,
        coalesce(s.prompts, 0) AS prompts, coalesce(s.tools, 0) AS tools, e.source_id, coalesce(s.depth, 0) AS depth,
        s.best.k AS name_key, s.best.s AS name_span
    FROM ({_EVENT_COUNTS.format(events=_OF_RUNS)}) e
    LEFT JOIN (
        SELECT trace_id,
               coalesce(arg_min(name, {_AGENT_KEY}) FILTER (WHERE {_AGENT}),
                        arg_min(name, {_ROOT_KEY}) FILTER (WHERE {_ROOT})) AS name,
               coalesce(min({_AGENT_KEY}) FILTER (WHERE {_AGENT}), min({_ROOT_KEY}) FILTER (WHERE {_ROOT})) AS best,
               -- A span whose parent is not stored has a parent still open: OpenTelemetry sends a span
               -- when it ends, so its children come first and the run runs until its root arrives.
               CASE WHEN bool_or(status = 'running' OR parent_span_id IS NOT NULL) FILTER (WHERE {_ROOT})
                    THEN 'running'
                    WHEN bool_or(status = 'failed') FILTER (WHERE {_ROOT}) THEN 'failed'
                    ELSE 'completed' END AS status,
               count(*) FILTER (WHERE {SHOWN}) AS spans,
               count(*) FILTER (WHERE {_AGENT}) AS agents,
               count(*) FILTER (WHERE status = 'failed' AND {SHOWN}) AS failed,
               count(*) FILTER (WHERE status = 'running' AND {SHOWN}) AS running,
               string_agg(DISTINCT agent_id, ' ' ORDER BY agent_id) FILTER (WHERE {_AGENT}) AS agent_ids,
               count(*) FILTER (WHERE kind = 'turn') AS prompts,
               coalesce(sum(len(string_split(name, ', '))) FILTER (WHERE kind = 'tools:execute'), 0) AS tools,
               max(depth) AS depth
        FROM spans WHERE trace_id IN (SELECT trace_id FROM {{traces}})
        GROUP BY trace_id
    ) s USING (trace_id)
"""

# The events of each touched run that its summary does not count yet, counted.
_FRESH = _EVENT_COUNTS.format(
    events="""(
        SELECT e.trace_id, e.event_id, e.source_id, e.type, e.ts, e.success, e.prompt_tokens,
               e.completion_tokens, e.cost_micro_usd
        FROM events e JOIN runs r USING (trace_id)
        WHERE e.event_id > $after AND e.event_id > r.last_event_id
          AND e.trace_id IN (SELECT trace_id FROM touched_traces)
    )"""
)

# The re-derived spans as they are now (sign 1) and as they were (sign -1), summed up per run: what
# its counts move by, and what tells whether they can (`_add_spans`). A thousand spans an OTLP batch
# are one row a run here, not a thousand rows for Python to read.
_CHANGED = f"""
    WITH changed AS (
        SELECT d.trace_id, 1 AS sign, d.span_id, d.kind, d.instant, d.name, d.status, d.parent_span_id, d.start_ts,
               coalesce(p.depth, 0) AS depth
        FROM derived d LEFT JOIN placed p USING (trace_id, span_id)
        UNION ALL
        SELECT trace_id, -1, span_id, kind, instant, name, status, parent_span_id, start_ts, depth FROM replaced
    ), marked AS (
        SELECT c.*, {shown("c")} AS shown, c.depth = 0 AND NOT c.instant AS root, r.name_span, r.depth AS run_depth
        FROM changed c JOIN runs r USING (trace_id)
    )
    SELECT trace_id,
        bool_or(kind = 'agent') AS agents_changed,
        bool_or(sign < 0 AND (root OR span_id = name_span)) AS names_changed,
        coalesce(max(depth) FILTER (WHERE sign > 0), -1) AS deepest,
        bool_or(sign < 0 AND depth = run_depth) AS deepest_left,
        sum(sign * shown::INTEGER) AS spans,
        sum(sign * (shown AND status = 'failed')::INTEGER) AS failed,
        sum(sign * (shown AND status = 'running')::INTEGER) AS running,
        sum(sign * (kind = 'turn')::INTEGER) AS prompts,
        coalesce(sum(sign * len(string_split(name, ', '))) FILTER (WHERE kind = 'tools:execute'), 0) AS tools,
        coalesce(bool_or(status = 'running' OR parent_span_id IS NOT NULL) FILTER (WHERE sign > 0 AND root), false)
            AS root_running,
        coalesce(bool_or(status = 'failed') FILTER (WHERE sign > 0 AND root), false) AS root_failed,
        arg_min({{'k': start_ts, 's': span_id, 'name': name}}, {{'k': start_ts, 's': span_id}})
            FILTER (WHERE sign > 0 AND root) AS first_root
    FROM marked
    GROUP BY trace_id
"""

# A `runs` row's columns (`small_derive` writes whole rows by them too).
COLUMNS = [
    "trace_id",
    "name",
    "started_ts",
    "ended_ts",
    "status",
    "events",
    "spans",
    "agents",
    "failed",
    "running",
    "prompt_tokens",
    "completion_tokens",
    "agent_ids",
    "first_event_id",
    "last_event_id",
    "cost_micro_usd",
    "unpriced_calls",
    "prompts",
    "tools",
    "source_id",
    "depth",
    "name_key",
    "name_span",
]
_FRESH_COLUMNS = [
    "trace_id",
    "events",
    "started_ts",
    "ended_ts",
    "prompt_tokens",
    "completion_tokens",
    "first_event_id",
    "last_event_id",
    "source_id",
    "cost_micro_usd",
    "unpriced_calls",
]


_SUMMED = ("events", "prompt_tokens", "completion_tokens", "unpriced_calls")


def rebuild(
    conn: duckdb.DuckDBPyConnection, traces: str = "touched_traces", *, new: bool = False, after: int = -1
) -> None:
    """Count the summaries of the runs in table `traces` from all their events and spans (`new`: runs
    with no row yet, so none to delete first; a statement fewer for a lone live trace's derive).
    `after`: every event of those runs has a greater id (new live runs: their events are read from
    there, not looked for through the whole table, which grows with the store)."""
    if not new:
        conn.execute(f"DELETE FROM runs WHERE trace_id IN (SELECT trace_id FROM {traces})")
    conn.execute(_REBUILD.replace("{traces}", traces).replace("{after}", str(int(after))))


def update(conn: duckdb.DuckDBPyConnection, after_event_id: int, *, moved: bool) -> None:
    """Bring the summaries of the runs in `touched_traces` up to date with their events above
    `after_event_id` (those above each run's `last_event_id`: the rest are counted) and with the spans
    just re-derived (`derive.rederive`'s `replaced`, `derived` and `placed`); a run with no summary
    yet, or whose new row the change does not tell, is rebuilt. `moved`: the re-derive moved other
    stored spans (their depths changed, which the delta does not see)."""
    stored = conn.execute(
        f"SELECT {', '.join(COLUMNS)} FROM runs WHERE trace_id IN (SELECT trace_id FROM touched_traces)"
    ).fetchall()
    runs = {row[0]: dict(zip(COLUMNS, row, strict=True)) for row in stored}
    fresh = {
        row[0]: dict(zip(_FRESH_COLUMNS, row, strict=True))
        for row in conn.execute(_FRESH, {"after": after_event_id}).fetchall()
    }
    changed = {row[0]: _Change(*row[1:]) for row in conn.execute(_CHANGED).fetchall()}
    rebuilt = [
        trace for (trace,) in conn.execute("SELECT trace_id FROM touched_traces").fetchall() if trace not in runs
    ]
    updates: list[list[object]] = []
    for trace_id, run in runs.items():
        if moved or not _add_spans(run, changed.get(trace_id)):
            rebuilt.append(trace_id)
            continue
        _add_events(run, fresh.get(trace_id))
        updates.append([run[column] for column in COLUMNS[1:]] + [trace_id])
    assignments = ", ".join(f"{column} = ?" for column in COLUMNS[1:])
    for values in updates:
        conn.execute(f"UPDATE runs SET {assignments} WHERE trace_id = ?", values)
    if rebuilt:
        conn.execute(
            f"CREATE OR REPLACE TEMP TABLE rebuilt AS SELECT unnest({list_param.of('traces')}) AS trace_id",
            {"traces": list_param.values(rebuilt)},
        )
        rebuild(conn, "rebuilt")
        conn.execute("DROP TABLE rebuilt")


@dataclass(frozen=True, slots=True)
class _Change:
    """What a run's re-derived spans changed (`_CHANGED`): its counts' moves, and what says whether
    a move tells its new row."""

    agents_changed: bool
    names_changed: bool  # a root or the span that names the run was re-derived
    deepest: int  # of the spans as they are now (-1: none)
    deepest_left: bool  # a span as deep as the run was re-derived
    spans: int
    failed: int
    running: int
    prompts: int
    tools: int
    root_running: bool  # of the new roots: one is running, or has a parent still to come
    root_failed: bool
    first_root: dict[str, Any] | None  # the earliest new root: its start, span id and name


def _add_spans(run: dict[str, Any], change: _Change | None) -> bool:
    """Move `run`'s span counts by `change`; False when it does not tell its new row (rebuild it)."""
    if change is None:
        return True
    if run["name_span"] is None or change.agents_changed:
        return False  # a run stored before migration 9, or its agents changed: its name and agent ids
    if change.names_changed:
        return False  # a root changed (the run's status), or the span that names it did
    if change.deepest < run["depth"] and change.deepest_left:
        return False  # the deepest span may have risen
    for column in ("spans", "failed", "running", "prompts", "tools"):
        run[column] += getattr(change, column)
    run["depth"] = max(run["depth"], change.deepest)
    if run["status"] != "running":
        if change.root_running:
            run["status"] = "running"
        elif change.root_failed:
            run["status"] = "failed"
    first = change.first_root
    if run["agents"] == 0 and first is not None and (first["k"], first["s"]) < (run["name_key"], run["name_span"]):
        run["name"], run["name_key"], run["name_span"] = first["name"], first["k"], first["s"]
    return True


def _add_events(run: dict[str, Any], fresh: dict[str, Any] | None) -> None:
    """Add the counts of `run`'s new events (`_FRESH`) to it."""
    if fresh is None:
        return
    for column in _SUMMED:
        run[column] += fresh[column]
    run["started_ts"] = min(run["started_ts"], fresh["started_ts"])
    run["ended_ts"] = max(run["ended_ts"], fresh["ended_ts"])
    if fresh["first_event_id"] < run["first_event_id"]:
        run["first_event_id"], run["source_id"] = fresh["first_event_id"], fresh["source_id"]
    run["last_event_id"] = max(run["last_event_id"], fresh["last_event_id"])
    if run["cost_micro_usd"] is None or fresh["cost_micro_usd"] is None:
        run["cost_micro_usd"] = fresh["cost_micro_usd"] if run["cost_micro_usd"] is None else run["cost_micro_usd"]
    else:
        run["cost_micro_usd"] += fresh["cost_micro_usd"]
