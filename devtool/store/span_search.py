"""A keyed run's span search (the run page's find box): what the span keys hold for it, and how it is read.

Made with the rest of a big run's span keys (`span_keys_build.key_runs`, from `BUILD`), each a narrow table:

- `span_text`: each span the frame tree shows with what the search looks in (its name, agent id,
  callId, span id and error, lowercased, one after the other), in time order, with its name and kind
  beside it for the order of hits: a search reads one column instead of five;
- `span_labels`: each name and kind the run's shown spans have, with how many have it: hits are
  ranked by their name and kind alone (`navigation.span_hit_ranks`), so a text many names hold
  ("worker" in ten million events) is answered from the spans of the best-ranked labels, in time
  order, without reading the text of the others or ranking each hit;
- `span_grams`: the pieces of one, two and three characters of that text (each run of digits read as
  one `0`; span ids of hex digits are left out, as any piece of those may be in one), found in the
  few distinct shapes of the run's names, agent ids, callIds and errors: a text with a piece the run
  has not is in none of its spans, so the search that would find nothing reads a few hundred rows.

A text that few spans hold (a span id, a callId) reads `span_text` whole: its text column, about a
quarter of a second of CPU at ten million events.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import duckdb

from devtool.store.span_sql import shown

# Between the fields of a span's searched text: a character no search asks for (`search` then scans).
SEPARATOR = 31

# The run's text as `span_grams` holds it: each run of digits one `0` (`worker:12` holds what `worker:0` does).
_DIGITS = "regexp_replace({text}, '[0-9]+', '0', 'g')"
_HEX = "[0-9a-f]*"
# The pieces of one to three characters of `{text}`: select `_PIECES` from `_PIECES_FROM`.
_PIECES = "substr({text}, i::INTEGER, n::INTEGER)"
_PIECES_FROM = "range(1, 4) AS ns(n), range(1, length({text}) + 1) AS r(i) WHERE i + n - 1 <= length({text})"

# Statements of a run's span keys' build (`span_keys_build`), in its transaction: `{traces}` is a
# table of the runs keyed now, already in `keyed_runs`.
BUILD = f"""
    INSERT INTO span_text
    SELECT k.run, s.start_ts, s.start_event_id, s.span_id,
           lower(concat_ws(chr({SEPARATOR}), s.name, s.agent_id, s.call_id, s.span_id, s.error)), s.name, s.kind
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND {shown("s")}
    ORDER BY k.run, s.start_ts, s.start_event_id;
    INSERT INTO span_labels
    SELECT k.run, s.name, s.kind, count(*)
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND {shown("s")}
    GROUP BY ALL;
    INSERT INTO span_grams
    WITH shown_spans AS (
        SELECT k.run, s.name, s.agent_id, s.call_id, s.error, s.span_id
        FROM spans s JOIN keyed_runs k USING (trace_id)
        WHERE s.trace_id IN (SELECT trace_id FROM {{traces}}) AND {shown("s")}
    ),
    shapes AS (
        SELECT run, t FROM (SELECT DISTINCT run, name, agent_id, error FROM shown_spans),
                           unnest([name, agent_id, error]) AS f(t)
        UNION SELECT DISTINCT run, {_DIGITS.format(text="call_id")} FROM shown_spans
        UNION SELECT DISTINCT run, span_id FROM shown_spans WHERE NOT regexp_full_match(lower(span_id), '{_HEX}')
    ),
    normal AS (SELECT DISTINCT run, {_DIGITS.format(text="lower(t)")} AS t FROM shapes WHERE t IS NOT NULL)
    SELECT DISTINCT run, {_PIECES.format(text="t")} FROM normal, {_PIECES_FROM.format(text="t")};
