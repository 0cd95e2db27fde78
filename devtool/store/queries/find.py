"""Text inside a run: which spans' messages, answers, tool inputs and outputs, memory, errors or names
hold it, each hit named by its span and field with a snippet around the match.

`find_in_run` asks the run's words first, by block (`search_blocks`: which blocks of `search.BLOCK`
events hold a word the text's word is part of): an event that holds the text is in a block that holds
each of its words, so only those blocks are read, in order. A text a few events late in a run hold is
the read of a block or two; a text with a word of no event reads none. A run stored before the blocks
(migration 12) is read as before: its words (`search_terms`) say whether any event may hold the text,
then its events are read from the first. Either way, the events to read are read in growing slices
(the first 64k ids, then eight times more each step), the bodies of each slice searched, until the
page of hits is full: a text many events hold is answered from the run's first slice. A match is then
placed in the event's parsed JSON: its field is the path to the string that holds it
(`message.content`, `messages[2].content`, `toolResults[0].output`, `memory.release`,
`error.message`).

The words say where a text's words are, not whether they stand together: a phrase of words every block
holds ("worker ledger", never said) is a read of every event (1.2-1.9 s a million), so a find reads a
million events at most (`MAX_SCANNED`; the blocks it rules out are not read, nor counted).

Model calls' events are not searched (a turn's own events hold the same texts); a prompt loop's
events count as hits of the span it is in, the one the frame tree shows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.store.database import Store
from devtool.store.errors import NotFoundError
from devtool.store.queries.navigation import spans_named
from devtool.store.search import BLOCK_BITS, words

# Characters of context on each side of a match in a snippet.
CONTEXT = 48
# The first slice of a run's events read, and how much bigger each next one is.
FIRST_SLICE = 65_536
SLICE_GROWTH = 8
# Events read a page at a time: most finds fill their page of hits from the first few.
PAGE = 128
# Events (by id) a find reads at most (those of the blocks its words rule out are not read); `Found.complete`
# says whether it saw the whole run.
MAX_SCANNED = 1_000_000
# Bodies parsed at most for one find: a text that is mostly in keys ("content") holds every event.
MAX_READ = 5_000
# Keys of an event that hold no searched text (ids, hashes, times, counts, schemas: the span's name,
# agent and callId are found by name), and a key that holds none at any depth (a stack trace names the
# code's files and lines, not what the agents said).
_SKIPPED = frozenset(
    {
        "trace",
        "schemaVersion",
        "timestamp",
        "contentHash",
        "duration",
        "usage",
        "costs",
        "schema",
        "toolConfig",
        "_seq",
        "agentId",
        "callId",
        "type",
        "generationId",
        "callPath",
    }
)
_NEVER = "stack"
# Where an OTLP span's event keeps everything the span said: its messages again, as their JSON texts. A
# field outside it is the better snippet (`hit_of_event`).
_RESTATED = "otel"
# The span a find shows an event's hit in: a prompt loop's events count as the span the tree shows.
SHOWN_SPAN = "CASE WHEN type LIKE 'promptAgent:%' THEN coalesce(parent_span_id, span_id) ELSE span_id END"


@dataclass(frozen=True, slots=True)
class FindHit:
    """One field of one span that holds the text: the snippet is `before`, the match, `after`."""

    span_id: str
    call_id: str | None
    field: str
    before: str
    match: str
    after: str

    @property
    def snippet(self) -> str:
        return self.before + self.match + self.after

    @property
    def restated(self) -> bool:
        """Whether the field is in an OTLP span's `otel` block, which repeats what the span said."""
        return self.field.split(".", 1)[0] == _RESTATED

    def to_json(self) -> dict[str, Any]:
        return {"spanId": self.span_id, "callId": self.call_id, "field": self.field, "snippet": self.snippet}


@dataclass(frozen=True)
class Found:
    """A find's hits, and how much of the run it saw: a find reads `MAX_SCANNED` events at most (a
    phrase of words every block holds would otherwise be a read of every body: 1.5 s a million
    events)."""

    hits: list[FindHit]
    searched: int  # events of the run (by id) read or ruled out by the words, or all of them
    events: int

    @property
    def complete(self) -> bool:
        return self.searched >= self.events


