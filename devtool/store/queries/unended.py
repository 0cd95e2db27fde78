"""What a span with no end here is: `running`, or `copying` while its run is copied from the team's lake.

A span's derived status is `running` until its end event is stored (`span_sql`). Of a run an agent is
still writing, that is true. Of a run opened from the lake (`store/lake/opening.py`) it is not: the
run ended (the lake lists it finished), its head is here, and its other events, the ends of its root
and outer spans last, are being copied after it. Until the copy is done (its row in `lake_opening`)
such a span is `copying`: ended elsewhere, its end not here yet. The queries that give a page a span's
status (the tree, the timeline, the detail, the span search) ask here once per run which word a span
without its end gets; the run's own status is the lake's meanwhile (`runs.get_run`).
"""

from __future__ import annotations

from typing import Any

from devtool.store.database import Store

RUNNING = "running"
COPYING = "copying"


def unended(store: Store, cursor: Any, trace_id: str) -> str:
    """The status of run `trace_id`'s spans that have no end here: `copying` while it is copied from the
    lake, else `running`."""
    if store.lake is None:  # `lake_opening` is made when a lake is attached
        return RUNNING
    copying = cursor.execute("SELECT 1 FROM lake_opening WHERE trace_id = ?", [trace_id]).fetchall()
    return COPYING if copying else RUNNING


def shown_status(status: str, unended: str) -> str:
    """A span's `status` as a page shows it, `unended` standing for `running` (`unended()`)."""
    return unended if status == RUNNING else status
