"""OTLP's scalar encodings read strictly: AnyValue as JSON, hex ids, nanosecond times, enum codes.

The OTLP/JSON encoding (protobuf's JSON mapping, with hex ids) and the protobuf decoder both land
here, so a span reads the same whichever way it came. Each reader returns the value or raises
`ValueError` with the reason; the caller adds where.

- AnyValue: the first of its fields that is set (not null). `stringValue`/`boolValue`/`intValue`/
  `doubleValue`/`bytesValue` become the JSON scalar (int64 from a number or a decimal string; a double
  that is NaN or infinite becomes null, which JSON can hold; bytes stay base64 text); `arrayValue` a
  list and `kvlistValue` an object (its keys must be unique, as OTLP says, like a span's
  attributes); an empty AnyValue null. An array or kvlist inside an array or kvlist (`MAX_DEPTH`) is
  kept in its OTLP encoding (`{"arrayValue": {"values": [...]}}`): span attributes are scalars or
  arrays of them, and reading deeper in SQL costs more than such rare values are worth; nothing is lost.
- Times are read as integer nanoseconds and given as milliseconds with microsecond precision
  (`ns // 1000 / 1000`), the precision of the DevTool's own events, computed the same way in SQL.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from devtool.core.jsonvalue import JSON, kind_of

MAX_DEPTH = 2
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1

# The AnyValue fields, in the order they are looked for (a well-formed value has exactly one).
VALUE_KEYS = ("stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue")
NON_FINITE = ("NaN", "Infinity", "-Infinity")

SPAN_KINDS = ("unspecified", "internal", "server", "client", "producer", "consumer")
STATUS_CODES = ("unset", "ok", "error")
STATUS_UNSET = 0
STATUS_ERROR = 2

_DECIMAL = re.compile(r"-?[0-9]+")
_UNSIGNED = re.compile(r"[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]*")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")


def any_value(value: Any, depth: int = 1) -> JSON:
    """An AnyValue in its JSON encoding, as the JSON value it holds (null or missing: null)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"an AnyValue is an object, not {kind_of(value)}")
    for key in VALUE_KEYS:
        if value.get(key) is not None:
            return _field(key, value[key], depth)
    return None


def _field(key: str, item: Any, depth: int) -> JSON:
    if key == "stringValue" or key == "bytesValue":
        if not isinstance(item, str):
            raise ValueError(f"{key} is {kind_of(item)}, not a string")
        return item
    if key == "boolValue":
        if not isinstance(item, bool):
            raise ValueError(f"boolValue is {kind_of(item)}, not true or false")
        return item
    if key == "intValue":
        return int64(item, "intValue")
    if key == "doubleValue":
        return double(item)
    if not isinstance(item, dict):
        raise ValueError(f"{key} is {kind_of(item)}, not an object")
    values = item.get("values", [])
    if not isinstance(values, list):
        raise ValueError(f"{key}.values is {kind_of(values)}, not an array")
    if depth >= MAX_DEPTH:
        return {key: item}
    if key == "arrayValue":
        return [any_value(element, depth + 1) for element in values]
    return key_values(values, depth + 1)


def key_values(items: Any, depth: int = 1) -> dict[str, JSON]:
    """A list of KeyValue (null: none) as an object; a key given twice is an error."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise ValueError(f"attributes are {kind_of(items)}, not an array")
    found: dict[str, JSON] = {}
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"an attribute is {kind_of(item)}, not an object with key and value")
        key = item.get("key")
        if not isinstance(key, str):
            raise ValueError(f"an attribute's key is {kind_of(key)}, not a string")
        if key in found:
            raise ValueError(f"attribute {key!r} is given twice")
        found[key] = any_value(item.get("value"), depth)
    return found


def int64(value: Any, what: str) -> int:
    """A signed 64-bit integer given as a JSON number or a decimal string."""
    number = _integer(value, what, _DECIMAL)
    if not INT64_MIN <= number <= INT64_MAX:
        raise ValueError(f"{what} {value!r} is out of the 64-bit range")
    return number


def nanos(value: Any, what: str) -> int:
    """A time in nanoseconds since the epoch (fixed64): a positive number or decimal string."""
    number = _integer(value, what, _UNSIGNED)
    if not 0 < number <= UINT64_MAX:
        raise ValueError(f"{what} {value!r} is not a time after the epoch")
    return number


def _integer(value: Any, what: str, pattern: re.Pattern[str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and pattern.fullmatch(value):
        return int(value)
    raise ValueError(f"{what} is {kind_of(value)} {value!r:.40}, not an integer")


def double(value: Any) -> float | None:
    """A double given as a JSON number, or "NaN"/"Infinity"/"-Infinity" (null here: JSON has no such numbers)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if value in NON_FINITE:
        return None
    raise ValueError(f"doubleValue is {kind_of(value)} {value!r:.40}, not a number")


def ms(time_ns: int) -> float:
    """Nanoseconds since the epoch as milliseconds, to the microsecond."""
    return time_ns // 1000 / 1000


def hex_id(value: Any, size: int, what: str, *, optional: bool = False) -> str:
    """A trace id (`size` 16 bytes) or span id (8) as lower-case hex; "" for a missing optional one.

    OTLP/JSON writes ids in hex; protobuf's generic JSON mapping writes bytes in base64, so that is
    read too (the lengths cannot be confused: 32 or 16 hex digits, 24 or 12 base64 characters).
    """
    if value is None or value == "":
        if optional:
            return ""
        raise ValueError(f"no {what}")
    text = ""
    if isinstance(value, str) and len(value) == 2 * size and _HEX.fullmatch(value):
        text = value.lower()
    elif isinstance(value, str) and len(value) == base64_size(size) and _BASE64.fullmatch(value):
        text = base64.b64decode(value).hex()
    if len(text) != 2 * size:
        raise ValueError(f"{what} {value!r:.40} is not {2 * size} hex digits")
    if text.strip("0") == "":
        raise ValueError(f"{what} is all zeros, which OTLP calls invalid")
    return text


def base64_size(size: int) -> int:
    return (size + 2) // 3 * 4


def enum_code(value: Any, names: tuple[str, ...], prefix: str, what: str) -> int:
    """An enum given as its number or its protobuf name (`SPAN_KIND_CLIENT`); absent is 0."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(names):
        return value
    if isinstance(value, str) and value.startswith(prefix) and value[len(prefix) :].lower() in names:
        return names.index(value[len(prefix) :].lower())
    raise ValueError(f"{what} {value!r:.40} is not one of 0..{len(names) - 1}")
