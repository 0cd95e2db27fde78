"""`record`: a run around existing code, with no `run_with` in sight; and the process-wide run of the
`DEVTOOL_URL`/`DEVTOOL_TRACE` switches.

    with devtool.record("support-bot", to="http://127.0.0.1:8484"):   # a running DevTool, or "trace.jsonl"
        existing_code()

    @devtool.record("support-bot")        # as a decorator: each call is a run, and a replayable one
    def main(): ...

    with devtool.record("support-bot", entrypoint=main) as run:   # a block a replay runs as `main()`
        run.result = main()               # optional: the run's output (a block returns nothing)

The block (or each call) is one run: its root frame is current, so instrumented SDK requests, `@agent`
frames and `@tool` calls inside it are recorded. `to` is a DevTool's URL (events are posted to its
`/api/v1/traces` in the background, with `DEVTOOL_TOKEN` if it has one), a `.jsonl` path, or any sink;
without `to`, `DEVTOOL_URL` and/or `DEVTOOL_TRACE` say where.

A run started by `devtool run` (a replay from the DevTool runs one) is already there when a recorded
function is called: `record` then joins it instead of starting another, so the function replays; so
does a `record` inside another `record`. The one run it does not join is the process run `install()`
starts (`start_process_run`): there it opens a run of its own (its name, entrypoint, props and output),
and the process run is current again when it ends. `devtool run` imports its entrypoint's module
`without_process_run()`, so an `install()` at import time leaves the command's run the only one.
What a replay runs is the run's entrypoint, `module:function` in its `runWith:start` metadata, as
`devtool run` records it: the decorator records the function it wraps; a `with` block records the
`entrypoint=` it is given (a function, or its `module:function`), else none (the run is recorded, and
rewound and forked from the DevTool, but not replayed from it). The function is called with the run's
`props` if it takes an argument, else with none. A replay is called as the run it replays
(`devtool run --name`). A block's run has no output unless the block sets `result` on the object
`with` gives it; the compare does not count a root output that one run has and the other lacks (a
block's and its replay's) as a difference.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import inspect
import os
import sys
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from devtool.core.events import Sink
from devtool.core.frame import CURRENT_FRAME, Frame
from devtool.core.http_sink import HttpSink
from devtool.core.jsonvalue import JSON, describe
from devtool.core.run import RunScope, close_with_sinks
from devtool.core.sinks import JsonlSink
from devtool.instrument.errors import EntrypointError

URL_ENV: Final = "DEVTOOL_URL"
# The name a `@record` function's runs have, on the function (`devtool run` names a replay by it).
RUN_NAME: Final = "__devtool_run_name__"
TRACE_ENV: Final = "DEVTOOL_TRACE"
Destination = str | os.PathLike[str] | Sink


class record:  # lower case: used as `with devtool.record(...)` and `@devtool.record(...)`, like contextlib's
    """A run around a block of code (`with`, `async with`) or around each call of a function (decorator)."""

    def __init__(
        self,
        name: str | None = None,
        *,
        to: Destination | list[Destination] | None = None,
        entrypoint: Callable[..., Any] | str | None = None,
        props: Any = None,
        metadata: dict[str, JSON] | None = None,
        snapshot: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.to = to
        self.entrypoint = entrypoint_of(entrypoint) if entrypoint is not None else None
        self.props = props
        self.metadata = metadata
        self.snapshot = snapshot
        self.trace_id: str | None = None
        self._scope: RunScope | None = None
        self._sinks: list[Sink] = []
        self.result: Any = None  # what the decorated call returned: the run's output

    def __enter__(self) -> record:
        if _joins(CURRENT_FRAME.get(None)):  # already in a run (a replay's, an outer record's): join it
            return self
        self._sinks = _sinks(self.to)
        metadata: dict[str, JSON] = dict(self.metadata or {})
        if self.entrypoint is not None:
            metadata.update(entrypoint=self.entrypoint, props=describe(self.props))
        self._scope = RunScope(snapshot=self.snapshot, sinks=self._sinks, metadata=metadata, name=self.name)
        self._scope.open()
        self.trace_id = self._scope.run.trace_id
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        scope, self._scope = self._scope, None
        if scope is not None:
            close_with_sinks(scope, self._sinks, error, None if error is not None else self.result)

    async def __aenter__(self) -> record:
        return self.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.__exit__(kind, error, traceback)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Each call of `fn` is a run whose entrypoint is `fn` (its argument, if one, the run's props)."""
        settings = {"to": self.to, "metadata": self.metadata, "snapshot": self.snapshot}
        name, entrypoint = self.name or fn.__name__, entrypoint_of(fn)

        def around(args: tuple[Any, ...]) -> record:
            return record(name, entrypoint=entrypoint, props=args[0] if len(args) == 1 else None, **settings)  # type: ignore[arg-type]

        if inspect.iscoroutinefunction(fn):

            async def run_async(*args: Any, **kwargs: Any) -> Any:
                with around(args) as run:
                    run.result = await fn(*args, **kwargs)
                return run.result

            wrapped = functools.wraps(fn)(run_async)
        else:

            def run_sync(*args: Any, **kwargs: Any) -> Any:
                with around(args) as run:
                    run.result = fn(*args, **kwargs)
                return run.result

            wrapped = functools.wraps(fn)(run_sync)
        setattr(wrapped, RUN_NAME, name)
        return wrapped


