"""Trace and span ids in the W3C / OpenTelemetry shape: 32 and 16 lowercase hex digits.

Written by `int.to_bytes(...).hex()`: the digits `f"{n:032x}"` would write, in less time (ids are
made for every event or two).
"""

from __future__ import annotations

import os
import random

# Ids only need to be unique, not secret; the process-seeded Mersenne Twister is ~10x cheaper
# per call than `secrets`, and ids are made on every step of every run.
_random = random.Random()  # noqa: S311
# A forked child would otherwise repeat its parent's ids.
os.register_at_fork(after_in_child=_random.seed)


def new_trace_id() -> str:
    return _random.getrandbits(128).to_bytes(16, "big").hex()


def new_span_id() -> str:
    return _random.getrandbits(64).to_bytes(8, "big").hex()
