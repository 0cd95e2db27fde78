"""The loader interface: how a file format says it is the one, loads in bulk, and names its bad lines.

A loader is three things. `claims(sample)` looks at the first bytes and the first JSON object of a
file (never its name) and says whether the format is its own. `insert(...)` loads the whole file
through DuckDB's reader inside the caller's transaction, raising `duckdb.Error` at the first bad
record. `scan(...)` is the slow path after such a failure: it names every bad line or element and
copies the good ones, as JSONL, for a second `insert` when the policy is to load the good lines.
An insert of events adds their words to the search index too (`search.index_source`).

Adding a format is a class with these three methods in `LOADERS` (`otlp.py` is the latest).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

import duckdb

from devtool.store.scan import Scan


@dataclass(frozen=True, slots=True)
class Sample:
    """What kind detection looks at: the first non-blank byte, the first line that is a JSON object, and
    the file's first bytes (blanks and a BOM stripped), for formats whose lines outgrow the head."""

    first_byte: bytes
    first_object: dict[str, Any] | None
    head: bytes = b""


@dataclass(frozen=True, slots=True)
class Inserted:
    """What one insert added to the store."""

    events: int = 0
    spans: int = 0
    traces: tuple[str, ...] = ()
    journal_entries: int = 0
    processes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Reading:
    """How DuckDB's reader takes a file: as JSONL whatever the format (`jsonl`: a scan's copy of the good
    lines), and the longest JSON object it accepts (`max_object_size`, in bytes)."""

    jsonl: bool
    max_object_size: int


class Loader(Protocol):
    kind: str  # stored as `sources.kind`
    description: str  # what the format is called in messages

    def claims(self, sample: Sample) -> bool:
        """Whether a file that starts like `sample` is in this format."""
        ...

    def insert(self, conn: duckdb.DuckDBPyConnection, path: str, source_id: int, reading: Reading) -> Inserted:
        """Load the file at `path` (as JSONL when `reading.jsonl`, else in this loader's own format) in bulk."""
        ...

    def scan(self, source: BinaryIO, good: BinaryIO | None) -> Scan:
        """Name every bad line or element of `source`; write the good ones to `good` as JSONL."""
        ...
