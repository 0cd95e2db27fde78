"""A model request as a turn span: its events, its journal entry, its usage and cost, in one place.

`prompt()` and the SDK instrumentation (`devtool.instrument`) both record a model request through
`Turn`, so a turn looks the same on the timeline whoever made it: `turn:start` (the messages, schema
and tools the model saw, the content hash), `model:call:start`/`end` when the model is really asked
(usage, cost, finish reason, time to first token, and the frame's and run's budgets), `turn:progress`
while a streamed answer grows, and `turn:end` (the message; served from the journal or not).

What is journaled is the message, unless the caller journals something else (the instrumentation
keeps the provider's own response, to hand it back to the SDK on a replay): then `turn:end` carries
it too, as `response`, so that a snapshot restored from the trace has it.

`MODEL_CALL` is set while a `prompt()` turn waits for its model: a model adapter's SDK request made
then is that turn's, already recorded, so the instrumentation lets it through.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any

import orjson

from devtool.core.events import EVENTS, Sink, Stamp, TraceEvent, error_info, event_head
from devtool.core.frame import Frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import JSON, describe
from devtool.core.model import NO_USAGE, Usage
from devtool.core.snapshot import JournalRecord
from devtool.core.streaming import TurnProgress

MODEL_CALL: ContextVar[bool] = ContextVar("devtool_model_call", default=False)


class Turn:
    """One model request in `frame`, its span under `parent_span`."""

    __slots__ = (
        "_seen",
        "_started",
        "agent_id",
        "call_id",
        "content_hash",
        "emit",
        "frame",
        "model",
        "parent_span",
        "request",
        "span",
        "step",
        "trace_id",
    )
    # `turn:start` and `turn:end` carry the turn's own keys and what the model saw (`_seen`, kept by
    # `start`: `turn:end` repeats it as the TypeScript library's does, whose readers take a turn from its
    # end), each key set on the event in wire order (`_send`), not merged from a dict of them (typed:
    # mypy checks each key, and no dict is made for them). `agent_id` and `trace_id` are the frame's,
    # which each event's head has (`events.event_head`, called with them directly: a turn's four events
    # are on every recorded request's path, issue 38).

    def __init__(
        self,
        frame: Frame,
        *,
        parent_span: str,
        call_id: str,
        step: int,
        model: dict[str, JSON],
        content_hash: str | None,
        request: Any,
        started: float | None = None,
        emit: Sink | None = None,
    ) -> None:
        self.frame = frame
        self.agent_id, self.trace_id = frame.agent_id, frame.run.trace_id
        self.parent_span = parent_span
        self.call_id = call_id
        self.step = step
        self.model = model
        self.content_hash = content_hash
        self.request = request  # what content_hash is the hash of, for the run's observer
        self.span = new_span_id()
        # What `frame.emit` calls, without the call in between; deferred work's `send` (`events.Emitter`).
        self.emit = emit or frame.run.emitter.emit
        self._started = time.perf_counter() if started is None else started
        self._seen: tuple[JSON, int, JSON, JSON] | None = None  # messages, their count, schema, tool config

    def start(self, *, messages: JSON, schema: JSON, tools: JSON, at: Stamp | None = None) -> None:
        """`turn:start` (at `at`, when it is built later than it happened: deferred work; so every `at`)."""
        self._seen = (messages, len(messages) if isinstance(messages, list) else 0, schema, {"tools": tools})
        self._send(
            event_head(EVENTS.TURN_START, self.agent_id, self.trace_id, self.span, self.parent_span, at and at[0])
        )

    def cached(self) -> JournalRecord | None:
        """The recorded answer to this request, from the snapshot being replayed. A run's observer that
        refuses the request (by raising) ends the turn failed with its error, and nothing is asked."""
        try:
            return self.frame.cached("prompt", self.content_hash, call_id=self.call_id, request=self.request)
        except BaseException as exc:
            self.failed(exc)
            raise

    def served(self, message: JSON, *, journal: JSON = None, at: Stamp | None = None) -> None:
        """The turn ends with the answer served from the journal (`journal`, if not the message itself):
        no model was asked."""
        event = self._ending(at)
        event["message"], event["resultType"] = message, _result_type(message)
        event["cache"], event["success"] = True, True
        self._send(event, journal)

    def call(self, *, adapter_id: str, provider: str, message_count: int, at: Stamp | None = None) -> ModelCall:
        """The model is asked: `model:call:start` now, the rest through the `ModelCall`."""
        return ModelCall(self, adapter_id, provider, message_count, at)

    def answered(
        self, message: JSON, *, journal: JSON = None, fresh: bool = False, kept: Any = None, at: Stamp | None = None
    ) -> None:
        """The turn ends with the model's answer, journaled (`journal` instead of the message, if given;
        `fresh`: the message and the journal are JSON values nothing else holds, journaled and shown as
        they are, not copied; `kept`: what the frame keeps of a fresh `journal`, the same value in a
        lighter form that only `to_snapshot`'s deep copy reads, `JsonText` inside)."""
        if journal is None:
            self.frame.record("prompt", self.content_hash, message)
        else:
            self.frame.record("prompt", self.content_hash, journal if kept is None else kept, fresh=fresh)
        event = self._ending(at)
        event["message"], event["resultType"] = message if fresh else describe(message), _result_type(message)
        event["cache"], event["success"] = False, True
        self._send(event, journal)

    def failed(self, exc: BaseException) -> None:
        event = self._ending(None)
        event["cache"], event["success"], event["error"] = False, False, error_info(exc)
        self._send(event)

    def _ending(self, at: Stamp | None) -> TraceEvent:
        """`turn:end`'s head and duration: the caller sets how it ended, then `_send`s it."""
        timestamp, ended = at or (None, time.perf_counter())
        event = event_head(EVENTS.TURN_END, self.agent_id, self.trace_id, self.span, self.parent_span, timestamp)
        event["duration"] = (ended - self._started) * 1000
        return event

    def _send(self, event: TraceEvent, response: JSON = None) -> None:
        """`event` (`turn:start`, `turn:end`) with the `response` journaled, if any, then the turn's own
        keys and what the model saw, emitted."""
        if response is not None:
            event["response"] = response
        event["callId"], event["step"], event["model"] = self.call_id, self.step, self.model
        event["contentHash"] = self.content_hash
        if self._seen is not None:
            event["messages"], event["messageCount"], event["schema"], event["toolConfig"] = self._seen
        self.emit(event)


