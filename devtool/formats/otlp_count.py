"""How many spans (or log records) an OTLP request holds, counted before it is decoded, so that one
holding more than a server takes is refused before the work grows with it.

A gzipped request of 92 KiB can hold 625,000 spans (each a few dozen bytes of ids and times), and
decoding them all took 3.7 s and ~600 MB before the count was checked (issue 42). In protobuf the
count is read off the wire: an `ExportTraceServiceRequest` and an `ExportLogsServiceRequest` have
the same shape (field 1 of the request, the resources; field 2 of each, the scopes; field 2 of
each scope, the spans or records), so walking the tags and lengths of those three levels, and
skipping every other field unread, counts them; it stops once past the limit. In JSON the parsed
request's lists are counted, scope by scope, before any span is read.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# The path of a span (or log record) in the request: its field number at each level.
_PATH = (1, 2, 2)
_LENGTH_DELIMITED = 2
_FIXED = {1: 8, 5: 4}  # wire type: bytes


def wire_count(data: bytes, limit: int) -> int:
    """The spans or log records in the serialized request `data`, or `limit + 1` once there are more than
    `limit`. A body that is not well-formed protobuf is counted as far as it reads (its decoding says
    what is wrong with it)."""
    found = 0
    resource, scope, item = _PATH
    try:
        for start, end in _fields(data, 0, len(data), resource):
            for scope_start, scope_end in _fields(data, start, end, scope):
                for _ in _fields(data, scope_start, scope_end, item):
                    found += 1
                    if found > limit:
                        return found
    except IndexError:  # cut short
        pass
    return found


def _fields(data: bytes, at: int, end: int, wanted: int) -> Iterator[tuple[int, int]]:
    """Where the values of the length-delimited field `wanted` of the message `data[at:end]` are."""
    while at < end:
        key, at = _varint(data, at)
        wire = key & 7
        if wire == _LENGTH_DELIMITED:
            size, at = _varint(data, at)
            if at + size > end:
                return
            if key >> 3 == wanted:
                yield at, at + size
            at += size
        elif wire == 0:
            _, at = _varint(data, at)
        elif wire in _FIXED:
            at += _FIXED[wire]
        else:
            return  # groups (long deprecated) or not protobuf: decoding says so


def _varint(data: bytes, at: int) -> tuple[int, int]:
    number = shift = 0
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7
        if shift > 63:
            raise IndexError("a varint of more than ten bytes")


def json_count(document: Any, keys: tuple[str, str, str], limit: int) -> int:
    """The spans or log records of a parsed JSON request (`keys`: the lists' names, resources first),
    or `limit + 1` once there are more than `limit`. What is not of the request's shape is not counted
    (reading the request says what is wrong with it)."""
    found = 0
    resources, scopes, items = keys
    for resource in _list(document, resources):
        for scope in _list(resource, scopes):
            found += len(_list(scope, items))
            if found > limit:
                return limit + 1
    return found


def _list(holder: Any, key: str) -> list[Any]:
    value = holder.get(key) if isinstance(holder, dict) else None
    return value if isinstance(value, list) else []
