"""Options several subcommands share, and where the DevTool keeps its database by default."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from devtool.cli.errors import CliError
from devtool.store.database import DEFAULT_MEMORY_LIMIT

if TYPE_CHECKING:
    from devtool.store import Store


def data_home() -> Path:
    """Where the DevTool keeps its files: `$XDG_DATA_HOME/devtool` (~/.local/share/devtool by default)."""
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "devtool"


def default_db_path() -> Path:
    """`$DEVTOOL_DB`, else `$XDG_DATA_HOME/devtool/devtool.duckdb` (~/.local/share by default)."""
    if env := os.environ.get("DEVTOOL_DB"):
        return Path(env)
    return data_home() / "devtool.duckdb"


def add_db_option(parser: argparse.ArgumentParser, *, memory_limit: str | None = None) -> None:
    """`--db` and `--memory-limit`, whose default is `memory_limit` if given, else the store's."""
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        metavar="PATH",
        help="the DuckDB file to use (default: $DEVTOOL_DB, else ~/.local/share/devtool/devtool.duckdb)",
    )
    parser.add_argument(
        "--memory-limit",
        default=memory_limit,
        metavar="SIZE",
        help="the most memory DuckDB may use, beyond which it spills to <db>.tmp "
        f"(default {memory_limit or DEFAULT_MEMORY_LIMIT}; e.g. 512MiB, 4GiB)",
    )


def require_web_extra() -> None:
    """The DevTool commands need the `web` extra; an agent-only install does not have it."""
    try:
        import duckdb  # noqa: F401
        import starlette  # noqa: F401
    except ImportError as exc:
        raise CliError(f"{exc.name} is not installed: pip install 'devtool[web]'") from exc


def open_store(args: argparse.Namespace) -> Store:
    """The store at --db (or the default), or a one-line CliError saying why it cannot open."""
    require_web_extra()
    from devtool.store import Store, StoreError

    # What a store writes (its DuckDB files and their WALs, the server file, exports) holds agents'
    # prompts and data: readable by this user only, whatever umask the shell had.
    from devtool.store.private_files import private_files

    private_files()
    try:
        limit = getattr(args, "memory_limit", None)
        return Store(args.db or default_db_path(), **({"memory_limit": limit} if limit else {}))
    except StoreError as exc:
        raise CliError(str(exc)) from exc
