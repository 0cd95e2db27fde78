"""The cycle collector's settings for a process that reads and stores live batches: `devtool serve`
and its OTLP reader workers (`otlp_read.py`).

Whether to change them is the process owner's choice, so `create_app` does not: an app made in a
test or a script keeps CPython's defaults.
"""

from __future__ import annotations

import gc

# The collector's threshold for young objects (CPython's default is 700).
COLLECT_AFTER = 50_000


def quiet_collector() -> None:
    """Freeze what the process holds so far and let the collector wait for `COLLECT_AFTER` young objects.

    A batch of OTLP spans is tens of thousands of small dicts and lists (its decoded spans, their
    events) that live until it is stored, a few hundred milliseconds. At CPython's default threshold
    the cycle collector ran some 200 times a second under ingest at 10,000 spans/s, went over every
    batch in flight each time, and took 3.2 s of the server's 21.4 s of CPU, all of it holding the GIL
    the requests and the writer wait for (BENCHMARKS.md, issue 16). Reference counting frees those
    objects; the collector is only for cycles, which the server rarely makes. Frozen, the modules,
    templates and routes loaded at start are never gone over again.
    """
    gc.freeze()
    gc.set_threshold(COLLECT_AFTER)
