"""`AgentCassette`: one test's cassette, and the run its agent code runs in, recorded or replayed.

    def test_order(agent_cassette):
        with agent_cassette:                  # `async with`, agent_cassette.run(fn, *args), @pytest.mark.agent_cassette
            answer = support_bot("Where is my order A17?")

The block is one run (core's `RunScope`, so `prompt()` turns, `@devtool.agent`/`@devtool.tool` calls and
the instrumented SDKs' requests made in it are its calls; a `devtool.record` inside joins it). What the
record mode makes of it, in VCR's words:

- `once` (the default): no cassette yet, the calls are made and recorded; else a strict replay.
- `none`: a strict replay, always (CI): no model or tool is ever called, a missing cassette holds nothing.

A strict replay sends nothing, so it needs no key: `OPENAI_API_KEY`/`ANTHROPIC_API_KEY`, when unset, are
set to a placeholder for the block (an SDK client refuses to be made without one).
- `new_episodes`: calls the cassette holds are replayed, new ones made and recorded.
- `all`: every call made and recorded again.

A strict replay refuses a call its cassette does not hold before anything is asked (the run's observer
raises `CassetteMiss` with the report), and the test fails with that report even if the code caught it.
A recording writes the cassette when the block ends: the calls this run made, each with its answer
(replayed ones as they were recorded), so a call no longer made leaves it; the file is rewritten only
when its text changes, and atomically. A block that raised (a provider that could not be reached, a
failed assertion) is not a completed recording: what it got answers to is added, and every recorded
call it did not answer again is kept.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from devtool.core.http_sink import HttpSink
from devtool.core.jsonvalue import JSON, describe
from devtool.core.lookups import Lookup
from devtool.core.run import RunScope, close_with_sinks
from devtool.core.snapshot import FrameSnapshot
from devtool.instrument import installed
from devtool.testing import cassette
from devtool.testing.errors import CassetteError, CassetteMiss, TestingError
from devtool.testing.report import Miss, miss_report

# The SDKs' key variables, given a placeholder during a strict replay when unset.
KEY_VARIABLES: Final = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
PLACEHOLDER_KEY: Final = "devtool-cassette-replay-sends-nothing"


class Mode(StrEnum):
    ONCE = "once"
    NONE = "none"
    NEW_EPISODES = "new_episodes"
    ALL = "all"


@dataclass(frozen=True)
class _Seen:
    """A call of this run, as its lookup told it (the request scrubbed and copied)."""

    kind: str
    agent: str
    content_hash: str | None
    request: JSON


class AgentCassette:
    """The cassette at `path` of the test `test`, used in record mode `mode`."""

    def __init__(
        self, path: Path, *, test: str, mode: Mode, shown_path: str, command: str, url: str | None = None
    ) -> None:
        self.path = path
        self.test = test
        self.mode = mode
        self.shown_path = shown_path  # the path as the report names it (from the project's root)
        self.command = command  # what re-records this test
        self.url = url.rstrip("/") if url else None
        self.trace_id: str | None = None
        self.misses: list[str] = []  # reports of the calls a strict replay refused, first first
        self.strict = False
        self._scope: RunScope | None = None
        self._sinks: list[HttpSink] = []
        self._depth = 0
        self._used = False
        self._recorded: dict[str, cassette.Call] = {}
        self._seen: dict[str, _Seen] = {}
        self._secrets: tuple[str, ...] = ()
        self._placeholders: list[str] = []

    @property
    def link(self) -> str | None:
        """The run's page in the DevTool it is streamed to (`--devtool-url`)."""
        return f"{self.url}/runs/{self.trace_id}" if self.url and self.trace_id else None

    def failure(self) -> str:
        """What the test fails with after a strict replay refused calls: the first refusal's report (the
        calls after it often differ only because it did), and how many more there were."""
        more = len(self.misses) - 1
        return self.misses[0] + (f"\n  ({more} more call{'s' * (more > 1)} refused after it)" if more else "")

    def run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`fn(*args, **kwargs)` in the cassette's run; a coroutine it returns is run to its end."""
        with self:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result):
                result = asyncio.run(_awaited(result))
            return result

    def __enter__(self) -> AgentCassette:
        if self._scope is not None:  # the marker's run is open already: a block inside it joins it
            self._depth += 1
            return self
        if self._used:
            raise TestingError(
                f"{self.test}: a test's cassette holds one run; put its agent code in one `with agent_cassette:` block"
            )
        self._used = True
        installed()  # the SDKs and frameworks: a framework's tools are the cassette's calls too
        exists = self.path.exists()
        replaying = exists and self.mode != Mode.ALL
        recorded = cassette.load(self.path) if replaying else []
        self._recorded = {call.call_id: call for call in recorded}
        self.strict = self.mode == Mode.NONE or (self.mode == Mode.ONCE and exists)
        self._secrets = cassette.environment_secrets()
        if self.strict:  # nothing is sent, so CI needs no key; the SDKs refuse to start without one
            self._placeholders = [name for name in KEY_VARIABLES if not os.environ.get(name)]
            os.environ.update(dict.fromkeys(self._placeholders, PLACEHOLDER_KEY))
        self._sinks = [HttpSink(f"{self.url}/api/v1/traces")] if self.url else []
        self._scope = RunScope(
            snapshot=cassette.snapshot(recorded) if replaying else None,
            enable_snapshot=True,
            sinks=self._sinks,
            metadata={"test": self.test, "cassette": self.shown_path, "record": str(self.mode)},
            name=self.test,
            observe=self._observe,
        )
        self._scope.open()
        self.trace_id = self._scope.run.trace_id
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._depth:
            self._depth -= 1
            return
        scope, self._scope = self._scope, None
        if scope is None:
            return
        try:
            close_with_sinks(scope, self._sinks, error)
        finally:
            for name in self._placeholders:
                os.environ.pop(name, None)
        if self.strict:
            if self.misses and error is None:  # the code caught the refusal: the test fails all the same
                raise CassetteMiss(self.failure())
            return
        self._write(scope.root.to_snapshot(), completed=error is None)

    async def __aenter__(self) -> AgentCassette:
        return self.__enter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.__exit__(kind, error, traceback)

    def _observe(self, lookup: Lookup) -> None:
        request = cassette.scrub(describe(lookup.request), self._secrets)
        self._seen[lookup.call_id] = _Seen(lookup.kind, lookup.agent_id, lookup.content_hash, request)
        if not self.strict or lookup.found:
            return
        miss = Miss(
            lookup.kind, lookup.agent_id, lookup.call_id, request, self._recorded.get(lookup.call_id),
            hashable=lookup.content_hash is not None,
        )  # fmt: skip
        report = miss_report(
            miss, cassette=self.shown_path, exists=self.path.exists(), command=self.command, link=self.link
        )
        self.misses.append(report)
        raise CassetteMiss(report)

    def _write(self, root: FrameSnapshot, *, completed: bool) -> None:
        """Write the calls this run made and got answers to. A run that did not complete (it raised:
        a provider that could not be reached, a failed assertion) may not have made every call, or
        got every answer: it adds its answers to what was recorded and takes nothing away."""
        frames = _frames(root)
        calls = []
        for call_id, seen in self._seen.items():
            frame = frames.get(call_id.rpartition("/")[0])
            if frame is None or seen.content_hash is None:
                continue
            entry = frame["journal"]["prompt" if seen.kind == "prompt" else "tool"].get(seen.content_hash)
            if entry is None:  # the call failed: nothing to replay
                continue
            error = entry.get("error")
            output = cassette.scrub(entry["output"], self._secrets)
            calls.append(
                cassette.Call(call_id, seen.agent, seen.kind, seen.content_hash, seen.request, output,
                              error if isinstance(error, str) else None)
            )  # fmt: skip
        if not completed and self.path.exists():
            try:
                recorded = cassette.load(self.path)
            except CassetteError:
                return  # not ours to repair in a failed run: the test's own error says what failed
            made = {call.call_id for call in calls}
            calls += [call for call in recorded if call.call_id not in made]
        text = cassette.dumps(self.test, calls)
        if self.path.exists() and self.path.read_text(encoding="utf-8") == text:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(self.path)  # a crash mid-write leaves the old cassette whole


def _frames(root: FrameSnapshot) -> dict[str, FrameSnapshot]:
    found = {root["callId"]: root}
    for child in root["children"].values():
        found.update(_frames(child))
    return found


async def _awaited(awaitable: Any) -> Any:
    return await awaitable
