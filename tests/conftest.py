"""Fixtures shared by the unit tests: factories over tmp_path, and the real `devtool` command."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import pytest

from testkit.checkout import child_env
from testkit.postgres import Lakes, cluster
from testkit.served import Served, serving

if TYPE_CHECKING:
    from devtool.store import Store

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"

DevtoolRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def devtool(tmp_path: Path) -> DevtoolRunner:
    """Run `python -m devtool ARGS...` as a real child process, with a private data home."""

    def run(*args: str, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
        # A bare environment (no key, no DEVTOOL_* of the shell), running this checkout's code.
        env = child_env({"XDG_DATA_HOME": str(tmp_path / "data-home"), "PATH": "/usr/bin:/bin"})
        return subprocess.run(
            [sys.executable, "-m", "devtool", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tmp_path,
            env=env,
            check=False,
            **kwargs,  # type: ignore[arg-type]
        )

    return run


@contextlib.contextmanager
def running_serve(db: Path, *args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Iterator[Served]:
    """A real `devtool serve --db DB ARGS` on a free port, once it answers HTTP (its log beside the
    database); stopped after."""
    with serving(db, *args, log=db.parent / f"{db.name}.serve.log", env=env, cwd=cwd) as server:
        yield server


@contextlib.contextmanager
def held_open(db: Path) -> Iterator[int]:
    """Another process holding the DuckDB file `db` open (as a running server does) until the block
    ends; its pid."""
    code = f"import duckdb, sys; c = duckdb.connect({str(db)!r}); print('held', flush=True); sys.stdin.read()"
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        yield holder.pid
    finally:
        holder.kill()
        holder.wait(timeout=10)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh DevTool store in a real DuckDB file under tmp_path."""
    from devtool.store import Store

    opened = Store(tmp_path / "store.duckdb")
    yield opened
    opened.close()


class Trace:
    """The TraceEvents of one run, built the way a run emits them: `start`, `end`, `point`, in order.

    Every event gets the next timestamp (1 ms apart unless `at=` says otherwise); `end` repeats its
    start's fields, as the wire format does.
    """

    _ids = itertools.count(1)

    def __init__(self, trace_id: str | None = None, *, start_ms: float = 1_790_000_000_000.0) -> None:
        self.trace_id = trace_id or f"{next(self._ids):032x}"
        self.events: list[dict[str, Any]] = []
        self.now = start_ms
        self._open: dict[str, tuple[str, str, dict[str, Any]]] = {}

    def start(self, kind: str, parent: str = "", *, at: float | None = None, **fields: Any) -> str:
        span = f"{next(self._ids):016x}"
        self._open[span] = (kind, parent, fields)
        self._emit(f"{kind}:start", span, parent, at, fields)
        return span

    def end(self, span: str, *, at: float | None = None, **fields: Any) -> None:
        kind, parent, start_fields = self._open.pop(span)
        self._emit(f"{kind}:end", span, parent, at, {**start_fields, **fields})

    def span(self, kind: str, parent: str = "", **fields: Any) -> list[dict[str, Any]]:
        """A whole span (its start, then its end) under `parent`; returns its two events (one batch)."""
        self.end(self.start(kind, parent, **fields))
        return self.events[-2:]

    def point(
        self, type_: str, parent: str = "", *, span: str | None = None, at: float | None = None, **fields: Any
    ) -> str:
        span = span or f"{next(self._ids):016x}"
        self._emit(type_, span, parent, at, fields)
        return span

    def _emit(self, type_: str, span: str, parent: str, at: float | None, fields: dict[str, Any]) -> None:
        self.now = self.now + 1 if at is None else at
        extra = dict(fields)
        event = {
            "schemaVersion": 1,
            "type": type_,
            "timestamp": self.now,
            "agentId": extra.pop("agentId", "agent"),
            "trace": {"traceId": self.trace_id, "spanId": span, "parentSpanId": parent},
        }
        event.update(extra)
        self.events.append(event)

    def write(self, path: Path) -> Path:
        """The events as a JSONL file."""
        path.write_bytes(b"".join(orjson.dumps(event) + b"\n" for event in self.events))
        return path


def running_run(turns: int) -> tuple[Trace, str]:
    """A run whose root agent has finished `turns` turns and is still running; the trace and its root."""
    t = Trace()
    root = t.start("agent", agentId="streamer")
    for _ in range(turns):
        t.span("turn", root)
    return t, root


@pytest.fixture(scope="session")
def lakes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lakes]:
    """A real PostgreSQL cluster for the session (Debian's, in a temporary folder; `testkit/postgres.py`),
    handing each lake test a database of its own and a data folder."""
    with cluster() as made:
        yield Lakes(made, tmp_path_factory.mktemp("lake-data"))
