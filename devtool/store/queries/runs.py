"""The runs list: every trace and every process journal in the store, newest first.

One list for both, because a user looking for "what happened last night" does not care which kind
of record holds it. A trace's status is its root span's (`running` while any root span has no end,
or its parent has not come yet, as OpenTelemetry sends a parent after its children; `failed` when a
root span failed), its tokens the sum of its model calls' usage, its cost the sum of their costs
(`unpriced_calls` says how many had no known price). A journal's status
comes from its last lifecycle state, a transition's (`state_transition.to_state`) or a checkpoint's
(`state.lifecycle_state`: a rewind's checkpoint puts back the state it rewound to): stopped/completed/finished
are `completed`, failed/error/crashed `failed`, anything else (running, suspended, ...) `running`.

`prompts` counts a trace's model requests (turns: one prompt-journal entry each), `tools` its tool
calls (the names on each `tools:execute` batch, which both libraries put on its start event); a
journal has neither. `source` is the file (or live stream) a run's first event, or a journal's first
entry, came from.

`search` matches, case-insensitively, the run's id, name and agent ids, and (unless `content=False`)
the text of its events or entries: a trace's through the search index (`devtool.store.search`: each of
the query's words part of one of the run's words), a journal's by a scan of its entries' JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.live_append import LIVE_KIND, OTLP_STREAM
from devtool.store.loaders.otlp import KIND as OTLP_FILE
from devtool.store.queries.unended import COPYING
from devtool.store.search import words

STATUSES = ("completed", "failed", "running")


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One row of the runs list: a trace (`kind="trace"`) or a process journal (`kind="journal"`)."""

    kind: str
    id: str
    name: str
    status: str
    started_ms: float
    ended_ms: float
    events: int  # a journal's entries
    spans: int
    agents: int
    failed: int  # failed spans; a journal's `error` entries
    running: int  # spans without their end yet
    prompt_tokens: int
    completion_tokens: int
    cost_micro_usd: float | None = None  # of its priced model calls; None when none is priced
    unpriced_calls: int = 0  # successful model calls without a known price: the cost is incomplete
    prompts: int = 0
    tools: int = 0
    source_kind: str | None = None  # `trace-jsonl`, `journal-jsonl`, `live`, ...
    source: str | None = None  # its path, or a live stream's name

    @property
    def from_opentelemetry(self) -> bool:
        """Whether the run came from OpenTelemetry (an OTLP file or `POST /v1/traces`): its spans say what
        happened, but not the journal of inputs and outputs that a rewind or a replay restores from."""
        return self.source_kind == OTLP_FILE or (self.source_kind == LIVE_KIND and self.source == OTLP_STREAM)

    @property
    def duration_ms(self) -> float:
        return self.ended_ms - self.started_ms

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def trace_id(self) -> str | None:
        return self.id if self.kind == "trace" else None

    @property
    def process_id(self) -> str | None:
        return self.id if self.kind == "journal" else None


_JOURNAL_STATUS = """
    CASE
        WHEN lower(state) IN ('stopped', 'completed', 'finished', 'terminated', 'done') THEN 'completed'
        WHEN lower(state) IN ('failed', 'error', 'crashed') THEN 'failed'
        ELSE 'running'
    END
"""

# The store's traces as runs ({status} and {copying}: `_traces`).
_TRACES = """
        SELECT 'trace' AS kind, trace_id AS id, name, {status} AS status, started_ts, ended_ts, events, spans, agents,
               failed, running, prompt_tokens, completion_tokens, cost_micro_usd, unpriced_calls, prompts, tools,
               agent_ids AS words, source_id AS first_source, NULL AS lake_by
        FROM runs{copying}"""

# With a lake: a run being copied from it (`store/lake/opening.py`) has the status the lake lists for
# it (its local one is `running` until its root's end is copied: `queries/unended.py`); `copying`
# until the lake's list is read (the lake worker's first round).
_COPYING = f"""
        LEFT JOIN (SELECT trace_id, coalesce(l.status, '{COPYING}') AS lake_status
                   FROM lake_opening LEFT JOIN lake_runs l USING (trace_id)) USING (trace_id)"""

_RUNS = f"""
    SELECT * FROM (
        {{traces}}{{lake}}
        UNION ALL
        SELECT 'journal', process_id, process_id, {_JOURNAL_STATUS}, started, ended, n, 0, 0, errors, 0, 0, 0,
               NULL, 0, 0, 0, types, first_source, NULL
        FROM (
            SELECT process_id, min(ts_ms) AS started, max(ts_ms) AS ended, count(*) AS n,
                   arg_min(source_id, entry_seq) AS first_source,
                   count(*) FILTER (WHERE entry_type = 'error') AS errors,
                   arg_max(lifecycle, entry_seq) FILTER (WHERE lifecycle IS NOT NULL) AS state,
                   string_agg(DISTINCT entry_type, ' ') AS types
            FROM (
                SELECT *, CASE entry_type
                    WHEN 'state_transition' THEN data->>'to_state'
                    WHEN 'checkpoint' THEN coalesce(data->'state'->>'lifecycle_state', data->>'lifecycle_state')
                END AS lifecycle
                FROM journal_entries
            )
            GROUP BY process_id
        )
    )
"""

# The team's runs in the lake that this store does not hold (`store/lake`): listed from the local
# copy of the lake's list, their source `lake` and who published them.
# The lake's runs (`lake_runs`, as last read) in the columns of `_TRACES`.
_LAKE_RUNS = """
        SELECT 'trace' AS kind, trace_id AS id, name, status, started_ts, ended_ts, events, spans, agents, failed,
               running, prompt_tokens, completion_tokens, cost_micro_usd, unpriced_calls, prompts, tools,
               agent_ids AS words, NULL AS first_source, published_by AS lake_by
        FROM lake_runs"""
