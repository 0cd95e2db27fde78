"""Gzip-compressed trace and journal files (what `devtool export` writes), loaded as the plain file.

The file is unpacked, streaming, into a temporary file that is loaded like any other and deleted
after; the content hash is the unpacked content's, so a run loaded from its `.jsonl.gz` and from its
`.jsonl` is stored once. Errors name the compressed file. A file that unpacks to more than
`MAX_RATIO` times its size (and over `MIN_LIMIT`) is refused before it fills the disk: trace JSON
compresses about 10x; a gzip bomb, a thousand times.
"""

from __future__ import annotations

import gzip
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from devtool.store.errors import BadLinesError, LoadError, SourceChangedError

GZIP_MAGIC = b"\x1f\x8b"
MAX_RATIO = 100
MIN_LIMIT = 1 << 30
CHUNK = 1 << 20


def is_gzip(path: Path) -> bool:
    """Whether `path` is a gzip file (by its first bytes); False for anything unreadable."""
    try:
        with path.open("rb") as file:
            return file.read(2) == GZIP_MAGIC
    except OSError:
        return False


@contextmanager
def gunzipped(path: Path) -> Iterator[Path]:
    """A temporary file holding `path` unpacked; `LoadError` naming `path` when it cannot be."""
    limit = max(MIN_LIMIT, path.stat().st_size * MAX_RATIO)
    name = path.name.removesuffix(".gz") or "unpacked"
    with tempfile.TemporaryDirectory(prefix="devtool-gunzip-") as folder:
        target = Path(folder) / name
        written = 0
        try:
            with gzip.open(path, "rb") as packed, target.open("wb") as plain:
                while chunk := packed.read(CHUNK):
                    written += len(chunk)
                    if written > limit:
                        why = f"unpacks to more than {limit >> 20} MiB: unpack it yourself if it is real"
                        raise LoadError(path, why)
                    plain.write(chunk)
        except (OSError, EOFError, zlib.error) as exc:
            raise LoadError(path, f"is not a whole gzip file: {exc}") from None
        yield target


def renamed(error: LoadError, path: Path) -> LoadError:
    """`error`, about the unpacked copy, as the same kind of error about the compressed `path`."""
    if isinstance(error, BadLinesError):
        return BadLinesError(path, error.problems, error.total, error.good)
    kind = SourceChangedError if isinstance(error, SourceChangedError) else LoadError
    return kind(path, error.reason)
