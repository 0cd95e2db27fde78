"""The playground page of a recorded turn: what it sent (messages, tools, model, parameters) as the
editor's starting point, what it answered, and an answer's word diff against the recorded one.

Any turn has one: `prompt()`'s, an SDK-recorded request's (its messages as the turn shows them), and an
OpenTelemetry chat span's (its messages as `devtool.formats.messages` read them). The model is named
`PROVIDER:MODEL` from the turn's own when its provider is one the core providers have, else
`DEVTOOL_MODEL` (a scripted model's turn, a provider we have no adapter for), else left to the user.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from typing import Any

from devtool.actions.playground import PARAMS
from devtool.core.providers import MODEL_ENV
from devtool.store import NotFoundError, Store
from devtool.store.queries import span_detail
from devtool.store.queries.usage import Usage, span_usage
from devtool.web.pages.call_edit import editor_json

KNOWN_PROVIDERS = ("openai", "anthropic")


@dataclass(frozen=True)
class RecordedTurn:
    """A turn as the playground opens it."""

    trace_id: str
    span_id: str
    call_id: str | None
    messages: list[Any]
    tools: list[Any]
    model: str  # what the editor starts from: PROVIDER:MODEL ("" when nothing fits and no DEVTOOL_MODEL)
    recorded_model: str  # the model the turn names, as it names it
    params: dict[str, Any]
    answer: Any
    answer_text: str
    usage: Usage
    cached: bool

    @property
    def messages_text(self) -> str:
        return editor_json(self.messages)

    @property
    def tools_text(self) -> str:
        return editor_json(self.tools)

    @property
    def params_text(self) -> str:
        return editor_json(self.params)


@dataclass(frozen=True)
class Piece:
    """A piece of a word diff: `same`, `added` (in the new answer only) or `removed` (recorded only)."""

    change: str
    text: str


def recorded_turn(store: Store, trace_id: str, span_id: str) -> RecordedTurn:
    """The turn `span_id` of run `trace_id`; `NotFoundError` when it is no turn (or has no messages)."""
    detail = span_detail(store, trace_id, span_id)
    if detail.kind != "turn":
        raise NotFoundError(f"span {span_id} is a {detail.kind} span, not a model turn: the playground opens turns")
    start, end = detail.start_event or {}, detail.end_event or {}
    messages = start.get("messages") or end.get("messages")
    if not isinstance(messages, list) or not messages:
        raise NotFoundError(f"turn {span_id} carries no messages: there is nothing to send again")
    model = next((m for m in (start.get("model"), end.get("model")) if isinstance(m, dict)), {})
    config = start.get("toolConfig") or end.get("toolConfig") or {}
    tools: list[Any] = config["tools"] if isinstance(config, dict) and isinstance(config.get("tools"), list) else []
    answer = end.get("message")
    content = answer.get("content") if isinstance(answer, dict) else answer
    params: dict[str, Any] = model["params"] if isinstance(model.get("params"), dict) else {}
    return RecordedTurn(
        trace_id=trace_id,
        span_id=span_id,
        call_id=detail.call_id,
        messages=messages,
        tools=tools,
        model=_model_name(model),
        recorded_model=":".join(str(model[key]) for key in ("provider", "id") if model.get(key)),
        params={key: value for key, value in params.items() if key in PARAMS},
        answer=answer,
        answer_text=content if isinstance(content, str) else "",
        usage=span_usage(store, trace_id, span_id),
        cached=bool(detail.cache),
    )


def word_diff(recorded: str, new: str) -> list[Piece]:
    """`new` against `recorded`, word by word (whitespace kept with the word before it)."""
    before, after = re.findall(r"\S+\s*", recorded), re.findall(r"\S+\s*", new)
    pieces: list[Piece] = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes():
        if op == "equal":
            pieces.append(Piece("same", "".join(after[b0:b1])))
            continue
        if a1 > a0:
            pieces.append(Piece("removed", "".join(before[a0:a1])))
        if b1 > b0:
            pieces.append(Piece("added", "".join(after[b0:b1])))
    return pieces


def _model_name(model: dict[str, Any]) -> str:
    provider, model_id = str(model.get("provider") or "").lower(), str(model.get("id") or "")
    for known in KNOWN_PROVIDERS:
        if provider.startswith(known) and model_id:
            return f"{known}:{model_id}"
    return os.environ.get(MODEL_ENV, "").strip()