def find_in_run(store: Store, trace_id: str, text: str, *, limit: int = 50, max_scanned: int = MAX_SCANNED) -> Found:
    """The first `limit` fields of run `trace_id`'s spans that hold `text` (case-insensitive): spans
    named so first, then the run's events in order (`max_scanned` of them read at most), a field of a
    span once. `NotFoundError` when there is no such run."""
    needle = text.strip().lower()
    with store.reader() as cursor:
        rows = cursor.execute(
            "SELECT first_event_id, last_event_id FROM runs WHERE trace_id = ?", [trace_id]
        ).fetchall()
        if not rows:
            raise NotFoundError(f"no run {trace_id!r} in this DevTool")
        first, last = int(rows[0][0]), int(rows[0][1])
        span = last - first + 1
        ranges = _ranges(cursor, trace_id, needle, first, last) if needle else []
        if not ranges:
            return Found([], span, span)
        hits: dict[tuple[str, str], FindHit] = {}
        for named in spans_named(store, trace_id, text.strip(), limit=limit):
            start = named.name.lower().find(needle)
            if start >= 0:  # `lower()` may change a name's length: then its match is not placed
                hit = _hit(named.span_id, named.call_id, "name", named.name, start, len(needle))
                hits[(named.span_id, "name")] = hit
        spellings = spellings_of(text.strip())
        read = scanned = 0
        seen = first  # the first id neither read nor ruled out by the words
        for low, end in _slices(ranges):
            high = min(end, low + max_scanned - scanned - 1)
            after = low
            while len(hits) < limit and read < MAX_READ and after <= high:
                page = _events_holding(cursor, trace_id, spellings, after, high, min(PAGE, MAX_READ - read))
                for span_id, call_id, body, _ in page:
                    for path, value, start in _matches(orjson.loads(body), needle):
                        hits.setdefault((span_id, path), _hit(span_id, call_id, path, value, start, len(needle)))
                read += len(page)
                after = high + 1 if len(page) < PAGE else page[-1][3] + 1
            seen = after
            scanned += after - low
            if len(hits) >= limit or read >= MAX_READ or after <= end:
                break  # the page is full, or the slice was not read whole: `max_scanned` or `MAX_READ`
        else:
            seen = last + 1
    found = list(hits.values())[:limit]
    return Found(found, span if len(found) >= limit else seen - first, span)


def _ranges(cursor: Any, trace_id: str, needle: str, first: int, last: int) -> list[tuple[int, int]]:
    """The ranges of the run's event ids, in order, whose events may hold `needle`: the blocks that hold
    each of its words, or (a run with events stored before the blocks, a text of no word) all of it
    if the run's words may hold it."""
    found = words(needle)
    since = int(cursor.execute("SELECT event_id FROM search_blocks_since").fetchall()[0][0])
    if not found or first < since:
        return [(first, last)] if _may_hold(cursor, trace_id, found) else []
    params: dict[str, object] = {"trace": trace_id, **{f"w{i}": word for i, word in enumerate(found)}}
    held = " AND ".join(f"bool_or(contains(term, $w{i}))" for i in range(len(found)))
    # Only the rows of a word are grouped: grouping all of a run's (1.6 million at 10M events) took twice as long.
    any_word = " OR ".join(f"contains(term, $w{i})" for i in range(len(found)))
    blocks = cursor.execute(
        f"SELECT block FROM search_blocks WHERE trace_id = $trace AND ({any_word}) "
        f"GROUP BY block HAVING {held} ORDER BY block",
        params,
    ).fetchall()
    ranges: list[tuple[int, int]] = []
    for (block,) in blocks:
        low, high = max(first, block << BLOCK_BITS), min(last, ((block + 1) << BLOCK_BITS) - 1)
        if ranges and ranges[-1][1] + 1 >= low:
            ranges[-1] = (ranges[-1][0], high)
        else:
            ranges.append((low, high))
    return ranges


