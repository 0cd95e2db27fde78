"""The collector settings of `devtool serve` and its OTLP reader workers."""

from __future__ import annotations

import gc

from devtool.web.collector import COLLECT_AFTER, quiet_collector


def test_the_servers_collector_lets_a_batch_of_young_objects_be_and_skips_what_was_loaded() -> None:
    # What `devtool serve` does before it serves: a batch's worth of short-lived containers (a 512-span
    # OTLP batch makes tens of thousands) no longer sets off a collection, and what the process had
    # loaded is frozen out of every later one.
    threshold, frozen = gc.get_threshold(), gc.get_freeze_count()
    try:
        quiet_collector()
        assert gc.get_threshold() == (COLLECT_AFTER, *threshold[1:])
        assert gc.get_freeze_count() > frozen
        assert len(gc.get_objects()) < gc.get_freeze_count() / 10
        collections = gc.get_stats()[0]["collections"]
        batch = [{"span": i, "parts": [i]} for i in range(COLLECT_AFTER // 3)]
        assert gc.get_stats()[0]["collections"] == collections, len(batch)
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
