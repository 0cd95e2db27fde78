"""What a replay saved: the prompt and tool calls its journal served, and what they cost when recorded.

A turn served from a snapshot's journal (`turn:end` with `cache: true`) calls no model, so the run's
own cost leaves it out; what it saved is the cost of the recorded turn it stands for: the turn with
the same `contentHash` that did call the model (`cache` not true), priced by the model calls under it
(or by its own end, for an OpenTelemetry chat span). The original run the replay names
(`runWith:start`'s `metadata.replay.originalTraceId`) is preferred; else any run of the store that
recorded that turn. A served turn whose recorded one is not in the store, or was not priced, counts
in `unknown`, so a saving is never shown as complete when it is not. Served tool results (a
`tools:execute:end`'s `toolResults[*].cache`) cost nothing either way; they count among the calls.
"""

from __future__ import annotations

import functools
from contextlib import closing
from dataclasses import dataclass

from devtool.store import live_index
from devtool.store.call_prints import CACHED
from devtool.store.database import Store
from devtool.store.queries.runs import RunSummary
from devtool.store.run_summary import MODEL_REQUEST_END


@dataclass(frozen=True)
class ReplaySaving:
    """What run `trace_id`'s journal served, and the recorded cost of it."""

    served_prompts: int  # turns served from the journal: no model called
    served_tools: int  # tool results served from the journal: no tool run
    saved_micro_usd: float | None  # the recorded cost of the served turns; None when none was priced
    unknown: int  # served turns whose recorded cost is unknown (not in the store, or unpriced)
    model_calls: int  # the model requests the run did make (0: a fully cached replay, which cost $0)

    @property
    def served_calls(self) -> int:
        return self.served_prompts + self.served_tools


# The turns a run's journal served.
_SERVED = (
    "SELECT content_hash FROM spans WHERE trace_id = $trace AND kind = 'turn' AND cache AND content_hash IS NOT NULL"
)
_SERVED_PROMPTS = f"SELECT count(*) FROM ({_SERVED})"

_SAVING = f"""
    WITH served AS ({_SERVED}),
    turns AS (  -- the recorded turns that served ones stand for
        SELECT trace_id, span_id, content_hash, end_event_id FROM spans
        WHERE kind = 'turn' AND cache IS NOT TRUE AND content_hash IN (SELECT content_hash FROM served)
    ),
    priced AS (  -- each turn's own end and its children's (its model calls)
        SELECT trace_id, span_id, content_hash, end_event_id FROM turns
        -- Two equality joins, not one on `span_id OR parent_span_id` (a nested loop: minutes at 1M).
        UNION ALL
        SELECT t.trace_id, t.span_id, t.content_hash, c.end_event_id
        FROM turns t JOIN spans c ON c.trace_id = t.trace_id AND c.parent_span_id = t.span_id
    ),
    recorded AS (
        SELECT p.trace_id, p.content_hash, sum(e.cost_micro_usd) AS cost,
               count(*) FILTER (WHERE e.cost_micro_usd IS NULL) AS unpriced
        FROM priced p JOIN events e ON e.event_id = p.end_event_id
        WHERE (e.type = 'model:call:end' OR (e.type = 'turn:end' AND e.prompt_tokens IS NOT NULL))
          AND e.success IS NOT FALSE
        GROUP BY p.trace_id, p.span_id, p.content_hash
    ),
    chosen AS (  -- per turn, the original run's recording if it has one
        SELECT content_hash,
               arg_min({{'cost': cost, 'unpriced': unpriced}}, (trace_id <> $original)::INT) AS pick
        FROM recorded GROUP BY content_hash
    )
    SELECT
        (SELECT count(*) FROM served),
        ({{served_tools}}),
        (SELECT sum(ch.pick.cost) FROM served s JOIN chosen ch USING (content_hash)),
        (SELECT count(*) FROM served s LEFT JOIN chosen ch USING (content_hash)
         WHERE ch.pick IS NULL OR ch.pick.unpriced > 0 OR ch.pick.cost IS NULL),
        (SELECT count(*) FROM events WHERE trace_id = $trace AND {MODEL_REQUEST_END})
"""

# The tool results served from a journal: counted from the run's stored call fingerprints when it is
# printed (`store/call_prints.py`), else read from its batches' bodies (seconds a million events).
_SERVED_TOOLS_PRINTED = f"SELECT count(*) FROM call_prints WHERE trace_id = $trace AND served = {CACHED} AND idx >= 0"
_SERVED_TOOLS = """
    SELECT coalesce(sum(len(list_filter(json_extract_string(body, '$.toolResults[*].cache'), lambda c: c = 'true'))), 0)
    FROM events WHERE trace_id = $trace AND type = 'tools:execute:end'
"""

_ORIGINAL = """
    SELECT body->'metadata'->'replay'->>'originalTraceId' FROM events
    WHERE trace_id = ? AND type = 'runWith:start' LIMIT 1
"""


def replay_saving(store: Store, run: RunSummary) -> ReplaySaving | None:
    """What trace `run` (as `get_run` read it)'s journal served and saved; None when it served nothing
    (not a replay)."""
    tools = _ServedTools(store, run.id)
    if not _serves(store, run, tools):
        return None
    ((last, runs),) = store.query("SELECT max(last_event_id), count(*) FROM runs")
    return _saving(store, run.id, last, runs, tools)


class _ServedTools:
    """The statement counting the tool results run `trace_id` served (`_served_tools`), made at most
    once per `replay_saving`: a run's first header after its derive misses both caches below, and
    each asked whether the run is printed. Equal to any other, so that it is no part of their keys."""

    def __init__(self, store: Store, trace_id: str) -> None:
        self.store = store
        self.trace_id = trace_id

    @functools.cached_property
    def sql(self) -> str:
        return _served_tools(self.store, self.trace_id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _ServedTools)

    def __hash__(self) -> int:
        return 0


# What a run served is its own spans' and events': the same while its summary is (each derive of its
# events writes that anew). Most runs are not replays, and a live run's header asks on every refresh,
# as do the small traces' beside an ingest, where the store-wide key of `_saving` never holds.
@functools.lru_cache(maxsize=256)
def _serves(store: Store, run: RunSummary, served_tools: _ServedTools) -> bool:
    """Whether trace `run`, as summarized, served any call from a journal."""
    ((prompts, tools),) = store.query(f"SELECT ({_SERVED_PROMPTS}), ({served_tools.sql})", {"trace": run.id})
    return bool(prompts or tools)


# A replay's page and header ask on every view, and pricing its served turns reads the recorded ones
# of any run (seconds for a replay of a million events): kept until the store has another event or run.
@functools.lru_cache(maxsize=32)
def _saving(
    store: Store, trace_id: str, last_event_id: int | None, runs: int, served_tools: _ServedTools
) -> ReplaySaving:
    """`replay_saving` of a run that served calls, in the store as it is at this last event id and count of runs."""
    found = store.query(_ORIGINAL, [trace_id])
    original = (found[0][0] if found else None) or ""
    saving = _SAVING.replace("{served_tools}", served_tools.sql)
    ((prompts, tools, saved, unknown, calls),) = store.query(saving, {"trace": trace_id, "original": original})
    return ReplaySaving(int(prompts), int(tools), None if saved is None else float(saved), int(unknown), int(calls))


def _served_tools(store: Store, trace_id: str) -> str:
    """The statement counting the tool results run `trace_id` served (from its call fingerprints when printed)."""
    with closing(store.reader()) as cursor:
        printed = live_index.printed(store, cursor, trace_id)
    return _SERVED_TOOLS_PRINTED if printed else _SERVED_TOOLS
