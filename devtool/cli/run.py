"""`devtool run MODULE:FUNC`: run an agent entrypoint under `run_with`, streaming to a DevTool.

`FUNC(props)` is called inside `run_with` (an async function, or an agent made by `create_agent`),
with `props` from `--props`; a FUNC that takes no parameter (a `@devtool.record` script's `main()`) is
called with none. A sync FUNC runs in a worker thread given the run's context, with no event loop
running in it, so the frameworks' own sync entrypoints (`agent.run_sync`, `Runner.run_sync`,
`graph.invoke`, which start a loop of their own) run, record and replay. The run is named as FUNC
(a `@devtool.record("name")` function: that name), so a replay is listed as the run it replays.
The entrypoint and props are recorded in the `runWith:start` event's metadata, which is what the
DevTool's Replay button runs again. Events go to the DevTool at `--to` (or `$DEVTOOL_URL`) and/or
to a JSONL file (`--trace`); `--snapshot` replays from a snapshot file or a DevTool snapshot URL. A
DevTool with a team token wants it with both (`$DEVTOOL_TOKEN`, or `--token`, which other users of
the machine can see in `ps`). `--only-replayable` refuses a FUNC that MODULE does not define and
declare `@replayable` (what the DevTool's replays run with); without it, a FUNC not so declared runs
and a note says the DevTool will not offer to replay it. The module is
imported `without_process_run()`: an `install()` it calls then starts no run of the whole process
beside the command's. This command needs only the core library (and `devtool.instrument.recording`).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import inspect
import json
import os
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from devtool.cli.errors import CliError
from devtool.core import Agent, CoreError, JsonlSink, is_replayable
from devtool.core.http_sink import HttpSink
from devtool.core.jsonvalue import JSON, describe
from devtool.core.run import RunScope
from devtool.core.scoped import run_in
from devtool.instrument.recording import RUN_NAME, without_process_run


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("run", help="run an agent entrypoint MODULE:FUNC, streaming its trace")
    parser.add_argument(
        "entrypoint", metavar="MODULE:FUNC", help="e.g. devtool.demo.research:main (the bundled demo agent)"
    )
    parser.add_argument("--props", type=_json_arg, default={}, metavar="JSON", help="what FUNC is called with")
    parser.add_argument("--to", metavar="URL", default=os.environ.get("DEVTOOL_URL"), help="a DevTool to stream to")
    parser.add_argument("--trace", type=Path, metavar="PATH", help="also append the events to this JSONL file")
    parser.add_argument("--snapshot", metavar="FILE_OR_URL", help="replay from this snapshot")
    parser.add_argument("--metadata", type=_json_arg, default={}, metavar="JSON", help="extra run metadata")
    parser.add_argument(
        "--name",
        help="what the run is called (default: FUNC's @devtool.record name, else its own); a replay passes "
        "the name of the run it replays",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("DEVTOOL_TOKEN"),
        help="the DevTool's team token, if it has one (default: $DEVTOOL_TOKEN)",
    )
    parser.add_argument(
        "--only-replayable",
        action="store_true",
        help="refuse a FUNC that MODULE does not define and declare @replayable (what DevTool replays use)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    with without_process_run():  # an `install()` at import time: this command's run is the one
        func = load_entrypoint(args.entrypoint)
    declared = is_declared_replayable(func, args.entrypoint.partition(":")[0])
    if args.only_replayable and not declared:
        raise CliError(
            f"{args.entrypoint} is not declared replayable by {args.entrypoint.partition(':')[0]} "
            "(@replayable from devtool.core, on the module's own function): refusing to run it"
        )
    if not declared and (args.to or args.trace):
        print(
            f"devtool: note: {args.entrypoint} is not marked @replayable (devtool.core), so the DevTool will not "
            "offer to replay this run",
            file=sys.stderr,
        )
    if not isinstance(args.metadata, dict):
        raise CliError("--metadata must be a JSON object")
    auth = {"Authorization": f"Bearer {args.token}"} if args.token else {}
    snapshot = _load_snapshot(args.snapshot, auth) if args.snapshot else None
    sinks: list[HttpSink | JsonlSink] = []
    if args.to:
        sinks.append(HttpSink(args.to.rstrip("/") + "/api/v1/traces", token=args.token or ""))
    if args.trace:
        sinks.append(JsonlSink(args.trace))
    metadata: dict[str, JSON] = {**args.metadata, "entrypoint": args.entrypoint, "props": describe(args.props)}
    if args.snapshot:
        metadata["snapshot"] = args.snapshot
    try:
        call = (lambda: func(args.props)) if _takes_props(func) else func
        if not isinstance(func, Agent) and not inspect.iscoroutinefunction(func):
            call = in_thread(call)
        scope = RunScope(snapshot=snapshot, sinks=sinks, metadata=metadata, name=args.name or run_name(func))
        result = asyncio.run(run_in(scope, call))
    except CoreError as exc:
        raise CliError(str(exc)) from exc
    finally:
        for sink in sinks:
            sink.close()
    print(json.dumps(describe(result), ensure_ascii=False))
    return 0


def in_thread(call: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    """`call()` in a worker thread (given the run's context: `asyncio.to_thread` copies it), with no
    event loop running there; an awaitable it returns is awaited here."""

    async def threaded() -> Any:
        result = await asyncio.to_thread(call)
        return await result if inspect.isawaitable(result) else result

    return threaded


def run_name(func: Any) -> str | None:
    """What the run is called: a `@devtool.record` function's name, else FUNC's own (an agent's id)."""
    if isinstance(func, Agent):
        return func.id
    named = getattr(func, RUN_NAME, None) or getattr(func, "__name__", None)
    return named if isinstance(named, str) else None


def _takes_props(func: Any) -> bool:
    """Whether FUNC takes the props: an agent does; a function (`@devtool.record`'s `main()`) if it has a parameter."""
    try:
        return isinstance(func, Agent) or bool(inspect.signature(func).parameters)
    except (TypeError, ValueError):  # no signature to read: called as the command says, with the props
        return True


def load_entrypoint(spec: str) -> Any:
    """The callable named by `module:function` (the current directory is importable)."""
    module_name, _, attribute = spec.partition(":")
    if (
        not module_name
        or not attribute
        or not all(part.isidentifier() for part in [*module_name.split("."), *attribute.split(".")])
    ):
        raise CliError(f"entrypoint must look like module:function, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"cannot import {module_name!r}: {exc}") from exc
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise CliError(f"{module_name!r} has no attribute {attribute!r}")
        target = getattr(target, name)
    if not callable(target):
        raise CliError(f"{spec} is not callable")
    return target


def is_declared_replayable(target: Any, module_name: str) -> bool:
    """Whether `target` is marked `@replayable` and written in `module_name` itself (an agent: its
    handler), not a function that module only imported."""
    handler = target.handler if isinstance(target, Agent) else target
    return is_replayable(target) and getattr(handler, "__module__", None) == module_name


def _load_snapshot(source: str, headers: dict[str, str]) -> Any:
    try:
        if source.startswith(("http://", "https://")):
            request = urllib.request.Request(source, headers=headers)  # noqa: S310 - scheme checked above
            with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
                return json.load(response)
        return json.loads(Path(source).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot read snapshot {source}: {exc}") from exc


def _json_arg(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from None
