"""A list of strings as one statement parameter: its JSON text, made a list again in SQL (`from_json`).

DuckDB 1.5.5's Python client converts a list parameter element by element and, for each, tries to
import pandas twice; where pandas is not installed (the DevTool does not need it), each try searches
`sys.path` again: about 90 µs an element, whatever its size. A live batch's 1,024 event texts took
90 ms to bind, where the insert's operators take 12 ms, and a derive's 86 trace ids 8 ms. Written as
one JSON text (orjson: 1.7 ms for those texts) and read back by `from_json`, they take 6 ms and
0.5 ms (BENCHMARKS.md, "OTLP ingest on DuckDB 1.5.5"). A JSON text holds any string as it is, so
this is exact for every list, where joining by a separator would need one no element holds.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson


def texts(values: Iterable[str]) -> str:
    """The value of a parameter that `of` reads: `values` as a JSON array."""
    return orjson.dumps(list(values)).decode()


def of(name: str) -> str:
    """SQL for parameter `$name` (written by `texts`) as a VARCHAR[]."""
    return f"from_json(${name}, '[\"VARCHAR\"]')"
