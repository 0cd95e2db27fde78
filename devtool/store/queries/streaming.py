"""A running turn's answer so far: the text of its latest `turn:progress` event.

A streaming model's turn records its answer as it grows (`turn:progress`, the whole text so far, in
the turn's own span), and the whole message at its end. The store keeps those events with the
turn's span like any other; this reads the newest one, after the turn's start (ids only grow, so
the read skips every older part of the events table).
"""

from __future__ import annotations

from devtool.store.database import Store


def answer_so_far(store: Store, trace_id: str, span_id: str) -> str | None:
    """The text the model of turn `span_id` had answered by its latest progress event, if any."""
    started = store.query(
        "SELECT start_event_id FROM spans WHERE trace_id = ? AND span_id = ? AND kind = 'turn'", [trace_id, span_id]
    )
    if not started or started[0][0] is None:
        return None
    rows = store.query(
        """
        SELECT body->>'text' FROM events
        WHERE event_id > $after AND trace_id = $trace AND span_id = $span AND type = 'turn:progress'
        ORDER BY event_id DESC LIMIT 1
        """,
        {"after": started[0][0], "trace": trace_id, "span": span_id},
    )
    return rows[0][0] if rows else None
