"""`devtool export`: a run or a snapshot as a file a teammate loads into their own DevTool.

    devtool export TRACE_ID [-o FILE]           the run's events as JSONL (`devtool load` reads it), gzip
                                                when FILE ends in .gz (the default name does)
    devtool export TRACE_ID --format otlp       the run as OTLP JSON with GenAI attributes, one request
                                                a line (Jaeger, Tempo, Phoenix; `devtool load` reads it)
    devtool export TRACE_ID --format perfetto   the run as Chrome trace-event JSON (Perfetto UI opens it)
    devtool export --snapshot ID [-o FILE]      the snapshot's JSON (`run_with(snapshot=...)` takes it;
                                                the Snapshots page and `POST /snapshots` load it)

Without `--db`, the run is looked for in the database `devtool serve` uses by default, then in the one
`devtool demo` uses; when it is in neither, the error names both. `-o -` writes to stdout (gzip for a
run, as the default name `<id>.trace.jsonl.gz`); `-o research.jsonl` writes plain JSONL. An existing
file is not overwritten without `--force`. The file is written
beside its final name and renamed into place, so a failed export leaves nothing half-written.

When a `devtool serve` owns the database, the export is read from that server (its export of the run
or the snapshot's JSON, the same bytes), which sees a consistent state of the store while it serves.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from devtool.cli.errors import CliError
from devtool.cli.options import add_db_option, default_db_path, open_store, require_web_extra
from devtool.cli.server_file import RunningServer, running_server

if TYPE_CHECKING:
    from devtool.store import Store

FORMATS = ("devtool", "otlp", "perfetto")
SUFFIXES = {"devtool": ".trace.jsonl.gz", "otlp": ".otlp.jsonl", "perfetto": ".perfetto.json"}


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "export", help="write a run (gzip JSONL, OTLP JSON or Perfetto JSON) or a snapshot (JSON) to a file"
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("trace_id", nargs="?", metavar="TRACE_ID", help="the run to export")
    target.add_argument("--snapshot", metavar="ID", help="export this snapshot instead")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write (default: a name made from the id; - is stdout); a run's events are gzip "
        "only when FILE ends in .gz",
    )
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default="devtool",
        help="a run as: devtool (its events, gzip JSONL; default), otlp (OTLP JSON), perfetto (Chrome trace JSON)",
    )
    parser.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    add_db_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    require_web_extra()
    if args.snapshot and args.format != "devtool":
        raise CliError("--format is for runs; a snapshot is exported as its JSON document")
    what = f"snapshot {args.snapshot!r}" if args.snapshot else f"run {args.trace_id!r}"
    looked: list[str] = []
    for db in _databases(args):
        chunks = _chunks(args, db)
        try:
            first = next(chunks, b"")
        except _Missing as missing:
            looked.append(str(missing))
            continue
        return _export(args, itertools.chain([first], chunks))
    where = " nor in ".join(looked)
    named = "" if args.snapshot else "; a run is named by its id or the first 4 or more characters of it"
    hint = "" if args.db else "; pass --db PATH for another database"
    raise CliError(f"no {what} in {where}{named}{hint}")


class _Missing(Exception):
    """The run or snapshot is not in this database (the next one is tried); says where it looked."""


def _databases(args: argparse.Namespace) -> list[Path]:
    """--db, else the databases `devtool serve` and `devtool demo` use by default (serve's first)."""
    if args.db:
        return [args.db]
    from devtool.cli.demo import default_demo_db

    return [default_db_path(), default_demo_db()]


def _chunks(args: argparse.Namespace, db: Path) -> Iterator[bytes]:
    """The export from `db` (through its running server, if one owns it); `_Missing` before any chunk."""
    server = running_server(db)
    if server is not None:
        if args.trace_id:
            args.trace_id = _resolved_by(server, args.trace_id, db)
        chunks = _from_server(server, args)
        try:
            first = next(chunks, b"")
        except _Missing:
            raise _Missing(f"{db} (asked the DevTool at {server.url}, which has it open)") from None
        print(
            f"devtool export: the DevTool at {server.url} has this database open: exporting through it", file=sys.stderr
        )
        yield first
        yield from chunks
        return
    if not db.exists():
        raise _Missing(f"{db} (no such file)")
    store = open_store(argparse.Namespace(db=db, memory_limit=args.memory_limit))
    try:
        yield from _from_store(store, args)
    finally:
        store.close()


def _from_store(store: Store, args: argparse.Namespace) -> Iterator[bytes]:
    from devtool.store import NotFoundError
    from devtool.store.export import export_run, export_run_otlp, export_run_perfetto, export_snapshot
    from devtool.store.queries.run_ids import AmbiguousRunError, resolve_run

    writers = {"devtool": export_run, "otlp": export_run_otlp, "perfetto": export_run_perfetto}
    try:
        if args.snapshot:
            yield export_snapshot(store, args.snapshot)
        else:
            yield from writers[args.format](store, resolve_run(store, args.trace_id))
    except NotFoundError:
        raise _Missing(str(store.path)) from None
    except AmbiguousRunError as exc:
        raise CliError(str(exc)) from None


# The running server's URL of each format's export (devtool/web/routes/run.py).
_SERVED = {"devtool": "export.jsonl.gz", "otlp": "export.otlp.jsonl", "perfetto": "export.perfetto.json"}


def _from_server(server: RunningServer, args: argparse.Namespace) -> Iterator[bytes]:
    """The export, read from the running server in chunks (the run's export in its format, or the snapshot's JSON)."""
    ident = quote(args.snapshot or args.trace_id, safe="")
    path = f"snapshots/{ident}.json" if args.snapshot else f"runs/{ident}/{_SERVED[args.format]}"
    try:
        with server.open(path) as response:
            while chunk := response.read(1 << 20):
                yield chunk
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            raise _Missing from None
        what = f"snapshot {args.snapshot!r}" if args.snapshot else f"run {args.trace_id!r}"
        raise CliError(f"the DevTool at {server.url} could not export {what}: it answered {exc.code}") from None
    except OSError as exc:
        raise CliError(f"the DevTool at {server.url} stopped answering: {getattr(exc, 'reason', exc)}") from None


def _resolved_by(server: RunningServer, given: str, db: Path) -> str:
    """The whole id of the run `given` (an id or the short id the UI shows) names, as the server knows it."""
    missing = _Missing(f"{db} (asked the DevTool at {server.url}, which has it open)")
    answer = server.json_of(f"api/v1/runs/{quote(given, safe='')}", not_found=missing)
    return str(answer["traceId"])


def _export(args: argparse.Namespace, chunks: Iterable[bytes]) -> int:
    if args.snapshot:
        default = f"snapshot-{_safe(args.snapshot)[:12]}.json"
    else:
        default = f"{_safe(args.trace_id)[:80]}{SUFFIXES[args.format]}"
    destination = args.output or default
    if destination == "-":
        for chunk in chunks:
            sys.stdout.buffer.write(chunk)
        sys.stdout.buffer.flush()
        return 0
    plain = args.format == "devtool" and not args.snapshot and not destination.endswith(".gz")
    size = _write(Path(destination), _gunzip(chunks) if plain else chunks, force=args.force)
    print(f"wrote {destination} ({size:,} bytes{', plain JSONL' if plain else ''})", file=sys.stderr)
    return 0


def _gunzip(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The run's gzip JSONL as plain JSONL, for an -o name that does not end in .gz."""
    inflate = zlib.decompressobj(wbits=31)  # gzip framing
    for chunk in chunks:
        yield inflate.decompress(chunk)
    yield inflate.flush()


def _write(path: Path, chunks: Iterable[bytes], *, force: bool) -> int:
    if path.exists() and not force:
        raise CliError(f"{path} exists: choose another -o FILE, or pass --force to overwrite it")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise CliError(f"cannot write into {path.parent}: {exc.strerror or exc}") from None
    size = 0
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                size += len(chunk)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return size


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "export"