_LAKE = f"""
        UNION ALL{_LAKE_RUNS} WHERE trace_id NOT IN (SELECT trace_id FROM runs)
"""
LAKE_KIND = "lake"

# Runs with the file (or stream) each came from: one run by its id (`_ONE`), or a page of them in the
# list's order (`_PAGE`, sorted again: once the store has more sources than the page has rows, DuckDB
# joins from the sources' side and the page's order is lost). One run is not sorted: the sort of its one
# row was ~1.5 of the ~5 ms of CPU its lookup took, and a live run's header asks on every refresh.
_ONE = f"""
    WITH page AS ({{runs}})
    SELECT page.* EXCLUDE (words, first_source, lake_by),
           CASE WHEN page.lake_by IS NULL THEN src.kind ELSE '{LAKE_KIND}' END, coalesce(page.lake_by, src.path)
    FROM page LEFT JOIN sources src ON src.source_id = page.first_source
"""
_PAGE = f"{_ONE}    ORDER BY page.started_ts DESC, page.id, page.kind DESC\n"

_MATCH_NAMES = "id ILIKE $pattern ESCAPE '\\' OR name ILIKE $pattern ESCAPE '\\' OR words ILIKE $pattern ESCAPE '\\'"
_MATCH_JOURNAL = (
    "kind = 'journal' AND id IN (SELECT process_id FROM journal_entries WHERE data ILIKE $pattern ESCAPE '\\')"
)


def _match_words(found: list[str], params: dict[str, object]) -> str:
    """Traces with each of the query's words in one of their words (none when the query has none)."""
    if not found:
        return "false"
    sets = []
    for index, word in enumerate(found):
        params[f"word{index}"] = word
        sets.append(f"SELECT trace_id FROM search_terms WHERE contains(term, $word{index})")
    return f"kind = 'trace' AND id IN ({' INTERSECT '.join(sets)})"


def _traces(store: Store | None) -> str:
    """The store's traces as runs; a run being copied from a lake attached to `store` with its lake status."""
    if store is None or store.lake is None:
        return _TRACES.format(status="status", copying="")
    return _TRACES.format(status="coalesce(lake_status, status)", copying=_COPYING)


def _runs(store: Store | None) -> str:
    """Every run and journal of the store, and with a lake attached to `store`, the lake's runs it
    lacks (a run page opens those from the lake first: `get_run` reads the store's own)."""
    lake = store is not None and store.lake is not None
    return _RUNS.format(traces=_traces(store), lake=_LAKE if lake else "")


def list_runs(
    store: Store,
    *,
    search: str | None = None,
    content: bool = True,
    status: str | None = None,
    limit: int = 200,
    offset: int = 0,
) -> list[RunSummary]:
    """Traces and process journals, newest first, filtered by text and status.

    `content=False` matches ids, names and agent ids only: instant, where the text of every event
    is a scan (type-ahead can ask that first, then the full search).
    """
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    where: list[str] = ["true"]
    params: dict[str, object] = {"limit": limit, "offset": offset}
    if search:
        content_match = f"OR ({_match_words(words(search), params)}) OR ({_MATCH_JOURNAL})" if content else ""
        where.append(f"({_MATCH_NAMES} {content_match})")
        params["pattern"] = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    if status:
        where.append("status = $status")
        params["status"] = status
    order = "ORDER BY started_ts DESC, id, kind DESC LIMIT $limit OFFSET $offset"
    page = f"{_runs(store)} WHERE {' AND '.join(where)} {order}"
    return [RunSummary(*row) for row in store.query(_PAGE.format(runs=page), params)]


def lake_listed(store: Store, trace_id: str) -> RunSummary | None:
    """Run `trace_id` as the lake's runs list holds it (`lake_runs`, as last read): the whole run's figures,
    for a run being copied whose own are those of the part here so far. None without a lake, or unlisted."""
    if store.lake is None:
        return None
    page = f"{_LAKE_RUNS} WHERE trace_id = $id ORDER BY published_at DESC LIMIT 1"
    rows = store.query(_ONE.format(runs=page), {"id": trace_id})
    return RunSummary(*rows[0]) if rows else None


def get_run(store: Store, run_id: str, *, kind: str | None = None) -> RunSummary:
    """One trace or process journal by its id (a trace first, when both have it, unless `kind` says which).

    `NotFoundError` when there is none.
    """
    if kind is not None and kind not in ("trace", "journal"):
        raise ValueError(f"kind must be 'trace' or 'journal', not {kind!r}")
    rows: list[tuple[Any, ...]] = []
    if kind != "journal":
        # A trace first, from `runs` alone: the journals' part is an aggregate of every journal entry,
        # which DuckDB plans (and runs) at each ask; a live run's header asks on every refresh.
        rows = store.query(_ONE.format(runs=f"{_traces(store)} WHERE trace_id = $id"), {"id": run_id})
    if not rows and kind != "trace":
        page = f"{_runs(None)} WHERE id = $id AND kind = coalesce($kind, kind) ORDER BY kind DESC LIMIT 1"
        rows = store.query(_ONE.format(runs=page), {"id": run_id, "kind": kind})
    if not rows:
        what = {"trace": "run", "journal": "process journal"}.get(kind or "", "run or process journal")
        raise NotFoundError(f"no {what} {run_id!r} in the store")
    return RunSummary(*rows[0])
