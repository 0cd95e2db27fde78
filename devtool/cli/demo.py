"""`devtool demo`: record the demo runs and the billing-ops incident, load them, and serve them.

The demo data is recorded once, with the real core library and a `ScriptedModel` (no network), into a
folder beside the demo database (`demo.duckdb` → `demo-data/`), then served exactly as
`devtool serve demo-data/*.jsonl` would serve it. Running the demo again serves the same data: the
files are already in the database (a file's content is loaded once), so nothing is duplicated.
`--fresh` records new data into a new database; it only ever deletes a demo database (one with its
data folder beside it), never a database of the user's own.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

from devtool.cli.errors import CliError
from devtool.cli.options import data_home, open_store
from devtool.cli.serve import DEFAULT_PORT
from devtool.store import store_files


def default_demo_db() -> Path:
    return data_home() / "demo.duckdb"


def data_folder(db: Path) -> Path:
    """Where the demo's recorded files live: beside its database."""
    return db.with_name(f"{db.stem}-data")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("demo", help="record demo runs and a process journal, then serve them")
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        metavar="PATH",
        help="the demo's DuckDB file (default: $XDG_DATA_HOME/devtool/demo.duckdb)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)")
    parser.add_argument("--open", action="store_true", help="open the DevTool in a browser")
    parser.add_argument("--fresh", action="store_true", help="record the demo data again, into a new demo database")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:  # refused before recording anything
        raise CliError(f"--port {args.port} is not a port number (0-65535)")
    db: Path = args.db or default_demo_db()
    folder = data_folder(db)
    if args.fresh:
        _forget(db, folder)
    files = _demo_files(folder)
    if not files:
        files = _record(folder)
    from devtool.cli import build_parser, serve

    serve_args = ["serve", "--db", str(db), "--host", args.host, "--port", str(args.port)]
    if args.open:
        serve_args.append("--open")
    return serve.run(build_parser().parse_args([*serve_args, *map(str, files)]))


def _demo_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def _record(folder: Path) -> list[Path]:
    from devtool.demo.generate import generate

    if folder.exists():
        # A recording that stopped half-way: it is ours, start it again.
        shutil.rmtree(folder)
    print(f"devtool demo: recording the demo runs into {folder}", file=sys.stderr, flush=True)
    try:
        return sorted(path for path in asyncio.run(generate(folder)) if path.suffix == ".jsonl")
    except OSError as exc:
        raise CliError(f"cannot write the demo data into {folder}: {exc.strerror or exc}") from exc


def _forget(db: Path, folder: Path) -> None:
    """Delete the demo database and its data, after making sure it is a demo database."""
    if db.exists() and not folder.is_dir():
        raise CliError(
            f"{db} is not a demo database (it has no {folder.name}/ beside it): --fresh only replaces "
            "the database `devtool demo` made; pick another --db"
        )
    if db.exists():
        # A server still using it would go on writing into a file that is no longer there.
        open_store(argparse.Namespace(db=db)).close()
    try:
        for path in store_files(db):
            path.unlink(missing_ok=True)
        if folder.exists():
            shutil.rmtree(folder)
    except OSError as exc:
        raise CliError(f"cannot remove the old demo data: {exc.strerror or exc} ({exc.filename})") from exc
