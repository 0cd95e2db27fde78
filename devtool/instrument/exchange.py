"""One SDK request in a recorded run: its turn, its content hash, its journal entry, its answer.

The journal keeps what the provider answered, as it answered (`Recorded`): the status and the JSON
body of a whole answer (kept by the frame as text around the provider's bytes, `JsonText`, parsed when
a snapshot reads it), or the text of a streamed one's server-sent events. A replay hands exactly
that back to the SDK, which parses it as it parses the provider's answers: the same typed objects, the
same stream of chunks. The turn's events show our message (the answer read by the same conversions as
the model adapters'), its usage and cost priced from the price table, and the text so far while a
streamed answer arrives.

The content hash is that of `{"api": ..., "request": body}`: the request body as the SDK sends it (with
`extra_body` merged in), less the fields that change nothing in the answer (the adapters' `NOT_HASHED`:
`user`, `metadata`, `store`, `service_tier`, `safety_identifier`, `prompt_cache_key`, ...). Neither
headers, the key, the base URL, timeouts, retries nor idempotency keys are in the body. `stream` and
`stream_options` are: a streamed request and a whole one get answers of different forms, and a journal
entry holds one form, which the SDK parses only as what it asked for.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Final, Literal, TypedDict

import orjson

from devtool.core.events import Stamp, now_ms, stamp
from devtool.core.frame import Frame
from devtool.core.jsonvalue import JSON, JsonText, NotJSONError, content_hash_of_json
from devtool.core.providers.adapter import Answer
from devtool.core.streaming import PROGRESS_INTERVAL, TurnProgress
from devtool.core.turns import ModelCall, Turn
from devtool.instrument.api import Api, StreamReader
from devtool.instrument.edited import recorded_text
from devtool.instrument.edited_input import edited_body
from devtool.instrument.errors import StreamClosedError
from devtool.instrument.sse import SseDecoder

SSE_TYPE: Final = "text/event-stream"


class Recorded(TypedDict, total=False):
    """A journaled answer: `body` (a whole answer's JSON) or `sse` (a streamed one's events, as text)."""

    api: str
    status: int
    body: JSON
    sse: str


class Exchange:
    """A model request made through an SDK in `frame`: a turn, answered from the journal or by the provider.

    What has to happen while the request is made happens then: its callId (taken in call order), the
    copy of its body (its JSON's bytes, `stainless._body`), the times of its turn's events, and the
    journal lookup when the run replays or is observed (and so its content hash, which the lookup
    needs). The rest (reading the body back, the content hash otherwise, the turn's events, reading
    the answer, its journal entry, usage and cost) is deferred work of the run's emitter
    (`Emitter.defer`), done in a batch off the request (our code costs several times as much between
    the SDK's own steps as it does run back to back); the events are the same, in the same order,
    with the times they happened. A failure is told at once.
    """

    __slots__ = (
        "_body",
        "_meaning",
        "_started",
        "api",
        "asked",
        "call",
        "call_id",
        "digest",
        "emitter",
        "frame",
        "model",
        "opened",
        "raw",
        "streamed",
        "turn",
    )

    def __init__(self, frame: Frame, api: Api, body: bytes | dict[str, Any], streamed: bool, model: str) -> None:
        self.frame = frame
        self.api = api
        # The body's JSON as the SDK sends it (or a copy of a body orjson does not write): ours alone.
        self.raw = body if isinstance(body, bytes) else b""
        self._body: dict[str, Any] | None = None if isinstance(body, bytes) else body
        self._meaning: dict[str, JSON] | None = None
        self.streamed = streamed
        self.model = model
        self.call_id = frame.next_call_id("turn", self.model)
        self.emitter = frame.run.emitter
        self.opened = stamp()
        self.asked: Stamp | None = None
        self.digest: str | Literal[False] | None = False  # not hashed yet
        self.turn: Turn | None = None
        self.call: ModelCall | None = None
        self._started = False  # the turn's start handed over (else with the model call's, in one work)

    def edited(self) -> dict[str, Any] | None:
        """A fork's edited input messages of this turn, as the body the request sends instead (now this
        exchange's: its hash, and what its turn shows); None when the fork does not edit them."""
        edits = self.frame.run.edits
        edit = edits.get(self.call_id) if edits else None
        messages = edit.get("messages") if edit is not None else None
        if not isinstance(messages, list):
            return None
        body = edited_body(self.api.name, self.body, messages)  # type: ignore[arg-type]
        if body is not None:
            self._body, self.raw, self._meaning, self.digest = body, orjson.dumps(body), None, False
        return body

    def recorded(self) -> Recorded | None:
        """The journaled answer to this request, if the run replays one of this API and form."""
        frame = self.frame
        if frame.run.observe is None and not frame.replay["prompt"] and not frame.run.edits:
            return None  # nothing to find, no one to tell: the hash can wait
        self.emitter.defer(self._start)  # before the lookup: a refused request ends a turn that started
        self._started = True
        try:
            entry = frame.cached("prompt", self._digest(), call_id=self.call_id, request=self.meaning)
        except BaseException as exc:  # the run's observer refused the request: the turn fails with its error
            self.failed(exc)
            raise
        output = entry["output"] if entry is not None else None
        if isinstance(output, str):  # a fork's edited answer, as text: written as this API's answer
            return recorded_text(self.api.name, self.streamed, self.model, output)  # type: ignore[return-value]
        if not isinstance(output, dict) or output.get("api") != self.api.name:
            return None
        if not isinstance(output.get("sse" if self.streamed else "body"), str if self.streamed else dict):
            return None
        return output  # type: ignore[return-value]

    def serve(self, recorded: Recorded) -> tuple[int, str, bytes]:
        """The turn ends with the journaled answer; its status, content type and bytes, for the SDK."""
        self.emitter.defer(functools.partial(self._served, recorded, stamp()))
        if self.streamed:
            return recorded.get("status", 200), SSE_TYPE, recorded["sse"].encode()
        return recorded.get("status", 200), "application/json", orjson.dumps(recorded["body"])

    def ask(self) -> None:
        """The provider is asked: the model call starts."""
        self.asked = stamp()
        self.emitter.defer(self._ask if self._started else self._start_and_ask)
        self._started = True

    def answered(self, status: int, content: bytes) -> None:
        """A whole answer came: read, priced and journaled later, where the turn ends."""
        self.emitter.defer(functools.partial(self._answered, status, content, stamp()))

    def streaming(self, status: int) -> Listener:
        """A streamed answer starts: what reads its bytes as they pass, and ends the turn with the last."""
        return Listener(self, status, TurnProgress(self._progressed))

    def failed(self, error: BaseException) -> None:
        """The request failed (as it fails: its error's stack is told now, while it is the one it raised with)."""
        with self.emitter.settled():
            self._fail(error)

    def _fail(self, error: BaseException) -> None:
        assert self.turn is not None
        if self.call is not None:
            self.call.failed(error)
        self.turn.failed(error)

    @property
    def body(self) -> dict[str, Any]:
        """The request's body, read back from its JSON (ours: nothing else holds it)."""
        if self._body is None:
            self._body = orjson.loads(self.raw)
        return self._body

    @property
    def meaning(self) -> dict[str, JSON]:
        """What the content hash is the hash of: the API and the body, less what changes nothing."""
        if self._meaning is None:
            body, unhashed = self.body, self.api.not_hashed
            request = body if unhashed.isdisjoint(body) else {k: v for k, v in body.items() if k not in unhashed}
            self._meaning = {"api": self.api.name, "request": request}
        return self._meaning

    def _digest(self) -> str | None:
        if self.digest is False:
            try:  # the body is a copy, of JSON only
                self.digest = content_hash_of_json(self.meaning)
            except NotJSONError:  # an integer beyond canonical JSON's 64 bits: recorded, never journaled
                self.digest = None
        return self.digest

    # The deferred work, in the order it is handed over: it emits through the emitter's `send`.

    def _start(self) -> None:
        frame, call_id = self.frame, self.call_id
        self.turn = Turn(
            frame,
            parent_span=frame.span_id,
            call_id=call_id,
            step=int(call_id.rpartition(":")[2]),
            model={"id": self.model, "provider": self.api.provider},
            content_hash=self._digest(),
            request=self.meaning,
            started=self.opened[1],
            emit=self.emitter.send,
        )
        shown = self.api.shown(self.body)
        self.turn.start(messages=shown.messages, schema=shown.schema, tools=shown.tools, at=self.opened)  # type: ignore[arg-type]

    def _start_and_ask(self) -> None:
        self._start()
        self._ask()

    def _ask(self) -> None:
        assert self.turn is not None
        count = len(self.body.get("messages") or ())
        api = self.api
        self.call = self.turn.call(adapter_id=self.model, provider=api.provider, message_count=count, at=self.asked)

    def _served(self, recorded: Recorded, at: Stamp) -> None:
        assert self.turn is not None
        if self.streamed:
            message = self._read(recorded["sse"].encode()).answer().message
        else:
            message = self.api.answer(recorded["body"]).message  # type: ignore[arg-type]
        self.turn.served(message, journal=recorded, at=at)  # type: ignore[arg-type]

    def _answered(self, status: int, content: bytes, at: Stamp) -> None:
        try:
            body, api = orjson.loads(content), self.api.name
            # The frame keeps the entry as text around the provider's bytes (one object, not a dozen that
            # live as long as the run): the parsed body is the event's, and gone with it.
            kept = JsonText(b'{"api":%b,"status":%d,"body":%b}' % (orjson.dumps(api), status, content))
            self._finish(self.api.answer(body), {"api": api, "status": status, "body": body}, at, kept=kept)
        except Exception as exc:  # an answer we cannot read is the SDK's to refuse; the turn says so
            self._fail(exc)

    def _progressed(self, text: str) -> None:
        # A streamed answer's text so far, told by the tee as it passes (`TurnProgress`): its event later.
        timestamp = now_ms()
        self.emitter.defer(lambda: self.call.progressed(text, timestamp))  # type: ignore[union-attr]

    def _finish(
        self, answer: Answer, recorded: Recorded, at: Stamp, first_at: float | None = None, kept: Any = None
    ) -> None:
        assert self.call is not None
        assert self.turn is not None
        reply = answer.reply(self.frame.run.prices, self.api.provider, self.model)
        message: Any = answer.message
        self.call.answered(
            reply["usage"], reply.get("costs"), reply.get("finishReason"), message=message, at=at, first_at=first_at
        )
        # `recorded` was just parsed from the provider's bytes and nothing else holds it: no copy.
        self.turn.answered(answer.message, journal=recorded, fresh=True, kept=kept, at=at)  # type: ignore[arg-type]

    def _read(self, content: bytes) -> StreamReader:
        reader = self.api.reader()
        reader.read(SseDecoder().feed(content + b"\n\n"), [])
        return reader


class Listener:
    """Reads a streamed answer's bytes as the SDK reads them: progress as text arrives, the turn's end at
    the last. A stream closed before the provider's last event ends the turn as failed, journaling
    nothing (a replay must not serve half an answer).

    The bytes are kept as they pass and read in batches: each chunk until the answer's first text (so
    the first progress, and the time to first token, are when it came), then when the next progress is
    due (`PROGRESS_INTERVAL`), and the rest at the end: the same reading, a fraction of the calls.
    """

    __slots__ = (
        "_broken",
        "_decoder",
        "_exchange",
        "_progress",
        "_read",
        "_reader",
        "_status",
        "chunks",
        "done",
        "due",
    )

    def __init__(self, exchange: Exchange, status: int, progress: Any) -> None:
        self._exchange = exchange
        self._status = status
        self._progress = progress
        self._reader = exchange.api.reader()
        self._decoder = SseDecoder()
        # The stream's tee appends each chunk to `chunks` and calls `catch_up()` when `due` has come:
        # no call per chunk in between.
        self.chunks: list[bytes] = []
        self.due = 0.0  # perf_counter() when to read again (0: at every chunk, until the first text)
        self._read = 0  # chunks read so far
        self._broken: Exception | None = None
        self.done = False

    def catch_up(self, *, progress: bool = True) -> None:
        """Read the chunks not read yet (their text told as progress, unless at the end: the turn's end
        carries it)."""
        if self._broken is not None or self._read == len(self.chunks):
            return
        pieces: list[str] = []
        data = b"".join(self.chunks[self._read :])
        self._read = len(self.chunks)
        try:
            self._reader.read(self._decoder.feed(data), pieces)
        except Exception as exc:  # bytes we cannot read are the SDK's to refuse; the caller's stream goes on
            self._broken = exc
        if pieces and progress:
            self._progress.extend(pieces)
            self.due = time.perf_counter() + PROGRESS_INTERVAL

    def close(self, error: BaseException | None = None, *, ended: bool = False) -> None:
        """The stream is closed: `ended` when its bytes ran out (a server that sends no last event is done
        then), with `error` when reading them failed (told now: the error is the one it raised with); the
        rest of its reading, and the turn's end, are deferred work."""
        if self.done:
            return
        self.done = True
        if error is not None:
            self._exchange.failed(error)
            return
        self._exchange.emitter.defer(functools.partial(self._end, ended, stamp()))

    def _end(self, ended: bool, at: Stamp) -> None:
        exchange = self._exchange
        self.catch_up(progress=False)
        error = self._broken
        if error is None and not (ended or self._reader.complete):
            error = StreamClosedError(f"the {exchange.api.name} stream was closed before its end")
        if error is not None:
            exchange._fail(error)
            return
        text = b"".join(self.chunks).decode("utf-8", "replace")
        recorded: Recorded = {"api": exchange.api.name, "status": self._status, "sse": text}
        try:
            exchange._finish(self._reader.answer(), recorded, at, self._progress.first_at)
        except Exception as exc:  # what the SDK read, we could not: the turn says so
            exchange._fail(exc)
