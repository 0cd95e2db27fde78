"""Named queries the web pages ask the store, each returning plain data."""

from __future__ import annotations

from dataclasses import dataclass

from devtool.store.database import Store


@dataclass(frozen=True)
class RunSummary:
    trace_id: str
    name: str
    started_ms: float
    duration_ms: float
    events: int


def list_runs(store: Store) -> list[RunSummary]:
    rows = store.query(
        """
        SELECT trace_id,
               coalesce(min(agent_id) FILTER (WHERE type = 'agent:start'), trace_id),
               min(ts), max(ts) - min(ts), count(*)
        FROM events GROUP BY trace_id ORDER BY min(ts) DESC
        """
    )
    return [RunSummary(*row) for row in rows]
