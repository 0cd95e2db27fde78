"""The rewind index's walk in a child process of its own, at a lower priority (`walk_apart`).

The walk (`devtool.core.frame_index.index_stream`) is Python from end to end: it parses every event
and rebuilds every frame, a minute of one core for ten million events, all of it holding the GIL.
Run in the server's process, every other thread of the server waits for the GIL beside it: a live
append or a page, each a few dozen calls into DuckDB that give the GIL up and must win it back,
took three to ten times as long while a big run was indexed. So the walk runs in a child process,
started at a lower priority (`NICENESS`): it has a GIL of its own, and the machine's cores go to the
server first and to the walk when they are idle.

The server keeps what needs the store. A thread of it reads the run's events, unparsed, a chunk at a
time, and writes them to the child's stdin; the child parses them, walks them, and writes each batch
the walk hands over to its stdout, where the calling thread reads it and hands it to the sink (which
writes it to the store). The pipe holds little: the reader waits while the child is behind, so what
is in flight is a chunk or two. Both streams are pickles of our own values, between two processes
of one program. The child ends when its input does; a server that stops or dies closes it.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import site
import subprocess
import sys
import threading
import traceback
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO, Any, Final

import orjson

import devtool
from devtool.core.frame_index import index_stream
from devtool.core.frame_index_records import Batch, NotIndexable, Sink

NICENESS: Final = 10  # added to the child's nice value: a tenth of the CPU share of the server's threads
_PROTOCOL: Final = pickle.HIGHEST_PROTOCOL
_END: Final = None  # the last of the input: without it, the input was cut short
Chunk = list[tuple[int, str]]  # `(event_id, JSON text)` rows, as the store reads them


class IndexWalkError(Exception):
    """The walk's process failed: the message says how (with its traceback when it had one)."""


def walk_apart(chunks: Generator[Chunk, None, None], sink: Sink) -> int:
    """`index_stream` of the rows of `chunks`, in restore order, walked in a child process; `sink`
    gets each batch here, in the calling thread. Returns how many events were walked;
    `NotIndexable` as `index_stream`; a failure of the reading of `chunks` as itself;
    `IndexWalkError` when the child fails."""
    child = subprocess.Popen(
        [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=_child_env()
    )
    assert child.stdin is not None
    assert child.stdout is not None
    feeder = _Feeder(chunks, child.stdin)
    answered = False
    try:
        while True:
            try:
                kind, value = pickle.load(child.stdout)  # noqa: S301 (our own child's answers)
            except EOFError:
                break
            if kind == "batch":
                sink(value)
                continue
            answered = True
            if kind == "done":
                return int(value)
            if kind == "refused":
                raise NotIndexable(value)
            raise IndexWalkError(f"the rewind index's walk failed:\n{value}")
    finally:
        # A child that answered is ending; one that did not is stopped (the sink failed, say).
        if not answered and child.poll() is None:
            child.kill()
        child.wait()
        child.stdout.close()
        feeder.join()
    if feeder.error is not None:
        raise feeder.error
    raise IndexWalkError(f"the rewind index's walk ended without an answer (exit code {child.returncode})")


def _child_env() -> dict[str, str]:
    """This environment, with the folder this process's `devtool` came from first on the child's
    path (unless it is a site folder, which the child has already): the child runs the same code as
    the server, however the server found it (a checkout on `sys.path`, say)."""
    source = str(Path(devtool.__file__).resolve().parent.parent)
    if source in {*site.getsitepackages(), site.getusersitepackages()}:
        return dict(os.environ)
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": source if not path else os.pathsep.join((source, path))}


class _Feeder:
    """The thread that reads the run's events and writes them to the child; what made it stop early
    is `error` (None when it wrote them all, or when the child stopped reading: its answer says why)."""

    def __init__(self, chunks: Generator[Chunk, None, None], stream: IO[bytes]) -> None:
        self.error: BaseException | None = None
        self._chunks, self._stream = chunks, stream
        self._thread = threading.Thread(target=self._run, name="devtool-index-feeder", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for chunk in self._chunks:
                if not self._write(chunk):
                    return
            self._write(_END)
        except BaseException as exc:  # the read failed: `walk_apart` raises it once the child has ended
            self.error = exc
        finally:
            self._chunks.close()
            with contextlib.suppress(OSError):  # the child is gone: what it did not read is of no use
                self._stream.close()

    def _write(self, value: Chunk | None) -> bool:
        """False when the child no longer reads: it ended, or was ended, and its answer says why."""
        try:
            pickle.dump(value, self._stream, protocol=_PROTOCOL)
        except (BrokenPipeError, ValueError):
            return False
        return True

    def join(self) -> None:
        self._thread.join()


class _CutShort(Exception):
    """The input ended before its end: the server stopped, or could not read the run."""


def _rows(source: IO[bytes]) -> Iterator[tuple[int, Any]]:
    while True:
        try:
            chunk = pickle.load(source)  # noqa: S301 (the server that started this process)
        except EOFError:
            raise _CutShort from None
        if chunk is _END:
            return
        # One event parsed at a time: a chunk parsed whole held ten thousand events' dicts at once.
        for event_id, body in chunk:
            yield event_id, orjson.loads(body)


def main() -> int:
    """The child: walk the rows on stdin, answer on stdout (`walk_apart` reads both)."""
    os.nice(NICENESS)
    # The walk makes millions of dicts and keeps few: the collector would go over them again and
    # again, and this process ends with the walk.
    gc.disable()
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    sys.stdout = sys.stderr  # whatever else prints must not land in the answers

    def send(kind: str, value: Any) -> None:
        pickle.dump((kind, value), answers, protocol=_PROTOCOL)
        answers.flush()

    def hand_over(batch: Batch) -> None:
        send("batch", batch)

    try:
        try:
            events = index_stream(_rows(sys.stdin.buffer), hand_over)
        except NotIndexable as exc:
            send("refused", str(exc))
            return 0
        except (_CutShort, BrokenPipeError):
            return 2  # the server stopped reading or writing: nobody to answer
        except Exception:
            send("failed", traceback.format_exc())
            return 1
        send("done", events)
        return 0
    except BrokenPipeError:
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
