"""The first field that holds a text in each of many runs, found for all of them in three statements:
the runs search's snippets (a page of runs, each shown where its text is).

A find inside one run (`find.find_in_run`) is about six statements: asked for each of a page's fifty
runs, that was 0.6-0.7 s a page, thirty times the list itself. Here the page's runs are asked
together: their ids and event ranges in one statement, the blocks of each that hold every word of the
text in a second (the first `FIRST_SLICE` events' worth of them a run, as a find's first slice), and
the first few events of those blocks that hold the text in a third: one scan of the runs' ranges of
ids (DuckDB's zone maps skip the rows between them), each event checked against its own run's blocks,
and a `UNION ALL` branch with a `LIMIT` for each run whose range is long (a big run is read up to its
first few hits, not through its blocks). Reading an event's JSON body opens its vector of 2,048 zstd
bodies (1.5-2 ms, whatever it holds): the runs' bodies are most of the statement. A run whose
first `EVENTS_A_RUN` such events hold the text only in what is not searched (keys, ids) shows no
snippet; its page's find box reads further. A field outside an OTLP span's `otel` block is shown
before one inside it (the block repeats the span's messages as JSON text: a turn's start event holds
its answer there, its end event as the answer itself).

A run stored before the blocks (migration 12) has nothing to read them from: it is asked alone, as
its page's find box would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from devtool.store import list_param
from devtool.store.database import Store
from devtool.store.queries.find import FIRST_SLICE, SHOWN_SPAN, FindHit, find_in_run, hit_of_event, spellings_of
from devtool.store.search import BLOCK, BLOCK_BITS, words

# Events a run read for its first hit: a text's words can sit in a body's keys rather than its texts.
EVENTS_A_RUN = 8
# A run whose events to read span this many ids or more is read alone, its first `EVENTS_A_RUN` hits
# (DuckDB stops at its LIMIT); the page's other runs are read by one scan of their ranges, each run's
# first `EVENTS_A_RUN` kept here. A branch a run was 4 ms of DuckDB's time each (every column's vector
# opened for a dozen rows) and a tenth of a second to plan for fifty (BENCHMARKS.md).
ALONE = BLOCK


def first_hits(store: Store, trace_ids: Sequence[str], text: str) -> dict[str, FindHit]:
    """The first field (in event order) of each run of `trace_ids` that holds `text`, by run id; runs
    whose first `FIRST_SLICE` events of the blocks that hold its words hold none are left out."""
    needle = text.strip().lower()
    if not trace_ids or not words(needle):
        return {}
    with store.reader() as cursor:
        since = int(cursor.execute("SELECT event_id FROM search_blocks_since").fetchall()[0][0])
        spans = cursor.execute(
            "SELECT trace_id, first_event_id, last_event_id FROM runs "
            f"WHERE trace_id IN (SELECT unnest({list_param.of('ids')}))",
            {"ids": list_param.values(trace_ids)},
        ).fetchall()
        old = [trace for trace, first, _ in spans if first < since]
        blocks = _blocks(cursor, [trace for trace, first, _ in spans if first >= since], needle)
        found = _first_in_blocks(cursor, blocks, {trace: (first, last) for trace, first, last in spans}, needle)
    for trace in old:
        hits = find_in_run(store, trace, text, limit=1, max_scanned=FIRST_SLICE).hits
        if hits:
            found[trace] = hits[0]
    return found


def _blocks(cursor: Any, trace_ids: list[str], needle: str) -> dict[str, list[int]]:
    """Each run's first blocks (up to `FIRST_SLICE` events of them) that hold every word of `needle`."""
    if not trace_ids:
        return {}
    found = words(needle)
    params: dict[str, object] = {
        "ids": list_param.values(trace_ids),
        "most": FIRST_SLICE >> BLOCK_BITS,
        **{f"w{i}": word for i, word in enumerate(found)},
    }
    any_word = " OR ".join(f"contains(term, $w{i})" for i in range(len(found)))
    held = " AND ".join(f"bool_or(contains(term, $w{i}))" for i in range(len(found)))
    rows = cursor.execute(
        f"""
        SELECT trace_id, list(block ORDER BY block) FROM (
            SELECT trace_id, block, row_number() OVER (PARTITION BY trace_id ORDER BY block) AS n
            FROM search_blocks
            WHERE trace_id IN (SELECT unnest({list_param.of("ids")})) AND ({any_word})
            GROUP BY trace_id, block HAVING {held}
        ) WHERE n <= $most GROUP BY trace_id
        """,
        params,
    ).fetchall()
    return {trace: list(held_blocks) for trace, held_blocks in rows}


def _first_in_blocks(
    cursor: Any, blocks: dict[str, list[int]], ranges: dict[str, tuple[int, int]], needle: str
) -> dict[str, FindHit]:
    """The first hit of `needle` in each run's first `EVENTS_A_RUN` events of its `blocks` that hold it."""
    if not blocks:
        return {}
    params: dict[str, object] = {"spellings": list_param.values(spellings_of(needle))}
    holds = f"list_bool_or([contains(body, s) FOR s IN {list_param.of('spellings')}])"
    columns = f"trace_id, {SHOWN_SPAN}, call_id, body, event_id"
    reads = {}
    for trace, held in blocks.items():
        first, last = ranges[trace]
        reads[trace] = (max(first, held[0] << BLOCK_BITS), min(last, ((held[-1] + 1) << BLOCK_BITS) - 1))
    together = [trace for trace, (low, high) in reads.items() if high - low < ALONE]
    parts = []
    if together:
        # Each run's ids and held blocks: an event of another run of the page in a run's range is not read.
        params |= {
            "together": list_param.values(together),
            "held": list_param.values([f"{trace}:{block}" for trace in together for block in blocks[trace]]),
        }
        within = " OR ".join(f"event_id BETWEEN {reads[trace][0]} AND {reads[trace][1]}" for trace in together)
        parts.append(
            f"""SELECT {columns} FROM events
            WHERE ({within}) AND trace_id IN (SELECT unnest({list_param.of("together")}))
              AND list_contains({list_param.of("held")}, concat(trace_id, ':', event_id >> {BLOCK_BITS}))
              AND type NOT LIKE 'model:call:%' AND {holds}"""
        )
    for i, trace in enumerate(trace for trace in reads if trace not in together):
        params |= {f"t{i}": trace, f"b{i}": list_param.values(blocks[trace])}
        parts.append(
            f"""(SELECT {columns} FROM events
            WHERE event_id BETWEEN {reads[trace][0]} AND {reads[trace][1]} AND trace_id = $t{i}
              AND list_contains({list_param.of(f"b{i}", "BIGINT")}, event_id >> {BLOCK_BITS})
              AND type NOT LIKE 'model:call:%' AND {holds}
            LIMIT {EVENTS_A_RUN})"""
        )
    union = " UNION ALL ".join(parts)
    rows = cursor.execute(f"SELECT * FROM ({union}) ORDER BY trace_id, event_id", params).fetchall()
    found: dict[str, FindHit] = {}
    read: dict[str, int] = {}
    for trace, span_id, call_id, body, _ in rows:
        read[trace] = read.get(trace, 0) + 1
        if read[trace] <= EVENTS_A_RUN and (trace not in found or found[trace].restated):
            hit = hit_of_event(span_id, call_id, orjson.loads(body), needle)
            if hit is not None and (trace not in found or not hit.restated):
                found[trace] = hit
    return found
