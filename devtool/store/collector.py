"""Pausing Python's cycle collector while many dicts are made at once (events parsed, frames rebuilt).

A million parsed events made with the collector on trigger collection after collection over
everything made so far (5x slower, measured): readers of whole runs and snapshots pause it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for the `with` block (as it was, after)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
