"""Journal entries: the record, the detail levels, the entry types, and the one-line JSON form on disk.

A `JournalEntry` is `entry_id, process_id, timestamp, entry_type, data`; on disk it is one JSON object
a line with the timestamp in ISO 8601 (the published library's layout, so journals move between the
two libraries unchanged). Reading is stricter than that library and never raises on a bad line:
`decode_line` either returns an entry or raises `MalformedEntryError` saying what is wrong, and the
callers skip the line with a warning.

Choices where the published library was silent or weak:
- A naive timestamp (no UTC offset) is read as UTC, so `since` filters never compare naive with aware.
- An entry stored without an id (or with `""`) gets the id the published library derives for it
  (uuid5 of its content), the same on every read, so it can still be a rewind target.
- `entry_id`, `process_id` and `entry_type` must be strings and `data` an object; a line where they
  are not is malformed rather than half-read.
- A crash can glue an unfinished line to the start of the next one; when a line does not parse but
  ends with a whole entry, that entry is recovered (and the line reported).
"""

from __future__ import annotations

import json
import os
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

import orjson

from devtool.core.jsonvalue import kind_of, where_not_json
from devtool.journal.errors import MalformedEntryError


class JournalLevel(StrEnum):
    """How much a process records: nothing, a recovery baseline, or every side effect."""

    NONE = "none"
    CHECKPOINT = "checkpoint"
    FULL = "full"


# The entry types this package and the published library write. Unknown types are kept and shown as
# they are; the order gives each known type its small code in the sidecar index (append only).
KNOWN_TYPES: tuple[str, ...] = (
    "state_transition",
    "trigger_event",
    "invocation_start",
    "invocation_result",
    "context_update",
    "tool_call",
    "tool_result",
    "checkpoint",
    "user_prompt",
    "assistant_message",
    "conversation_turn",
    "error",
    "restart",
    "rewind",
    "file_write",
    "file_change",
    "code_execution",
)

# How a rewind plan counts entries (the published buckets); other types count only in the total.
CONVERSATION_TYPES = frozenset(
    {"user_prompt", "assistant_message", "conversation_turn", "trigger_event", "invocation_result"}
)
CODE_TYPES = frozenset(
    {
        "tool_call",
        "tool_result",
        "file_write",
        "file_change",
        "code_execution",
        "context_update",
        "state_transition",
    }
)


class _RandomIds:
    """uuid4 strings from random bytes fetched a few kilobytes at a time.

    `uuid.uuid4()` asks the kernel for 16 bytes per id, a system call that costs more than the rest of
    an append in some sandboxes; ids are drawn from a pool instead (refilled by the same
    `os.urandom`, emptied in a forked child so parent and child never share ids).
    """

    _POOL = 16 * 256

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._next = 0
        os.register_at_fork(after_in_child=self._empty)

    def _empty(self) -> None:
        self._pool, self._next = b"", 0

    def __call__(self) -> str:
        with self._lock:
            if self._next >= len(self._pool):
                self._pool, self._next = os.urandom(self._POOL), 0
            raw = self._pool[self._next : self._next + 16]
            self._next += 16
        hexa = raw.hex()
        variant = "89ab"[int(hexa[16], 16) & 3]
        return f"{hexa[:8]}-{hexa[8:12]}-4{hexa[13:16]}-{variant}{hexa[17:20]}-{hexa[20:]}"


new_entry_id = _RandomIds()