def _slices(ranges: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """`ranges` cut into slices read one after the other: the first `FIRST_SLICE` ids of each, then
    `SLICE_GROWTH` times more at each step."""
    for low, high in ranges:
        size = FIRST_SLICE
        while low <= high:
            end = min(high, low + size - 1)
            yield low, end
            low, size = end + 1, size * SLICE_GROWTH


def _may_hold(cursor: Any, trace_id: str, found: list[str]) -> bool:
    """Whether each of the words `found` is part of one of the run's words (else no event holds them)."""
    if not found:
        return True  # punctuation only: the index has no word to ask for
    params: dict[str, object] = {"trace": trace_id, **{f"w{i}": word for i, word in enumerate(found)}}
    # One row per word held: every word must be.
    union = " UNION ALL ".join(
        f"SELECT count(*) > 0 FROM search_terms WHERE trace_id = $trace AND contains(term, $w{i})"
        for i in range(len(found))
    )
    return all(held for (held,) in cursor.execute(union, params).fetchall())


def spellings_of(text: str) -> list[str]:
    """How `text` is looked for in the events' JSON: as typed, lowercase, capitalised, uppercase. Reading
    a big run's bodies is mostly their decompression (1.9 s a million events); an ILIKE or a `lower()`
    of each tripled it, where a few exact `contains` add a tenth. A text written in other mixes of
    case ("iPhone" for "iphone") is missed; the hits themselves are matched without case."""
    lower = text.lower()
    return list(dict.fromkeys([text, lower, lower[:1].upper() + lower[1:], text.upper()]))


def _events_holding(
    cursor: Any, trace_id: str, spellings: list[str], low: int, high: int, most: int
) -> list[tuple[str, str, str, int]]:
    """The first `most` events with ids `low`..`high` of the run whose JSON holds one of `spellings`, in order, as
    (the span the tree shows them in, its callId, the body, its id). The first in the table's order,
    which is their ids' (a load and an append insert in id order): an ORDER BY would read every body
    of the slice before the first row (0.2 s at 64k events), a LIMIT alone stops at the page."""
    return sorted(
        (
            (row[0], row[1], row[2], row[3])
            for row in cursor.execute(
                f"""
            SELECT {SHOWN_SPAN}, call_id, body, event_id
            FROM events
            WHERE event_id BETWEEN $low AND $high AND trace_id = $trace AND type NOT LIKE 'model:call:%'
              AND list_bool_or([contains(body, s) FOR s IN $spellings])
            LIMIT $most
            """,
                {"low": low, "high": high, "trace": trace_id, "spellings": spellings, "most": most},
            ).fetchall()
        ),
        key=lambda row: row[3],
    )


def _matches(value: Any, needle: str, path: str = "") -> Iterator[tuple[str, str, int]]:
    """Each string of a parsed event that holds `needle`, as (its path, the string, where the match starts)."""
    if isinstance(value, str):
        start = value.lower().find(needle)
        if start >= 0:
            yield path, value, start
    elif isinstance(value, dict):
        for key, item in value.items():
            if (not path and key in _SKIPPED) or key == _NEVER:
                continue
            yield from _matches(item, needle, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _matches(item, needle, f"{path}[{index}]")


def hit_of_event(span_id: str, call_id: str | None, event: Any, needle: str) -> FindHit | None:
    """The first field of a parsed event that holds `needle` (lowercase), one outside its `otel` block
    first, or None."""
    restated = None
    for path, value, start in _matches(event, needle):
        hit = _hit(span_id, call_id, path, value, start, len(needle))
        if not hit.restated:
            return hit
        restated = restated or hit
    return restated


def _hit(span_id: str, call_id: str | None, field: str, text: str, start: int, length: int) -> FindHit:
    """The hit with `CONTEXT` characters of `text` either side of its match (… where cut)."""
    end = start + length
    before = text[max(0, start - CONTEXT) : start]
    after = text[end : end + CONTEXT]
    return FindHit(
        span_id,
        call_id,
        field,
        ("…" if start > CONTEXT else "") + before,
        text[start:end],
        after + ("…" if end + CONTEXT < len(text) else ""),
    )
