"""Trace and span ids in the W3C / OpenTelemetry shape: 32 and 16 lowercase hex digits."""

from __future__ import annotations

import os
import random

# Ids only need to be unique, not secret; the process-seeded Mersenne Twister is ~10x cheaper
# per call than `secrets`, and ids are made on every step of every run.
_random = random.Random()  # noqa: S311
# A forked child would otherwise repeat its parent's ids.
os.register_at_fork(after_in_child=_random.seed)


def new_trace_id() -> str:
    return f"{_random.getrandbits(128):032x}"


def new_span_id() -> str:
    return f"{_random.getrandbits(64):016x}"
