"""An OTLP JSON file mapped a slice at a time, each slice's lines shared by as many readers as threads.

DuckDB maps the lines one reader hands on on one thread, and a reader hands on up to 2,048 lines
at a time: an exporter's line is ~0.4 MB (512 spans), so one reader maps the whole file on one core,
and readers of big shares hold more than DuckDB's memory (two readers of a 1M-span file ran out of
1 GiB; thirteen too). So the file is cut, at line ends, into pieces of about `PIECE_BYTES`, each
copied to a file of its own in a scratch folder (a reader cannot start in the middle of a file, and
one that counts its way there reads every line before it again): one statement maps `threads` pieces,
a reader a piece, into a temporary table, and the pieces are deleted as they are mapped. The
events then go into `events` in one insert. A line's number (its events' ids follow it) is its
piece's first line's number in the file plus its place in the piece.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from devtool.store.otlp_macros import q
from devtool.store.otlp_sql import events_relation

PIECE_BYTES = 24 << 20
MAPPED = "otlp_mapped"


@dataclass(frozen=True, slots=True)
class Piece:
    """Bytes `start` to `end` of the file, whose first line is line `first` (from 1) of it."""

    start: int
    end: int
    first: int


def pieces(path: str, readers: int) -> list[Piece]:
    """The file at `path` cut after the first line end past each `PIECE_BYTES` bytes, or in as many
    pieces as `readers` when that is smaller; its lines counted."""
    size = max(1, min(PIECE_BYTES, -(-os.path.getsize(path) // readers)))
    found: list[Piece] = []
    start, line = 0, 1
    with open(path, "rb") as file:
        while True:
            block = file.read(size)
            if not block:
                break
            if not block.endswith(b"\n"):
                block += file.readline()
            found.append(Piece(start, start + len(block), line))
            start, line = start + len(block), line + block.count(b"\n")
    return found


@contextmanager
def copies(path: str, group: list[Piece], scratch: Path) -> Iterator[list[str]]:
    """The pieces of `group` copied to files of their own under `scratch`, deleted afterwards."""
    names = []
    try:
        with open(path, "rb") as source:
            for piece in group:
                name = scratch / f"piece-{piece.first}.jsonl"
                names.append(str(name))
                with open(name, "wb") as out:
                    os.copy_file_range(source.fileno(), out.fileno(), piece.end - piece.start, piece.start)
        yield names
    finally:
        for copied in names:
            Path(copied).unlink(missing_ok=True)


def _lines(names: list[str], group: list[Piece], max_object_size: int) -> str:
    readers = [
        f"(SELECT json AS body, ordinality + {piece.first - 1} AS line FROM read_json_objects({q(name)}, "
        f"format='newline_delimited', maximum_object_size={int(max_object_size)}) WITH ORDINALITY)"
        for name, piece in zip(names, group, strict=True)
    ]
    return "(" + " UNION ALL ".join(readers) + ")"


def threads(conn: duckdb.DuckDBPyConnection) -> int:
    """DuckDB's threads on `conn`: the readers a statement has."""
    return int(conn.execute("SELECT current_setting('threads')").fetchall()[0][0])


def map_file(conn: duckdb.DuckDBPyConnection, path: str, max_object_size: int) -> str:
    """Map the OTLP JSON file at `path` into the temporary table `MAPPED` (`body`, `n`); returns its name.

    `install_macros` must have run on `conn`. A failed mapping raises `duckdb.Error` (the caller's
    transaction then drops the table).
    """
    readers = threads(conn)
    cut = pieces(path, readers)
    conn.execute(f"CREATE OR REPLACE TEMP TABLE {MAPPED} (body VARCHAR, n BIGINT)")
    # The pieces' rows each carry their id: their order in the table does not matter.
    conn.execute("SET preserve_insertion_order = false")
    with tempfile.TemporaryDirectory(prefix="devtool-otlp-") as scratch:
        for at in range(0, len(cut), readers):
            group = cut[at : at + readers]
            with copies(path, group, Path(scratch)) as names:
                relation = events_relation(_lines(names, group, max_object_size))
                conn.execute(f"INSERT INTO {MAPPED} SELECT body, n FROM {relation}")
    conn.execute("RESET preserve_insertion_order")
    return MAPPED