def entrypoint_of(target: Callable[..., Any] | str) -> str:
    """`module:function` for `target`, importable by `devtool run` from the current folder."""
    if isinstance(target, str):
        named, _, function = target.partition(":")
        if not named or not function:
            raise EntrypointError(f"an entrypoint is module:function, got {target!r}")
        return target
    qualname: str = getattr(target, "__qualname__", "")
    module: Any = getattr(target, "__module__", None)
    if not qualname or "<" in qualname or not isinstance(module, str):
        raise EntrypointError(
            f"{target!r} cannot be an entrypoint: a replay imports it by name, so it must be a function "
            "defined at the top level of a module"
        )
    if module == "__main__":
        module = _main_module_name()
    return f"{module}:{qualname}"


def _main_module_name() -> str:
    """The name the script being run is importable as: `python -m NAME`'s, or its path from here."""
    main = sys.modules["__main__"]
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        return str(spec.name).removesuffix(".__main__")
    path = getattr(main, "__file__", None)
    if path is None:
        raise EntrypointError("the interactive session has no module a replay could import: name one entrypoint")
    try:
        relative = Path(path).resolve().relative_to(Path.cwd())
    except ValueError:
        raise EntrypointError(
            f"{path} is not under the current folder, so a replay could not import it: run it from its project"
        ) from None
    return ".".join(relative.with_suffix("").parts)


def _sinks(to: Destination | list[Destination] | None) -> list[Sink]:
    if to is None:
        found: list[Destination] = [os.environ[name] for name in (URL_ENV, TRACE_ENV) if os.environ.get(name)]
        return [_sink(each) for each in found]
    return [_sink(each) for each in (to if isinstance(to, list) else [to])]


def _sink(to: Destination) -> Sink:
    if callable(to):
        return to
    text = os.fspath(to)
    if text.startswith(("http://", "https://")):
        return HttpSink(text.rstrip("/") + "/api/v1/traces")
    return JsonlSink(text)


# The process run (at most one): a `record` inside it opens a run of its own instead of joining it.
_process_run: list[record] = []
# Set while `devtool run` imports its entrypoint's module: the command's run is the one to record into.
_NO_PROCESS_RUN: ContextVar[bool] = ContextVar("devtool_no_process_run", default=False)


def _joins(frame: Frame | None) -> bool:
    """Whether a `record` opened where `frame` is current joins its run: any run but the process's."""
    return frame is not None and not any(
        each._scope is not None and frame.run is each._scope.run for each in _process_run
    )


@contextlib.contextmanager
def without_process_run() -> Iterator[None]:
    """Code run inside starts no process run (`devtool run` imports its entrypoint's module in it, so
    a module that calls `install()` at import time does not record the command's process beside its run)."""
    token = _NO_PROCESS_RUN.set(True)
    try:
        yield
    finally:
        _NO_PROCESS_RUN.reset(token)


def start_process_run() -> record | None:
    """The run of a whole process, from now to its exit, when `DEVTOOL_URL` or `DEVTOOL_TRACE` is set
    (what `install()` starts): named after the script; its entrypoint none (a script is no function).
    None where a run is open already or inside `without_process_run()`."""
    if _process_run or _NO_PROCESS_RUN.get() or CURRENT_FRAME.get(None) is not None:
        return None
    if not (os.environ.get(URL_ENV) or os.environ.get(TRACE_ENV)):
        return None
    script = Path(sys.argv[0]).stem if sys.argv and sys.argv[0] else "python"
    run = record(script).__enter__()
    _process_run.append(run)
    atexit.register(run.__exit__, None, None, None)
    return run