def utc_now() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One record of a process journal. An empty id is replaced by a new one; a naive time is UTC."""

    entry_id: str = field(default_factory=new_entry_id)
    process_id: str = ""
    timestamp: datetime = field(default_factory=utc_now)
    entry_type: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.entry_id:
            object.__setattr__(self, "entry_id", new_entry_id())
        if self.timestamp.tzinfo is None:
            object.__setattr__(self, "timestamp", self.timestamp.replace(tzinfo=UTC))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the five fields, the timestamp in ISO 8601."""
        return {
            "entry_id": self.entry_id,
            "process_id": self.process_id,
            "timestamp": self.timestamp.isoformat(),
            "entry_type": self.entry_type,
            "data": self.data,
        }

    @classmethod
    def from_dict(cls, obj: object) -> JournalEntry:
        """Read the JSON form; raise `MalformedEntryError` naming the field when it is not an entry."""
        if not isinstance(obj, dict):
            raise MalformedEntryError(f"not a JSON object but {kind_of(obj)}")
        process_id = obj.get("process_id", "")
        entry_type = obj.get("entry_type", "")
        data = obj.get("data", {})
        if not isinstance(process_id, str):
            raise MalformedEntryError(f"process_id is {kind_of(process_id)}, not a string")
        if not isinstance(entry_type, str):
            raise MalformedEntryError(f"entry_type is {kind_of(entry_type)}, not a string")
        if not isinstance(data, dict):
            raise MalformedEntryError(f"data is {kind_of(data)}, not an object")
        raw_id = obj.get("entry_id")
        if raw_id is None or raw_id == "":
            entry_id = derived_entry_id(obj)
        elif isinstance(raw_id, str):
            entry_id = raw_id
        else:
            raise MalformedEntryError(f"entry_id is {kind_of(raw_id)}, not a string")
        return cls(entry_id, process_id, parse_timestamp(obj.get("timestamp")), entry_type, data)


def derived_entry_id(obj: dict[str, Any]) -> str:
    """The id the published library gives an entry stored without one: uuid5 of its content.

    The name must match that library byte for byte (its `json.dumps` spacing and ASCII escapes), or
    the same journal would have different rewind targets in the two libraries.
    """
    content = json.dumps(obj.get("data", {}), sort_keys=True, default=str)
    name = f"promptise-journal:{obj.get('process_id', '')}:{obj.get('timestamp')}:{obj.get('entry_type', '')}:{content}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def parse_timestamp(value: object) -> datetime:
    """An ISO 8601 timestamp as an aware datetime (naive ones are UTC)."""
    if not isinstance(value, str):
        raise MalformedEntryError("timestamp is missing" if value is None else f"timestamp is {kind_of(value)}")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise MalformedEntryError(f"timestamp {value[:40]!r} is not ISO 8601") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def encode_entry(entry: JournalEntry) -> bytes:
    """The entry as one line of JSON, newline included. A value that is not JSON is written as str()."""
    try:
        return orjson.dumps(entry.to_dict(), default=str, option=orjson.OPT_NON_STR_KEYS) + b"\n"
    except orjson.JSONEncodeError:
        # orjson refuses integers wider than 64 bits; the standard encoder writes them exactly.
        return json.dumps(entry.to_dict(), default=str, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


ENTRY_START = b'{"entry_id"'


@dataclass(frozen=True, slots=True)
class Decoded:
    """A line read back: the entry, and whether it had to be cut out of a line a crash had torn."""

    entry: JournalEntry
    salvaged: bool = False


def decode_line(line: bytes) -> Decoded:
    """Read one journal line (without its newline); raise `MalformedEntryError` if it holds no entry."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        salvaged = _salvage(line)
        if salvaged is None:
            raise MalformedEntryError(_json_problem(line, exc)) from None
        return Decoded(salvaged, salvaged=True)
    return Decoded(JournalEntry.from_dict(obj))


def _salvage(line: bytes) -> JournalEntry | None:
    """The whole entry at the end of a line whose start is the unfinished tail of another one."""
    start = line.find(ENTRY_START, 1)
    while start > 0:
        try:
            return JournalEntry.from_dict(orjson.loads(line[start:]))
        except (orjson.JSONDecodeError, MalformedEntryError):
            start = line.find(ENTRY_START, start + 1)
    return None


def _json_problem(line: bytes, exc: orjson.JSONDecodeError) -> str:
    if line.strip(b"\x00") == b"":
        return "only zero bytes (a crash left the file extended but unwritten)"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as bad:
        return f"invalid UTF-8 at byte {bad.start}"
    _, column, found = where_not_json(line, exc)
    return f"not JSON at column {column}: {found}"
