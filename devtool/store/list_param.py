"""A list as one statement parameter: its JSON text, made a list again in SQL (`from_json`).

DuckDB 1.5.5's Python client converts a list parameter element by element and, for each, tries to
import pandas twice; where pandas is not installed (the DevTool does not need it), each try searches
`sys.path` again: about 90 µs an element, whatever its size. A live batch's 1,024 event texts took
90 ms to bind, where the insert's operators take 12 ms, and a derive's 86 trace ids 8 ms. Written as
one JSON text (orjson: 1.7 ms for those texts) and read back by `from_json`, they take 6 ms and
0.5 ms (BENCHMARKS.md, "OTLP ingest on DuckDB 1.5.5"). A JSON text holds any string as it is, so
this is exact for every list, where joining by a separator would need one no element holds. Numbers
and booleans go the same way (a rewind index's nodes were written 50,000 at a time as six lists:
19 s for 5,000 nodes under load, 0.3 s as JSON texts). With pandas marked absent (`no_pandas.py`)
the import searches are gone, and the element-by-element conversion still costs about 11 µs an
element: 1,000 strings bind in 11 ms as a list, 1.3 ms as one JSON text.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson


def values(items: Iterable[object]) -> str:
    """The value of a parameter that `of` reads: `items` (strings, numbers, booleans, None, or lists of
    them) as a JSON array."""
    return orjson.dumps(list(items)).decode()


def of(name: str, sql_type: str = "VARCHAR") -> str:
    """SQL for parameter `$name` (written by `values`) as a list of `sql_type`."""
    return f"from_json(${name}, '[\"{sql_type}\"]')"