"""

_OF_RUNS = "run IN (SELECT run FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces}))"
FORGET = "".join(f"DELETE FROM {table} WHERE {_OF_RUNS};" for table in ("span_text", "span_labels", "span_grams"))


def search(
    cursor: duckdb.DuckDBPyConnection,
    run: int,
    text: str,
    *,
    ranks: tuple[str, str],
    prefix: str,
    limit: int,
    window: tuple[float, float],
) -> list[tuple[str, float]]:
    """The first `limit` shown spans of keyed run `run` whose name, agent id, callId, span id or error
    holds `text` (case-insensitive, without the separator), best first, as (span id, start). `ranks`:
    the rank of a hit by its name and by its kind (`navigation.span_hit_ranks`: SQL over `name` and
    `kind`, reading `$text` and `$prefix`, the LIKE-escaped `text%`), then the earliest first;
    `window`: the run's first and last instants.

    Hits are taken a rank at a time, best first, until the page is full. A rank's labels say which
    spans it holds: all those of a label whose name holds the text (no text read), or those of the
    other labels whose text holds it. Its earliest are read from the first 64th of the run, then the
    first 8th, then all of it, as far as it takes to fill the page (`span_text` is in time order, so
    DuckDB skips the row groups past the bound): a text many spans hold is answered from the first
    few row groups."""
    if _absent(cursor, run, text):
        return []
    by_name, by_kind = ranks
    labels = cursor.execute(
        f"""
        SELECT {by_name} AS named, {by_kind} AS kinded, name, kind, contains(lower(name), lower($text))
        FROM span_labels WHERE run = $run ORDER BY named, kinded
        """,
        {"run": run, "text": text, "prefix": prefix},
    ).fetchall()
    if any(named < 4 and not held for named, _, _, _, held in labels):
        # Ranked by its name but not found by it (case folding differs): rank every hit of the text.
        return _ranked(cursor, run, text, ranks, prefix, limit)
    held = [label for label in labels if label[0] < 4]
    found: list[tuple[str, float]] = []
    for _, rank in itertools.groupby(held, key=lambda label: label[:2]):
        where, params = _any_label([(name, kind) for _, _, name, kind, _ in rank])
        found += _earliest(cursor, run, where, params, limit - len(found), window)
        if len(found) >= limit:
            return found
    # The rest are found by their agent, callId, id or error: all of one rank by name, ranked by kind.
    above, params = _any_label([(name, kind) for _, _, name, kind, _ in held])
    rows = cursor.execute(
        f"""
        SELECT span_id, start_ts FROM span_text
        WHERE run = $run AND contains(text, lower($text)) AND NOT ({above})
        ORDER BY {by_kind}, start_ts, start_event_id LIMIT $limit
        """,
        {**params, "run": run, "text": text, "limit": limit - len(found)},
    ).fetchall()
    return found + [(span, start) for span, start in rows]


def named(
    cursor: duckdb.DuckDBPyConnection, run: int, text: str, *, limit: int, window: tuple[float, float]
) -> list[tuple[str, float]]:
    """The earliest `limit` shown spans of keyed run `run` whose name holds `text` (case-insensitive), as
    (span id, start): those of the labels whose name holds it, read as `search` reads a rank."""
    labels = cursor.execute(
        "SELECT name, kind FROM span_labels WHERE run = $run AND contains(lower(name), lower($text))",
        {"run": run, "text": text},
    ).fetchall()
    if not labels:
        return []
    where, params = _any_label(labels)
    return _earliest(cursor, run, where, params, limit, window)


def _earliest(
    cursor: duckdb.DuckDBPyConnection,
    run: int,
    where: str,
    params: dict[str, object],
    need: int,
    window: tuple[float, float],
) -> list[tuple[str, float]]:
    """The `need` earliest spans of the run's `span_text` that meet `where`, read from as little of the
    run's start as holds them."""
    first, last = window
    for share in (1 / 64, 1 / 8, None):
        bound = math.inf if share is None else first + (last - first) * share
        rows = cursor.execute(
            f"SELECT span_id, start_ts FROM span_text WHERE run = $run AND start_ts <= $bound AND ({where}) "
            "ORDER BY start_ts, start_event_id LIMIT $need",
            {**params, "run": run, "bound": bound, "need": need},
        ).fetchall()
        if len(rows) == need:
            break
    return [(span, start) for span, start in rows]


def _any_label(labels: Sequence[tuple[str, str]]) -> tuple[str, dict[str, object]]:
    """A condition on `span_text` for the spans of any of `labels` (name, kind), and its parameters."""
    if not labels:
        return "false", {}
    where = " OR ".join(f"(name = $name{i} AND kind = $kind{i})" for i in range(len(labels)))
    params: dict[str, object] = {}
    for i, (name, kind) in enumerate(labels):
        params |= {f"name{i}": name, f"kind{i}": kind}
    return where, params


def _ranked(
    cursor: duckdb.DuckDBPyConnection, run: int, text: str, ranks: tuple[str, str], prefix: str, limit: int
) -> list[tuple[str, float]]:
    """The first `limit` hits of `text`, each ranked by its label."""
    by_name, by_kind = ranks
    rows = cursor.execute(
        f"""
        SELECT t.span_id, t.start_ts FROM span_text t
        JOIN (SELECT name, kind, {by_name} AS named, {by_kind} AS kinded FROM span_labels WHERE run = $run) l
          USING (name, kind)
        WHERE t.run = $run AND contains(t.text, lower($text))
        ORDER BY l.named, l.kinded, t.start_ts, t.start_event_id LIMIT $limit
        """,
        {"run": run, "text": text, "prefix": prefix, "limit": limit},
    ).fetchall()
    return [(span, start) for span, start in rows]


def _absent(cursor: duckdb.DuckDBPyConnection, run: int, text: str) -> bool:
    """Whether `text` has a piece that no span of keyed run `run` has in its searched text (then no span
    holds it); a piece of hex digits may be in a span id, so it is never taken as absent."""
    query = f"({_DIGITS.format(text='lower($text)')})"
    rows = cursor.execute(
        f"""
        SELECT count(*)
        FROM (SELECT DISTINCT {_PIECES.format(text=query)} AS piece FROM {_PIECES_FROM.format(text=query)})
        WHERE NOT regexp_full_match(piece, '{_HEX}') AND piece NOT IN (SELECT gram FROM span_grams WHERE run = $run)
        """,
        {"text": text, "run": run},
    ).fetchall()
    return bool(rows[0][0])
