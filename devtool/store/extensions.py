"""DuckDB's extensions, loaded from the PyPI packages that ship them, never downloaded at run time.

Each `duckdb-extension-NAME` package carries its binary under `extensions/v<duckdb version>/` in its
site-packages folder. DuckDB finds an extension's entry point by its file's name, and the postgres
package's file is `postgres.duckdb_extension` while its entry point is `postgres_scanner`'s: it is
loaded through a link of that name in a private folder of this user's temp directory.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from pathlib import Path

import duckdb

from devtool.store.errors import StoreError

# The name DuckDB knows an extension by, for the packages whose file says otherwise.
_ENTRY_NAMES = {"postgres": "postgres_scanner"}


class ExtensionMissingError(StoreError):
    """An extension whose package is not installed for this DuckDB version."""


def extension_path(name: str) -> Path:
    """The binary of extension `name` (`ducklake`, `postgres`, `fts`, `httpfs`) for this DuckDB."""
    package = f"duckdb_extension_{name}"
    spec = importlib.util.find_spec(package)
    version = duckdb.__version__
    hint = f"pip install 'duckdb-extension-{name}=={version}'"
    if spec is None or spec.origin is None:
        raise ExtensionMissingError(f"DuckDB extension {name!r} is not installed: {hint}")
    found = Path(spec.origin).parent / "extensions" / f"v{version}" / f"{name}.duckdb_extension"
    if not found.is_file():
        raise ExtensionMissingError(f"DuckDB extension {name!r} has no build for DuckDB {version} at {found}: {hint}")
    entry = _ENTRY_NAMES.get(name)
    return found if entry is None else _linked(found, entry, version)


def load_extension(conn: duckdb.DuckDBPyConnection, name: str) -> None:
    """Load extension `name` into `conn` from its package (a no-op when it is loaded already)."""
    path = extension_path(name)
    try:
        conn.execute(f"LOAD '{_quoted(str(path))}'")
    except duckdb.Error as exc:
        raise ExtensionMissingError(f"cannot load DuckDB extension {name!r} from {path}: {exc}") from exc


def _linked(found: Path, entry: str, version: str) -> Path:
    """A link to `found` named for its entry point, made once per user and version."""
    base = Path(tempfile.gettempdir()) / f"devtool-duckdb-extensions-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    # A shared temp directory: a folder someone else made first could point the link anywhere.
    if base.is_symlink() or base.stat().st_uid != os.getuid():
        raise ExtensionMissingError(f"cannot link DuckDB extension {entry!r}: {base} is not this user's own")
    folder = base / f"v{version}"
    folder.mkdir(mode=0o700, exist_ok=True)
    link = folder / f"{entry}.duckdb_extension"
    if link.is_symlink() and link.resolve() == found.resolve():
        return link
    # Made under a name of its own and renamed into place, so two processes never see a half-made link.
    spare = folder / f".{entry}.{os.getpid()}"
    spare.unlink(missing_ok=True)
    spare.symlink_to(found)
    os.replace(spare, link)
    return link


def _quoted(text: str) -> str:
    return text.replace("'", "''")
