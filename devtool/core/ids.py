"""Trace and span ids in the W3C / OpenTelemetry shape: 32 and 16 lowercase hex digits."""

from __future__ import annotations

import os
import random

# Ids only need to be unique, not secret; the process-seeded Mersenne Twister is ~10x cheaper
# per call than `secrets`, and ids are made on every step of every run.
_random = random.Random()  # noqa: S311
# A forked child would otherwise repeat its parent's ids.
os.register_at_fork(after_in_child=_random.seed)


# `to_bytes(...).hex()` writes the digits `f"{n:016x}"` would, in less time (a span id per event or two).


def new_trace_id() -> str:
    return _random.getrandbits(128).to_bytes(16, "big").hex()


def new_span_id() -> str:
    return _random.getrandbits(64).to_bytes(8, "big").hex()
