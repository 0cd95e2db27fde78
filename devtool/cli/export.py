"""`devtool export`: a run or a snapshot as a file a teammate loads into their own DevTool.

    devtool export TRACE_ID [-o FILE]           the run's events, gzip JSONL (`devtool load` reads it)
    devtool export TRACE_ID --format otlp       the run as OTLP JSON with GenAI attributes, one request
                                                a line (Jaeger, Tempo, Phoenix; `devtool load` reads it)
    devtool export TRACE_ID --format perfetto   the run as Chrome trace-event JSON (Perfetto UI opens it)
    devtool export --snapshot ID [-o FILE]      the snapshot's JSON (`run_with(snapshot=...)` takes it;
                                                the Snapshots page and `POST /snapshots` load it)

`-o -` writes to stdout. An existing file is not overwritten without `--force`. The file is written
beside its final name and renamed into place, so a failed export leaves nothing half-written.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from devtool.cli.errors import CliError
from devtool.cli.options import add_db_option, open_store

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
        "-o", "--output", metavar="FILE", help="where to write (default: a name made from the id; - is stdout)"
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
    store = open_store(args)
    from devtool.store import NotFoundError
    from devtool.store.export import export_run, export_run_otlp, export_run_perfetto, export_snapshot

    writers = {"devtool": export_run, "otlp": export_run_otlp, "perfetto": export_run_perfetto}
    try:
        if args.snapshot:
            if args.format != "devtool":
                raise CliError("--format is for runs; a snapshot is exported as its JSON document")
            chunks: Iterable[bytes] = [export_snapshot(store, args.snapshot)]
            default = f"snapshot-{_safe(args.snapshot)[:12]}.json"
        else:
            chunks = writers[args.format](store, args.trace_id)
            default = f"{_safe(args.trace_id)[:80]}{SUFFIXES[args.format]}"
        destination = args.output or default
        if destination == "-":
            for chunk in chunks:
                sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
            return 0
        size = _write(Path(destination), chunks, force=args.force)
    except NotFoundError as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close()
    print(f"wrote {destination} ({size:,} bytes)", file=sys.stderr)
    return 0


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
