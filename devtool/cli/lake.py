"""The lake on the command line: `--lake`/`--lake-data` for `serve`, `publish` and `load`, and
`devtool publish RUN...`.

`devtool publish RUN... --lake CATALOG --lake-data PATH_OR_URL` publishes runs of the local store
(by their ids or the short ids the UI shows; `--all`: every finished run not published yet) to the
team's lake, one line per run; a run the lake holds already adds nothing. `--compact` merges the
lake's small files afterwards. `devtool load --lake ... RUN...` copies runs from the lake into the
local store. Both need the database to themselves: a `devtool serve` that owns it publishes its
finished runs itself and opens lake runs when asked.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import TYPE_CHECKING, Any

from devtool.cli.errors import CliError
from devtool.cli.options import add_db_option, default_db_path, open_store
from devtool.cli.server_file import running_server

if TYPE_CHECKING:
    from devtool.store import Store
    from devtool.store.lake import Lake


def add_lake_options(parser: argparse.ArgumentParser, *, serve: bool = False, env: bool = True) -> None:
    """`--lake`, `--lake-data`, `--lake-name` (and for `serve`, `--lake-compact-every` and
    `--lake-copy-chunk`); `env`: their defaults from $DEVTOOL_LAKE and $DEVTOOL_LAKE_DATA (not for
    `load`, whose FILES they would turn into run ids)."""
    parser.add_argument(
        "--lake",
        metavar="CATALOG",
        default=(os.environ.get("DEVTOOL_LAKE") or None) if env else None,
        help="the team's DuckLake catalog: 'postgres:host=HOST dbname=DB' (or a PATH.ducklake file); "
        "default $DEVTOOL_LAKE, which keeps a password out of `ps`",
    )
    parser.add_argument(
        "--lake-data",
        metavar="PATH_OR_URL",
        default=(os.environ.get("DEVTOOL_LAKE_DATA") or None) if env else None,
        help="where the lake's Parquet files go: a shared folder or an s3:// URL (default $DEVTOOL_LAKE_DATA)",
    )
    parser.add_argument(
        "--lake-name",
        metavar="NAME",
        default=socket.gethostname()[:64] or "devtool",
        help="the name runs are published under (default: this machine's host name)",
    )
    if serve:
        parser.add_argument(
            "--lake-compact-every",
            type=float,
            default=3600.0,
            metavar="SECONDS",
            help="merge the lake's small files this often (default 3600; 0: never)",
        )
        parser.add_argument(
            "--lake-copy-chunk",
            type=int,
            default=None,
            metavar="EVENTS",
            help="copy a run opened from the lake this many events at a time after its first screen "
            "(default 10,000): a link to a span not here yet waits for one such part",
        )


def attach(store: Store, args: argparse.Namespace) -> Lake | None:
    """The lake the options name, attached to `store` (None without `--lake`); a CliError in one line."""
    if args.lake is None:
        if args.lake_data is not None:
            raise CliError("--lake-data needs --lake: the catalog (postgres:host=HOST dbname=DB) the lake is in")
        return None
    from devtool.store.lake import COPY_CHUNK, LakeError, attach_lake, lake_config

    chunk = getattr(args, "lake_copy_chunk", None)  # a `serve` option only
    if chunk is None:
        chunk = COPY_CHUNK
    try:
        return attach_lake(store, lake_config(args.lake, args.lake_data, args.lake_name, copy_chunk=chunk))
    except LakeError as exc:
        raise CliError(str(exc)) from None


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("publish", help="publish runs to the team's lake")
    parser.add_argument("runs", nargs="*", metavar="RUN", help="run ids (or the short ids the UI shows)")
    parser.add_argument("--all", action="store_true", help="every finished run not published yet")
    parser.add_argument("--compact", action="store_true", help="then merge the lake's small files")
    add_db_option(parser)
    add_lake_options(parser)
    parser.set_defaults(run=run_publish)


def run_publish(args: argparse.Namespace) -> int:
    if args.lake is None and args.lake_data is None:
        raise CliError(
            "publish needs --lake CATALOG and --lake-data PATH_OR_URL (or $DEVTOOL_LAKE and $DEVTOOL_LAKE_DATA)"
        )
    if not (args.runs or args.all or args.compact):
        raise CliError("name the runs to publish (RUN...), or --all, or --compact")
    store = _own_store(args, "publish")
    try:
        lake = attach(store, args)
        assert lake is not None  # --lake or --lake-data was given: attach raised for --lake-data alone
        return _publish(store, lake, args)
    finally:
        store.close()


def _publish(store: Store, lake: Lake, args: argparse.Namespace) -> int:
    from devtool.store import NotFoundError, StoreError
    from devtool.store.lake import compact, publish_run, unpublished_runs
    from devtool.store.queries.run_ids import resolve_run

    failed = 0
    runs: list[str] = []
    for given in args.runs:
        try:
            runs.append(resolve_run(store, given))
        except (NotFoundError, ValueError) as exc:
            print(f"devtool publish: error: {exc}", file=sys.stderr)
            failed += 1
    if args.all:
        runs.extend(trace for trace in unpublished_runs(store, limit=1_000_000) if trace not in runs)
    added = 0
    for trace_id in runs:
        try:
            done = publish_run(store, lake, trace_id)
        except StoreError as exc:
            print(f"devtool publish: error: {trace_id}: {exc}", file=sys.stderr)
            failed += 1
            continue
        added += done.events
        said = "already in the lake, nothing added" if done.already else f"{done.events:,} events published"
        print(f"{trace_id}: {said}", flush=True)
    print(f"{len(runs)} runs published ({added:,} events added) to {lake.config.shown}")
    if args.compact:
        made = compact(store)
        print(f"compacted: {made.merged:,} files merged into {made.created:,}, {made.deleted:,} old files deleted")
    return 2 if failed else 0


def load_from_lake(args: argparse.Namespace) -> int:
    """`devtool load --lake CATALOG --lake-data PATH RUN...`: copy runs from the lake into the store."""
    from devtool.store.lake import LakeError, open_run

    store = _own_store(args, "load")
    failed = 0
    try:
        lake = attach(store, args)
        assert lake is not None
        for given in args.files:
            trace_id = str(given)
            try:
                result = open_run(store, lake, trace_id)
            except LakeError as exc:
                print(f"devtool load: error: {exc}", file=sys.stderr)
                failed += 1
                continue
            if result is None:
                print(f"devtool load: error: no run {trace_id!r} in the lake {lake.config.shown}", file=sys.stderr)
                failed += 1
            elif result.already_loaded or not result.events:
                print(f"{trace_id}: in the store already, nothing added")
            else:
                print(f"{trace_id}: {result.events:,} events, {result.spans:,} spans from the lake")
    finally:
        store.close()
    return 2 if failed else 0


def _own_store(args: argparse.Namespace, command: str) -> Store:
    server = running_server(args.db or default_db_path())
    if server is not None:
        raise CliError(
            f"the DevTool at {server.url} has this database open: it publishes its finished runs and opens lake runs "
            f"itself when started with --lake; stop it to {command} from the command line"
        )
    return open_store(args)
