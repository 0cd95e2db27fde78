"""An OTLP span that carries the DevTool events it was exported from: the events' identity across
formats.

A run exported as OTLP (`otlp_export.otlp_requests`) gives each span the attribute `devtool.events`
(`EVENTS`): a JSON array of the JSON texts of the events it was made of, as the store holds them
(a span's start and end; an instant's one event; none for a tool call split out of a batch). Read
back (posted to `/v1/traces`, or loaded from a file, where `otlp_sql.py` does the same in SQL), such a
span is those events again, text for text, not the span's mapping (`otlp_map`): the store knows an
event by its text (`event_sql.EVENT_KEY_SQL`), so a run loaded both native and as its own OTLP
export, in either order, holds its events once.
"""

from __future__ import annotations

from typing import Any

import orjson

from devtool.core.jsonvalue import kind_of

EVENTS = "devtool.events"
# A span's start and end: at most what one OTLP span carries.
MAX_CARRIED = 2


def carried_texts(attributes: dict[str, Any]) -> list[str] | None:
    """The event texts a span carries (None: it carries none, and is mapped as any span is);
    `ValueError` when the attribute is there but is not a JSON array of at most two strings."""
    value = attributes.get(EVENTS)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{EVENTS} is {kind_of(value)}, not the JSON text of an array of event texts")
    try:
        texts = orjson.loads(value)
    except orjson.JSONDecodeError:
        raise ValueError(f"{EVENTS} is not JSON") from None
    if not isinstance(texts, list) or len(texts) > MAX_CARRIED or not all(isinstance(t, str) for t in texts):
        raise ValueError(f"{EVENTS} is not an array of at most {MAX_CARRIED} event texts")
    return texts
