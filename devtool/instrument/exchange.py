"""One SDK request in a recorded run: its turn, its content hash, its journal entry, its answer.

The journal keeps what the provider answered, as it answered (`Recorded`): the status and the JSON
body of a whole answer, or the text of a streamed one's server-sent events. A replay hands exactly
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

import time
from typing import Any, Final, TypedDict

import orjson

from devtool.core.frame import Frame
from devtool.core.jsonvalue import JSON, NotJSONError, content_hash_of_json
from devtool.core.providers.adapter import Answer
from devtool.core.providers.pricing import default_price_table
from devtool.core.streaming import PROGRESS_INTERVAL
from devtool.core.turns import ModelCall, Turn
from devtool.instrument.api import Api, StreamReader
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
    """A model request made through an SDK in `frame`: a turn, answered from the journal or by the provider."""

    __slots__ = ("api", "body", "call", "model", "streamed", "turn")

    def __init__(self, frame: Frame, api: Api, body: dict[str, Any]) -> None:
        self.api = api
        self.body = body
        self.streamed = body.get("stream") is True
        self.model = str(body.get("model", ""))
        meaning: dict[str, JSON] = {
            "api": api.name,
            "request": {name: value for name, value in body.items() if name not in api.not_hashed},
        }
        try:  # the body is a `json_copy` already
            digest: str | None = content_hash_of_json(meaning)
        except NotJSONError:  # an integer beyond canonical JSON's 64 bits: recorded, never journaled
            digest = None
        call_id = frame.next_call_id("turn", self.model)
        self.turn = Turn(
            frame,
            parent_span=frame.span_id,
            call_id=call_id,
            step=int(call_id.rpartition(":")[2]),
            model={"id": self.model, "provider": api.provider},
            content_hash=digest,
            request=meaning,
        )
        shown = api.shown(body)
        self.turn.start(messages=shown.messages, schema=shown.schema, tools=shown.tools)  # type: ignore[arg-type]
        self.call: ModelCall | None = None

    def recorded(self) -> Recorded | None:
        """The journaled answer to this request, if the run replays one of this API and form."""
        entry = self.turn.cached()
        output = entry["output"] if entry is not None else None
        if not isinstance(output, dict) or output.get("api") != self.api.name:
            return None
        if not isinstance(output.get("sse" if self.streamed else "body"), str if self.streamed else dict):
            return None
        return output  # type: ignore[return-value]

    def serve(self, recorded: Recorded) -> tuple[int, str, bytes]:
        """The turn ends with the journaled answer; its status, content type and bytes, for the SDK."""
        if self.streamed:
            text = recorded["sse"]
            self.turn.served(self._read(text.encode()).answer().message, journal=recorded)  # type: ignore[arg-type]
            return recorded.get("status", 200), SSE_TYPE, text.encode()
        body: dict[str, Any] = recorded["body"]  # type: ignore[assignment]
        self.turn.served(self.api.answer(body).message, journal=recorded)  # type: ignore[arg-type]
        return recorded.get("status", 200), "application/json", orjson.dumps(body)

    def ask(self) -> None:
        """The provider is asked: the model call starts."""
        self.call = self.turn.call(
            adapter_id=self.model, provider=self.api.provider, message_count=len(self.body.get("messages") or ())
        )

    def answered(self, status: int, content: bytes) -> None:
        """A whole answer came: priced, journaled, the turn ends."""
        body = orjson.loads(content)
        self._finish(self.api.answer(body), {"api": self.api.name, "status": status, "body": body})

    def streaming(self, status: int) -> Listener:
        """A streamed answer starts: what reads its bytes as they pass, and ends the turn with the last."""
        assert self.call is not None
        return Listener(self, status, self.call.progress())

    def failed(self, error: BaseException) -> None:
        if self.call is not None:
            self.call.failed(error)
        self.turn.failed(error)

    def _finish(self, answer: Answer, recorded: Recorded) -> None:
        assert self.call is not None
        reply = answer.reply(default_price_table(), self.api.provider, self.model)
        message: Any = answer.message
        self.call.answered(reply["usage"], reply.get("costs"), reply.get("finishReason"), message=message)
        # `recorded` was just parsed from the provider's bytes and nothing else holds it: no copy.
        self.turn.answered(answer.message, journal=recorded, fresh=True)  # type: ignore[arg-type]

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

    def catch_up(self) -> None:
        """Read the chunks not read yet."""
        if self._broken is not None or self._read == len(self.chunks):
            return
        pieces: list[str] = []
        data = b"".join(self.chunks[self._read :])
        self._read = len(self.chunks)
        try:
            self._reader.read(self._decoder.feed(data), pieces)
        except Exception as exc:  # bytes we cannot read are the SDK's to refuse; the caller's stream goes on
            self._broken = exc
        if pieces:
            self._progress.extend(pieces)
            self.due = time.perf_counter() + PROGRESS_INTERVAL

    def close(self, error: BaseException | None = None, *, ended: bool = False) -> None:
        """The stream is closed: `ended` when its bytes ran out (a server that sends no last event is done
        then), with `error` when reading them failed."""
        if self.done:
            return
        self.done = True
        exchange = self._exchange
        self.catch_up()
        error = error or self._broken
        if error is None and not (ended or self._reader.complete):
            error = StreamClosedError(f"the {exchange.api.name} stream was closed before its end")
        if error is not None:
            exchange.failed(error)
            return
        text = b"".join(self.chunks).decode("utf-8", "replace")
        exchange._finish(self._reader.answer(), {"api": exchange.api.name, "status": self._status, "sse": text})