class ModelCall:
    """The model's side of a turn: `model:call:start`/`end`, progress of a streamed answer, usage and cost."""

    __slots__ = ("_progress", "_started", "adapter_id", "provider", "span", "turn")

    def __init__(self, turn: Turn, adapter_id: str, provider: str, message_count: int, at: Stamp | None = None) -> None:
        self.turn = turn
        self.span = new_span_id()
        self.adapter_id, self.provider = adapter_id, provider
        self._progress: TurnProgress | None = None
        timestamp, self._started = at or (None, time.perf_counter())
        event = event_head(EVENTS.MODEL_CALL_START, turn.agent_id, turn.trace_id, self.span, turn.span, timestamp)
        event["messageCount"] = message_count
        self._emit(event)

    def progress(self) -> TurnProgress:
        """The callback a streaming answer's text pieces go to: `turn:progress` events, throttled."""
        self._progress = TurnProgress(self.progressed)
        return self._progress

    def progressed(self, text: str, timestamp: float | None = None) -> None:
        """`turn:progress` with the text so far (at `timestamp`, for deferred work)."""
        turn = self.turn
        event = event_head(EVENTS.TURN_PROGRESS, turn.agent_id, turn.trace_id, turn.span, turn.parent_span, timestamp)
        event["callId"], event["step"], event["text"] = turn.call_id, turn.step, text
        turn.emit(event)

    def answered(
        self,
        usage: Usage | None,
        costs: dict[str, float] | None,
        finish_reason: str | None,
        *,
        message: JSON = None,
        at: Stamp | None = None,
        first_at: float | None = None,
    ) -> None:
        """The answer came: its usage (None: the server counted none) and cost go on the event and budgets,
        with the answer's text and tool calls (`message`) as the TypeScript library's event gives them;
        `first_at`, the `perf_counter()` when its first text came (else the progress callback's)."""
        frame = self.turn.frame
        counted = usage or NO_USAGE
        for budget in (frame.budget, frame.run.budget):
            budget.add_call(self.adapter_id, self.provider, counted, costs)
        event = self._head(True, at)
        event["usage"], event["costs"] = counted, costs
        _model_answer(event, message)
        if finish_reason is not None:
            event["finishReason"] = finish_reason
        if first_at is None and self._progress is not None:
            first_at = self._progress.first_at
        if first_at is not None:
            event["ttft"] = (first_at - self._started) * 1000
        self._emit(event)

    def failed(self, exc: BaseException) -> None:
        event = self._head(False)
        event["error"] = error_info(exc)
        self._emit(event)

    def _head(self, success: bool, at: Stamp | None = None) -> TraceEvent:
        turn = self.turn
        timestamp, ended = at or (None, time.perf_counter())
        event = event_head(EVENTS.MODEL_CALL_END, turn.agent_id, turn.trace_id, self.span, turn.span, timestamp)
        event["duration"] = (ended - self._started) * 1000
        event["success"] = success
        return event

    def _emit(self, event: TraceEvent) -> None:
        """`event` with who answered it (`adapterId`, `provider`: the last keys of the model call's events), emitted."""
        event["adapterId"], event["provider"] = self.adapter_id, self.provider
        self.turn.emit(event)


def _result_type(message: JSON) -> str:
    """What a turn's answer is, in the TypeScript library's words: tool calls, or content."""
    return "tool_calls" if isinstance(message, dict) and message.get("tool_calls") else "content"


def _model_answer(event: TraceEvent, message: JSON) -> None:
    """`model:call:end`'s account of the answer as the TypeScript library gives it: the text
    (`rawText`), the tool calls with their arguments as JSON text (`toolCalls`), and `finishReason`
    (the adapter's own when it gives one, which the caller then replaces), added to `event`."""
    if not isinstance(message, dict):
        return
    asked = message.get("tool_calls")
    calls: list[JSON] = [
        {
            "id": call.get("id", ""),
            "name": call.get("name", ""),
            "arguments": _arguments_text(call.get("arguments", {})),
        }
        for call in (asked if isinstance(asked, list) else ())
        if isinstance(call, dict)
    ]
    content = message.get("content")
    event["rawText"] = content if isinstance(content, str) else ""
    event["finishReason"] = "tool_calls" if calls else "stop"
    if calls:
        event["toolCalls"] = calls


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments, default=str).decode()
