"""The runs list: every trace and every process journal in the store, newest first.

One list for both, because a user looking for "what happened last night" does not care which kind
of record holds it. A trace's status is its root span's (`running` while any root span has no end,
`failed` when a root span failed), its tokens the sum of its model calls' usage. A journal's status
comes from its last lifecycle transition (`state_transition.to_state`): stopped/completed/finished
are `completed`, failed/error/crashed `failed`, anything else (running, suspended, ...) `running`.

`search` matches, case-insensitively, the run's id, name and agent ids, and the text of its events or
entries (a scan of their compressed JSON: a few hundred ms for a million events).
"""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store.database import Store
from devtool.store.errors import NotFoundError

STATUSES = ("completed", "failed", "running")


@dataclass(frozen=True)
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

_RUNS = f"""
    SELECT * FROM (
        SELECT 'trace' AS kind, trace_id AS id, name, status, started_ts, ended_ts, events, spans, agents,
               failed, running, prompt_tokens, completion_tokens, agent_ids AS words
        FROM runs
        UNION ALL
        SELECT 'journal', process_id, process_id, {_JOURNAL_STATUS}, started, ended, n, 0, 0, errors, 0, 0, 0,
               types
        FROM (
            SELECT process_id, min(ts_ms) AS started, max(ts_ms) AS ended, count(*) AS n,
                   count(*) FILTER (WHERE entry_type = 'error') AS errors,
                   arg_max(data->>'to_state', entry_seq) FILTER (WHERE entry_type = 'state_transition') AS state,
                   string_agg(DISTINCT entry_type, ' ') AS types
            FROM journal_entries GROUP BY process_id
        )
    )
"""

_MATCH = """
    (id ILIKE $pattern ESCAPE '\\' OR name ILIKE $pattern ESCAPE '\\' OR words ILIKE $pattern ESCAPE '\\'
     OR (kind = 'trace' AND id IN (SELECT trace_id FROM events WHERE body ILIKE $pattern ESCAPE '\\'))
     OR (kind = 'journal' AND id IN (SELECT process_id FROM journal_entries WHERE data ILIKE $pattern ESCAPE '\\')))
"""


def list_runs(
    store: Store, *, search: str | None = None, status: str | None = None, limit: int = 200, offset: int = 0
) -> list[RunSummary]:
    """Traces and process journals, newest first, filtered by text and status."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")
    where: list[str] = ["true"]
    params: dict[str, object] = {"limit": limit, "offset": offset}
    if search:
        where.append(_MATCH)
        params["pattern"] = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    if status:
        where.append("status = $status")
        params["status"] = status
    sql = f"{_RUNS} WHERE {' AND '.join(where)} ORDER BY started_ts DESC, id LIMIT $limit OFFSET $offset"
    return [RunSummary(*row[:13]) for row in store.query(sql, params)]


def get_run(store: Store, run_id: str) -> RunSummary:
    """One trace or process journal by its id; `NotFoundError` when there is none."""
    rows = store.query(f"{_RUNS} WHERE id = $id ORDER BY kind DESC LIMIT 1", {"id": run_id})
    if not rows:
        raise NotFoundError(f"no run or process journal {run_id!r} in the store")
    return RunSummary(*rows[0][:13])
