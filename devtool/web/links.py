"""Links to the DevTool's pages, built from ids that may hold any text.

Trace ids and process ids come from files a user loads, so they can hold `/`, `?`, `#`, `%`, spaces or
markup: every id is percent-encoded as one path segment, and query strings are encoded too. Autoescape
then makes the link safe in an attribute; this makes it go where it says.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode

QueryValue = str | int | float | None | Iterable[str]


def with_query(path: str, query: Mapping[str, QueryValue] | None = None) -> str:
    """`path?query`, leaving out empty values; a list value repeats its key."""
    pairs: list[tuple[str, str]] = []
    for key, value in (query or {}).items():
        if value is None or value == "":
            continue
        if isinstance(value, str | int | float):
            pairs.append((key, str(value)))
        else:
            pairs.extend((key, item) for item in value)
    return f"{path}?{urlencode(pairs)}" if pairs else path


def segment(value: str) -> str:
    """`value` as one path segment: nothing in it is read as a separator."""
    return quote(value, safe="")


def run_url(trace_id: str, *path: str, **query: QueryValue) -> str:
    """The run page of `trace_id` (`span=`, `start=`, `end=` select within it), or a part of it (`path`)."""
    return with_query("/".join(["/runs", segment(trace_id), *map(segment, path)]), query)


def process_url(process_id: str, *path: str, **query: QueryValue) -> str:
    """The page of process journal `process_id` (`entry=`, `open=` select within it), or a part of it (`path`)."""
    return with_query("/".join(["/processes", segment(process_id), *map(segment, path)]), query)
