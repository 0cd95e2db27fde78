"""`devtool load FILES...`: load traces and journals into the store, with a summary.

Each file is loaded on its own, all or nothing: a bad file is reported (one line on stderr) and the
others still load; the exit code is 2 if any file failed. Files of 8 MiB or more get a progress bar
of bytes read on stderr when it is a terminal (`--progress` forces it, `--no-progress` hides it).
`devtool serve FILES...` loads its files through `load_files` too.

When a `devtool serve` owns the database (DuckDB lets one process write a file), the files are
loaded by that server instead (`devtool.cli.server_file` finds it; it reads them from their paths on
this machine), with the same lines and the same exit code, and its pages show them at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from devtool.cli.errors import CliError
from devtool.cli.lake import add_lake_options, load_from_lake
from devtool.cli.options import add_db_option, default_db_path, open_store, require_web_extra
from devtool.cli.server_file import RunningServer, running_server

if TYPE_CHECKING:
    from devtool.store import LoadResult, Store

BAR_FROM_BYTES = 8 << 20
BAR_WIDTH = 30


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("load", help="load trace and journal files into the store")
    parser.add_argument(
        "files",
        nargs="+",
        type=Path,
        metavar="FILES",
        help="TraceEvent JSONL or JSON, journal JSONL (with --lake: the ids of runs in the lake)",
    )
    add_db_option(parser)
    add_load_options(parser)
    add_lake_options(parser, env=False)
    parser.set_defaults(run=run)


def add_load_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bad-lines",
        choices=("reject", "skip"),
        default="reject",
        help="a file with bad lines: reject it whole (default), or load its good lines and list the bad",
    )
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: for large files, when stderr is a terminal)",
    )


def run(args: argparse.Namespace) -> int:
    require_web_extra()
    if args.lake is not None or args.lake_data is not None:
        if args.lake is None:
            raise CliError("--lake-data needs --lake: the catalog (postgres:host=HOST dbname=DB) the lake is in")
        return load_from_lake(args)
    server = running_server(args.db or default_db_path())
    if server is not None:
        print(f"devtool load: the DevTool at {server.url} has this database open: loading through it", file=sys.stderr)
        if args.memory_limit:
            print(
                f"devtool load: --memory-limit {args.memory_limit} is not used: the server loads within its own "
                "limit (devtool serve --memory-limit)",
                file=sys.stderr,
            )
        totals = load_through(server, args.files, bad_lines=args.bad_lines, out=sys.stdout)
    else:
        store = open_store(args)
        try:
            totals = load_files(
                store, args.files, bad_lines=args.bad_lines, progress=args.progress, out=sys.stdout, command="load"
            )
        finally:
            store.close()
    print(totals.summary(), file=sys.stdout)
    return 2 if totals.failed else 0


@dataclass
class Totals:
    """What a `load_files` call did, over all its files."""

    files: int = 0
    loaded: int = 0
    already: int = 0
    failed: int = 0
    events: int = 0
    spans: int = 0
    entries: int = 0
    bad_lines: int = 0
    traces: set[str] = field(default_factory=set)
    processes: set[str] = field(default_factory=set)

    def add(self, result: LoadResult) -> None:
        if result.already_loaded:
            self.already += 1
            return
        self.loaded += 1
        self.events += result.events
        self.spans += result.spans
        self.entries += result.journal_entries
        self.bad_lines += result.bad_lines
        self.traces.update(result.traces)
        self.processes.update(result.processes)

    def summary(self) -> str:
        from devtool.store.load import counted

        parts = [
            counted(self.events, "event"),
            counted(self.spans, "span"),
            counted(len(self.traces), "trace"),
            counted(self.entries, "journal entry", "journal entries"),
            counted(len(self.processes), "journal"),
        ]
        tail = [f"{counted(self.already, 'file')} already loaded"] if self.already else []
        if self.bad_lines:
            tail.append(f"{counted(self.bad_lines, 'bad line')} skipped")
        tail.append(counted(self.failed, "error"))
        return f"loaded {self.loaded} of {counted(self.files, 'file')}: {', '.join(parts)}; {', '.join(tail)}"


def load_files(
    store: Store, paths: Sequence[Path], *, bad_lines: str, progress: bool | None, out: TextIO, command: str
) -> Totals:
    """Load each file, one line per file on `out` and per failure or bad line on stderr."""
    from devtool.store import BadLines, BadLinesError, StoreError, load_file

    totals = Totals(files=len(paths))
    for path in paths:
        bar = _Bar(path) if _wants_bar(path, progress) else None
        began = time.perf_counter()
        try:
            result = load_file(store, path, bad_lines=BadLines(bad_lines), progress=bar)
        except StoreError as exc:
            if bar:
                bar.clear()
            _refused(totals, str(exc), isinstance(exc, BadLinesError), command)
            continue
        if bar:
            bar.clear()
        _loaded(totals, path, result, time.perf_counter() - began, out)
    return totals


def load_through(server: RunningServer, paths: Sequence[Path], *, bad_lines: str, out: TextIO) -> Totals:
    """Load each file through the running server that owns the database, saying what `load_files` says."""
    from devtool.store import LoadResult
    from devtool.store.errors import LineProblem

    totals = Totals(files=len(paths))
    for path in paths:
        began = time.perf_counter()
        try:
            with server.open("api/v1/load", {"files": [str(path.absolute())], "bad_lines": bad_lines}) as response:
                (answer,) = json.loads(response.read())["results"]
        except (OSError, ValueError, KeyError) as exc:
            raise CliError(f"the DevTool at {server.url} could not load {path}: {_reason(exc)}") from None
        if "error" in answer:
            _refused(totals, answer["error"], bool(answer.get("bad_lines")), "load")
            continue
        found = answer["loaded"]
        result = LoadResult(
            **{
                **found,
                "path": path,
                "traces": tuple(found["traces"]),
                "processes": tuple(found["processes"]),
                "problems": tuple(LineProblem(**problem) for problem in found["problems"]),
            }
        )
        _loaded(totals, path, result, time.perf_counter() - began, out)
    return totals


def _refused(totals: Totals, message: str, bad_lines: bool, command: str) -> None:
    totals.failed += 1
    hint = " (--bad-lines skip loads the good lines)" if bad_lines else ""
    print(f"devtool {command}: error: {message}{hint}", file=sys.stderr)


def _loaded(totals: Totals, path: Path, result: LoadResult, seconds: float, out: TextIO) -> None:
    for problem in result.problems:
        at = f"{problem.line}:{problem.column}" if problem.column is not None else f"{problem.line}"
        where = f"{path}:{at}" if problem.line is not None else f"{path}: element {problem.element}"
        print(f"{where}: skipped: {problem.message}", file=sys.stderr)
    if result.bad_lines > len(result.problems):
        print(f"{path}: and {result.bad_lines - len(result.problems)} more bad lines skipped", file=sys.stderr)
    totals.add(result)
    print(_describe(result, seconds), file=out, flush=True)


def _reason(exc: BaseException) -> str:
    """What went wrong with a request to the server, in a line: its own error message when it gave one."""
    if isinstance(exc, urllib.error.HTTPError):
        try:
            return str(json.loads(exc.read())["error"])
        except (ValueError, KeyError, TypeError):
            return f"it answered {exc.code}"
    return str(getattr(exc, "reason", None) or exc)


def _describe(result: LoadResult, seconds: float) -> str:
    from devtool.store.load import counted

    if result.already_loaded and not (result.events or result.journal_entries):
        return f"{result.path}: every event in it is stored already, nothing added"
    if result.already_loaded:
        return f"{result.path}: already loaded ({result.held()}), nothing added"
    if not result.journal:
        traces = ", ".join(t[:12] for t in result.traces[:3]) + (" …" if len(result.traces) > 3 else "")
        what = f"{counted(result.events, 'event')}, {counted(result.spans, 'span')}, trace {traces}"
    else:
        what = f"{counted(result.journal_entries, 'new journal entry', 'new journal entries')}, process " + ", ".join(
            result.processes
        )
    skipped = f", {counted(result.bad_lines, 'bad line')} skipped" if result.bad_lines else ""
    return f"{result.path}: {what}{skipped} ({result.bytes / 1e6:,.1f} MB in {seconds:.1f} s)"


def _wants_bar(path: Path, progress: bool | None) -> bool:
    if progress is not None:
        return progress
    try:
        return sys.stderr.isatty() and path.stat().st_size >= BAR_FROM_BYTES
    except OSError:
        return False


class _Bar:
    """One line on stderr, redrawn in place: phase, bar, megabytes, percent."""

    def __init__(self, path: Path) -> None:
        self.name = path.name if len(path.name) <= 32 else path.name[:31] + "…"
        self.drawn = ""

    def __call__(self, phase: str, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        filled = int(BAR_WIDTH * fraction)
        line = (
            f"{self.name} {phase:<7} [{'#' * filled}{'.' * (BAR_WIDTH - filled)}] "
            f"{done / 1e6:,.0f}/{total / 1e6:,.0f} MB {fraction:4.0%}"
        )
        if line != self.drawn:
            sys.stderr.write("\r" + line)
            sys.stderr.flush()
            self.drawn = line

    def clear(self) -> None:
        if self.drawn:
            sys.stderr.write("\r" + " " * len(self.drawn) + "\r")
            sys.stderr.flush()
            self.drawn = ""
