"""JSON values: the strict check, deep copies, canonical bytes and the content hash.

Only real JSON (dict with str keys, list, str, int, finite float, bool, None) is journaled, so a
replay hands back exactly what was recorded: a tuple, a set, a dataclass or NaN would come back as
something else, so they are not JSON here. Anything else becomes a tombstone in the journal and a
described placeholder in events.

The content hash is SHA-256 over canonical JSON (keys sorted at every level, no whitespace, UTF-8),
as the design fixes it: collision-resistant, because a collision would replay the wrong answer.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Final, TypeAlias

import orjson

JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None

_SCALARS = (str, bool, int, type(None))


class NotJSONError(ValueError):
    """A value is not JSON; the message says where (`$.path`) and what it is."""


class JsonText(bytes):
    """A JSON value kept as its text (UTF-8 bytes) where only a deep copy reads it (a frame's journal,
    read by `Frame.to_snapshot`): `copy.deepcopy` gives the value, parsed. One object for the garbage
    collector, where the parsed value is a dozen containers that would live as long as the run (a
    recorded SDK request's response: BENCHMARKS.md, issue 38)."""

    __slots__ = ()

    def __deepcopy__(self, memo: dict[int, Any]) -> JSON:
        return orjson.loads(memoryview(self))  # type: ignore[no-any-return]  # (orjson takes no bytes subclass)


# orjson refuses what it would otherwise write as something else (a subclass of str, int, dict or list,
# a dataclass, a date); what it still writes differently (a tuple as a list, NaN as null, a UUID or an
# Enum as its value) does not read back equal, and so goes the slow way.
STRICT_JSON_OPTION: Final = (
    orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
)


def json_copy(value: Any, path: str = "$") -> JSON:
    """A deep copy of `value` if it is strictly JSON, else `NotJSONError` naming the first bad spot."""
    if type(value) in _SCALARS:
        return value  # type: ignore[no-any-return]
    # Written and read back by orjson, a copy is made in C; if it reads back equal, it is the copy.
    try:
        copied = orjson.loads(orjson.dumps(value, option=STRICT_JSON_OPTION))
    except (orjson.JSONEncodeError, orjson.JSONDecodeError):
        pass  # not JSON, an integer beyond 64 bits, a string orjson will not write, too deep
    else:
        if copied == value:
            return copied  # type: ignore[no-any-return]
    try:
        return _copy(value)
    except _NotJSON:
        pass
    _where_not_json(value, path)  # the same walk, naming paths: raises
    raise AssertionError("unreachable: _copy and _where_not_json disagree")  # pragma: no cover


class _NotJSON(Exception):
    """`_copy` met something that is not JSON; where is for `_where_not_json` to say."""


def _copy(value: Any) -> JSON:
    # The hot path (every event field, journal entry and request body passes here): no path strings
    # built, scalars in containers taken without a call.
    kind = type(value)
    if kind in _SCALARS:
        return value  # type: ignore[no-any-return]
    if kind is dict:
        copied: dict[str, JSON] = {}
        for key, item in value.items():
            if type(key) is not str:
                raise _NotJSON
            copied[key] = item if type(item) in _SCALARS else _copy(item)
        return copied
    if kind is list:
        return [item if type(item) in _SCALARS else _copy(item) for item in value]
    if kind is float and math.isfinite(value):
        return value  # type: ignore[no-any-return]
    raise _NotJSON


def _where_not_json(value: Any, path: str) -> None:
    """`NotJSONError` naming the first spot of `value` that is not JSON (none if it is all JSON)."""
    kind = type(value)
    if kind in _SCALARS:
        return
    if kind is float:
        if math.isfinite(value):
            return
        raise NotJSONError(f"{path} is {value!r}, which JSON cannot hold")
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise NotJSONError(f"{path} has a {type(key).__name__} key {key!r}; JSON keys are strings")
            _where_not_json(item, f"{path}.{key}")
        return
    if kind is list:
        for index, item in enumerate(value):
            _where_not_json(item, f"{path}[{index}]")
        return
    raise NotJSONError(f"{path} is a {kind.__module__}.{kind.__qualname__}, not a JSON value")


def is_json(value: Any) -> bool:
    try:
        json_copy(value)
    except NotJSONError:
        return False
    return True


def describe(value: Any) -> JSON:
    """`value` as JSON for an event or a page: itself when it is JSON, else a marked description."""
    try:
        return json_copy(value)
    except NotJSONError as exc:
        return {"$notJson": str(exc), "$repr": _short_repr(value)}


def kind_of(value: Any) -> str:
    """How a JSON value is called in a message: `a string`, `an array`, `null`, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def canonical_json(value: Any) -> bytes:
    """Keys sorted at every level, no whitespace, UTF-8. Raises `NotJSONError` for non-JSON."""
    json_copy(value)
    return _sorted_json(value)


def content_hash(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of `value`."""
    return hashlib.sha256(canonical_json(value)).hexdigest()


def content_hash_of_json(value: JSON) -> str:
    """`content_hash` of a value already known to be JSON (a `json_copy`), without checking it again."""
    return hashlib.sha256(_sorted_json(value)).hexdigest()


def _sorted_json(value: Any) -> bytes:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError as exc:  # Python's JSON takes an integer of any size; ours stops at 64 bits
        raise NotJSONError(f"$ cannot be written as canonical JSON: {exc}") from None


def _short_repr(value: Any, limit: int = 200) -> str:
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not break the run that records it
        text = f"<{type(value).__name__}: repr failed: {exc}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def where_not_json(text: bytes, error: orjson.JSONDecodeError) -> tuple[int, int, str]:
    """Where a JSON text stops being JSON, for a person: its 1-based line and column (in characters),
    and what stands there (at most 30 characters, quoted; "cut short" when the text ends first), in
    place of the parser's own words (`expected 'true'`)."""
    decoded = text.decode("utf-8", errors="replace")  # orjson's position counts characters, not bytes
    pos = min(max(error.pos, 0), len(decoded))
    before = decoded[:pos]
    line = before.count("\n") + 1
    column = pos - (before.rfind("\n") + 1) + 1
    found = decoded[pos : pos + 30].split("\n", 1)[0]
    shown = "".join(c if c.isprintable() else "·" for c in found)
    return line, column, f"“{shown}…”" if len(found) == 30 else (f"“{shown}”" if shown else "cut short")
