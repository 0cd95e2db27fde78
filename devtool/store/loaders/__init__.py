"""The file formats the store loads, and telling them apart by content (never by file name).

`detect(source)` refuses what is not worth a loader's time with a message saying what the file is
(empty, binary, an archive, a database, a single JSON object ...), then asks each loader in
`LOADERS` whether the file's first bytes and first object are its format. A file of JSON-ish lines
that no loader claims goes to the TraceEvent JSONL loader, whose scan names its bad lines.
"""

from __future__ import annotations

from typing import Any

import orjson

from devtool.store.errors import LoadError
from devtool.store.files import SourceFile
from devtool.store.loaders.base import Inserted, Loader, Reading, Sample
from devtool.store.loaders.journals import JournalJsonl
from devtool.store.loaders.otlp import OtlpJsonl
from devtool.store.loaders.traces import TraceArray, TraceJsonl
from devtool.store.scan import BOM, JSON_SPACE

LOADERS: tuple[Loader, ...] = (TraceJsonl(), TraceArray(), JournalJsonl(), OtlpJsonl())
FALLBACK: Loader = LOADERS[0]

_MAGIC = (
    (b"PK\x03\x04", "a zip archive"),
    (b"\x89PNG", "a PNG image"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"%PDF", "a PDF document"),
    (b"\x7fELF", "an executable"),
    (b"\xff\xfe", "UTF-16 text: save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text: save it as UTF-8"),
)
_SNIFF_LINES = 20
_WHOLE_OBJECT_LIMIT = 64 << 20

__all__ = ["FALLBACK", "LOADERS", "Inserted", "Loader", "Reading", "Sample", "detect"]


def detect(source: SourceFile) -> Loader:
    """The loader for `source`, or a `LoadError` saying why no loader will do."""
    if source.size == 0:
        raise LoadError(source.path, "is empty: nothing to load")
    what = _binary(source.head)
    if what is not None:
        raise LoadError(source.path, f"is {what}, not a trace or a journal")
    text = source.head.removeprefix(BOM).lstrip(JSON_SPACE)
    if not text:
        if source.size <= len(source.head):
            raise LoadError(source.path, "holds only blank lines: nothing to load")
        return FALLBACK
    whole = source.size <= len(source.head)
    sample = Sample(text[:1], _first_object(text, whole), text)
    for loader in LOADERS:
        if loader.claims(sample):
            return loader
    if sample.first_object is not None:
        keys = ", ".join(sorted(sample.first_object)[:8]) or "none"
        raise LoadError(
            source.path,
            f"is neither a trace nor a journal: its first object has keys {keys} (a TraceEvent has type, "
            "timestamp, trace; a journal entry has entry_id, process_id, timestamp, entry_type; an OTLP request "
            "has resourceSpans)",
        )
    whole_object = _whole_object(source)
    if whole_object is not None:
        # One long line (longer than the head read to sniff) can still be one event or one entry.
        for loader in LOADERS:
            if loader.claims(Sample(b"{", whole_object, text)):
                return loader
        raise LoadError(source.path, _single_object(whole_object))
    return FALLBACK


def _binary(head: bytes) -> str | None:
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return what
    if head[8:12] == b"DUCK":
        return "a DuckDB database"
    # A NUL in the first line means binary; later, it is one bad line (a crash can zero-fill a tail).
    nul = head.split(b"\n", 1)[0].find(b"\x00")
    if nul >= 0:
        return f"binary (a NUL byte at offset {nul})"
    decoded = head[: len(head) - 3].decode("utf-8", errors="replace") if len(head) > 3 else ""
    if decoded and (decoded.count("\ufffd") + decoded.count("\x00")) > len(decoded) // 10:
        return "binary (mostly not UTF-8 text)"
    return None


def _first_object(text: bytes, whole: bool) -> dict[str, Any] | None:
    lines = text.split(b"\n")
    if not whole:
        lines = lines[:-1]  # the head may end inside a line
    for line in [line for line in lines if line.strip(JSON_SPACE)][:_SNIFF_LINES]:
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _whole_object(source: SourceFile) -> dict[str, Any] | None:
    """The file's content when all of it is one JSON object (on one line or pretty-printed)."""
    if source.size > _WHOLE_OBJECT_LIMIT or not source.head.removeprefix(BOM).lstrip(JSON_SPACE).startswith(b"{"):
        return None
    try:
        value = orjson.loads(source.read_all().removeprefix(BOM))
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _single_object(value: dict[str, Any]) -> str:
    """What to say when the file is one JSON object that is neither an event nor an entry."""
    if {"processId", "root", "provenance"} <= value.keys():
        return "is an AgentSnapshot, not a trace: load the trace it was made from"
    keys = ", ".join(sorted(value)[:8])
    return f"is a single JSON object (keys {keys}), not JSONL events, a JSON array of events or a journal"
