"""What live streams ask the store beyond `events_after`: runs changed after an id, how far a run is
derived, where a followed file resumes.

A runs-list stream that reconnects with `Last-Event-ID: N` needs the runs whose events came after
N; `runs.last_event_id` (kept by every load and append) answers it without reading events. A server
that follows a file it followed before skips the events of it that are stored already.
"""

from __future__ import annotations

from devtool.store.database import Store
from devtool.store.live_append import LIVE_KIND


def runs_changed_after(store: Store, after_id: int) -> list[tuple[str, int]]:
    """(trace id, its last event id) of each run with an event above `after_id`, in that id's order."""
    rows = store.query(
        "SELECT trace_id, last_event_id FROM runs WHERE last_event_id > ? ORDER BY last_event_id", [after_id]
    )
    return [(str(trace_id), int(last)) for trace_id, last in rows]


def run_status(store: Store, trace_id: str) -> str | None:
    """The run's status as derived so far (None when it has no summary yet)."""
    rows = store.query("SELECT status FROM runs WHERE trace_id = ?", [trace_id])
    return str(rows[0][0]) if rows else None


def derived_through(store: Store, trace_id: str) -> int:
    """The last event of the run its spans and summary cover (0 when it has no summary yet): where a
    page that shows them starts its live stream."""
    rows = store.query("SELECT last_event_id FROM runs WHERE trace_id = ?", [trace_id])
    return int(rows[0][0]) if rows else 0


def stream_resume_point(store: Store, stream: str, first_event: str) -> int:
    """How many events at the start of a followed file are stored already from live stream `stream`.

    The file is recognised by its first event (`first_event`: its JSON text, as the gate gave it): when
    the stream stored it, everything the stream stored from it on came from this file, in order. A
    file the stream never stored gives 0.
    """
    rows = store.query(
        """
        WITH stream AS (SELECT source_id FROM sources WHERE kind = ? AND path = ? AND content_hash IS NULL),
        own AS (SELECT event_id, body FROM events WHERE source_id IN (SELECT source_id FROM stream))
        SELECT count(*) FROM own WHERE event_id >= (SELECT min(event_id) FROM own WHERE body = ?::JSON)
        """,
        [LIVE_KIND, stream, first_event],
    )
    return int(rows[0][0])
