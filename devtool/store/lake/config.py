"""What `--lake` and `--lake-data` name, checked before anything is opened.

`--lake` is a DuckLake catalog: `postgres:<libpq connection string>` (the team's shared catalog, e.g.
`postgres:host=db.internal dbname=devtool`), or a path ending in `.ducklake` (a DuckDB file catalog,
for one machine and for trying things out). `--lake-data` is where the Parquet files go: a folder
(made when missing; shared by every DevTool of the team, e.g. over NFS) or an `s3://` URL (read and
written through the httpfs extension, with the credentials DuckDB finds: its S3 secret or the AWS
environment variables, `s3.py`). Anything else is refused with a `LakeError` saying what and which option.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from devtool.store.errors import StoreError
from devtool.store.lake.s3 import S3Access, s3_access

POSTGRES = "postgres:"
FILE_SUFFIX = ".ducklake"
REMOTE_SCHEMES = ("s3://", "s3a://", "gcs://", "gs://", "r2://")
S3_SCHEMES = ("s3://", "s3a://")
_PASSWORD = re.compile(r"(password\s*=\s*)(\S+)", re.IGNORECASE)
# Events a lake run's copy loads at a time after its head (`opening.py`): a page's own copy (a span
# link's) waits for at most one such load (on a quiet machine a link took 0.5-0.7 s at 10,000, 0.9-1.3 s
# at 25,000), and its memory is a tenth of a 100,000-event chunk's (a link's copy beside one of those
# ran out of the 400 MiB DuckDB then had). A load of a run in parts does not key the run (done once at
# the end), but its derive still reads more of the run the bigger it is, so smaller chunks make the
# whole copy longer: 1M events in ~100 s at 10,000, ~54 s at 25,000 (BENCHMARKS.md, "The lake's first
# open on a quiet machine").
COPY_CHUNK = 10_000

_NAME = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")


class LakeError(StoreError):
    """A lake that cannot be used: a bad `--lake`/`--lake-data` value, or a catalog that cannot be reached."""


@dataclass(frozen=True, slots=True)
class LakeConfig:
    """A checked lake: its catalog (`postgres:...` or a `.ducklake` file), its data path or URL, the
    name this DevTool publishes under (`published_by`), and how many events a run's copy from the lake
    loads at a time."""

    catalog: str
    data: str
    node: str
    s3: S3Access | None = None
    copy_chunk: int = COPY_CHUNK

    @property
    def remote_data(self) -> bool:
        return self.data.startswith(REMOTE_SCHEMES)

    @property
    def shown(self) -> str:
        """The catalog as messages show it: a password in it is hidden."""
        return shown(self.catalog)


def shown(catalog: str) -> str:
    return _PASSWORD.sub(r"\1***", catalog)


def lake_config(
    catalog: str,
    data: str | None,
    node: str,
    environ: Mapping[str, str] | None = None,
    *,
    copy_chunk: int = COPY_CHUNK,
) -> LakeConfig:
    """`--lake CATALOG --lake-data DATA`, checked, with S3's settings from `environ` (default: this
    process's) for s3:// data (`s3.py`); `LakeError` naming the option or variable at fault."""
    catalog = catalog.strip()
    if not catalog:
        raise LakeError("--lake is empty: give a catalog, 'postgres:host=HOST dbname=DB' or a PATH.ducklake file")
    if catalog.startswith(POSTGRES):
        if not catalog[len(POSTGRES) :].strip():
            raise LakeError("--lake 'postgres:' names no database: give 'postgres:host=HOST dbname=DB'")
    elif not catalog.endswith(FILE_SUFFIX) or "://" in catalog:
        raise LakeError(
            f"--lake {shown(catalog)!r} is not a catalog this DevTool opens: give 'postgres:host=HOST dbname=DB' "
            f"(a PostgreSQL catalog, for a team) or a path ending in {FILE_SUFFIX} (a DuckDB file, for one machine)"
        )
    if not data or not data.strip():
        raise LakeError("--lake needs --lake-data: the shared folder or s3:// URL the lake's Parquet files go to")
    data = data.strip()
    if "://" in data and not data.startswith(REMOTE_SCHEMES):
        raise LakeError(f"--lake-data {data!r}: not a folder or one of {', '.join(REMOTE_SCHEMES)}")
    if not data.startswith(REMOTE_SCHEMES):
        folder = Path(data).expanduser()
        if folder.exists() and not folder.is_dir():
            raise LakeError(f"--lake-data {data!r} is a file, not a folder")
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LakeError(f"--lake-data {data!r}: cannot make the folder ({exc.strerror})") from None
        data = str(folder.absolute()) + "/"
    elif not data.endswith("/"):
        data += "/"
    if copy_chunk < 1:
        raise LakeError(f"--lake-copy-chunk {copy_chunk}: give a number of events, 1 or more")
    if not _NAME.fullmatch(node):
        raise LakeError(f"--lake-name {node!r}: 1 to 64 letters, digits or . _ : @ -")
    if not catalog.startswith(POSTGRES):
        Path(catalog).expanduser().absolute().parent.mkdir(parents=True, exist_ok=True)
        catalog = str(Path(catalog).expanduser().absolute())
    try:
        s3 = s3_access(os.environ if environ is None else environ) if data.startswith(S3_SCHEMES) else None
    except ValueError as exc:
        raise LakeError(str(exc)) from None
    return LakeConfig(catalog=catalog, data=data, node=node, s3=s3, copy_chunk=copy_chunk)
