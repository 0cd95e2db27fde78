"""Finding the bad lines of a file, once DuckDB has refused it: which ones, and what is wrong.

This is the slow path, taken only for a file that failed the bulk load: a streaming pass in Python
over its lines (or its array's elements) that names each bad one, and, for the policy that loads the
good lines, copies those to a new JSONL file for the bulk loader to read instead. Memory stays
bounded by the longest line; a line longer than `MAX_LINE` is reported without being held.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import orjson

from devtool.core.jsonvalue import kind_of, where_not_json
from devtool.store.errors import LineProblem

CHUNK = 1 << 20
# A line is one event, journal entry or OTLP request, and none may be over 64 MiB (the event gate's
# `MAX_EVENT_BYTES` is this): a longer one is a bad line, named with its number, and never handed to
# DuckDB, which would need many times its size in memory to read it (and refuse the whole file).
MAX_LINE = 64 << 20
MAX_KEPT = 1000  # problems described in full; beyond that they are only counted
BOM = b"\xef\xbb\xbf"
JSON_SPACE = b" \t\r\n"

Rule = Callable[[Any], str | None]


@dataclass
class Scan:
    """What a scan found: the first `MAX_KEPT` problems, how many in all, and how many good items."""

    problems: list[LineProblem] = field(default_factory=list)
    bad: int = 0
    good: int = 0

    def report(self, problem: LineProblem) -> None:
        self.bad += 1
        if len(self.problems) < MAX_KEPT:
            self.problems.append(problem)


def scan_jsonl(source: BinaryIO, rule: Rule, good: BinaryIO | None = None) -> Scan:
    """Check every non-blank line of `source` against `rule`; copy the good ones to `good`."""
    scan = Scan()
    for number, line, length in _lines(source):
        if line is None:
            too_long = f"is {length / (1 << 20):,.0f} MiB long, over the {MAX_LINE >> 20} MiB limit of one line"
            scan.report(LineProblem(too_long, number))
            continue
        text = line.strip(JSON_SPACE)
        if number == 1 and text.startswith(BOM):
            text = text[len(BOM) :].strip(JSON_SPACE)
        if not text:
            continue
        problem = _problem(text, rule)
        if problem is not None:
            message, column = problem
            scan.report(LineProblem(message, number, column=column))
            continue
        scan.good += 1
        if good is not None:
            good.write(text + b"\n")
    return scan


def scan_array(source: BinaryIO, rule: Rule, good: BinaryIO | None = None) -> Scan:
    """Check a JSON array file element by element; copy the good elements to `good` as JSONL."""
    scan = Scan()
    data = source.read()
    if data.startswith(BOM):
        data = data[len(BOM) :]
    problem = _text_problem(data)
    if problem is None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            line, column, found = where_not_json(data, exc)
            scan.report(LineProblem(f"not JSON: {found}", line=line, column=column))
            return scan
    if problem is None and not isinstance(value, list):
        problem = f"not a JSON array of events but {kind_of(value)}"
    if problem is not None:
        scan.report(LineProblem(problem, line=1))
        return scan
    for index, element in enumerate(value):
        element_problem = rule(element)
        if element_problem is not None:
            scan.report(LineProblem(element_problem, element=index))
            continue
        scan.good += 1
        if good is not None:
            good.write(orjson.dumps(element) + b"\n")
    return scan


def _problem(text: bytes, rule: Rule) -> tuple[str, int | None] | None:
    """What is wrong with one line, and the column where it stops being JSON (if that is what is wrong)."""
    problem = _text_problem(text)
    if problem is not None:
        return problem, None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        _, column, found = where_not_json(text, exc)
        return f"not JSON: {found}", column
    problem = rule(value)
    return None if problem is None else (problem, None)


def _text_problem(text: bytes) -> str | None:
    try:
        text.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte 0x{text[exc.start]:02x} at column {exc.start + 1})"
    nul = text.find(b"\x00")
    if nul >= 0:
        return f"binary data (a NUL byte at column {nul + 1})"
    return None


def _lines(source: BinaryIO) -> Iterator[tuple[int, bytes | None, int]]:
    """(line number, line without its newline or None when over MAX_LINE, its length)."""
    number = 0
    parts: list[bytes] = []
    length = 0
    while chunk := source.read(CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            length += end - start
            if length > MAX_LINE:
                yield number, None, length
            else:
                yield number, b"".join([*parts, chunk[start:end]]) if parts else chunk[start:end], length
            parts, length, start = [], 0, end + 1
        length += len(chunk) - start
        if length <= MAX_LINE:
            parts.append(chunk[start:])
        else:
            parts = []
    if length:
        yield number + 1, (b"".join(parts) if length <= MAX_LINE else None), length
