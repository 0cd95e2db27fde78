"""`prompt()`: the model↔tool loop of the current agent.

Each model request is a turn (`turn:start`/`turn:end`); the tool calls the model asks for run as
one batch (`tools:execute`); their results go back to the model until it answers. The turn's input
(messages, schema, the model's identity, tool definitions) is hashed: on a replay a turn found in
the frame's journal returns the recorded message and the model is not called. With a schema, the
answer is parsed and validated; a bad answer is sent back with the reason, a bounded number of times.

The model is the one given to `prompt()`, else the agent's (or an enclosing agent's), else
`DEVTOOL_MODEL`; a string (`"openai:gpt-4.1-mini"`) names a provider's model. A streaming model's
answer is reported as it grows (`turn:progress`, see `streaming.py`); the journal keeps the final
message only. Each real request's tokens and cost go on its `model:call:end` and into the budgets.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.core.errors import ModelError, PromptError
from devtool.core.events import EVENTS, TraceEvent, error_info, trace_event
from devtool.core.frame import Frame, current_frame
from devtool.core.ids import new_span_id
from devtool.core.jsonvalue import JSON, NotJSONError, content_hash, describe, json_copy
from devtool.core.model import Message, Model, ToolCallRequest, ToolDefinition, model_identity
from devtool.core.providers import default_model, resolve_model
from devtool.core.schema import InvalidSchemaError, SchemaViolation, validator
from devtool.core.tools import PlannedCall, Tool, run_batch
from devtool.core.turns import MODEL_CALL, Turn

MAX_TURNS = 24
MAX_SCHEMA_RETRIES = 2


def prompt(
    messages_or_text: str | Sequence[Message],
    *,
    schema: dict[str, JSON] | None = None,
    tools: Sequence[Tool] = (),
    model: Model | str | None = None,
) -> Awaitable[Any]:
    """Ask the model until it answers: the text, or with `schema`, the parsed and validated JSON."""
    frame = current_frame("prompt()")
    chosen = resolve_model(model) or frame.effective_model() or default_model()
    if chosen is None:
        raise ModelError(
            "no model for this prompt: pass model= to prompt() or to create_agent(), or set DEVTOOL_MODEL "
            '(e.g. "openai:gpt-4.1-mini")'
        )
    if isinstance(messages_or_text, str):
        messages: list[Message] = [{"role": "user", "content": messages_or_text}]
    else:
        try:
            messages = json_copy(list(messages_or_text))  # type: ignore[assignment]
        except NotJSONError as exc:
            raise PromptError(f"prompt messages must be JSON: {exc}") from None
    try:
        check = validator(schema) if schema is not None else None
    except InvalidSchemaError as exc:
        raise PromptError(f"prompt schema is not a valid JSON schema: {exc}") from None
    conversation = _Conversation(
        frame=frame,
        model=chosen,
        schema=schema,
        check=check,
        tools={tool.name: tool for tool in tools},
        definitions=[tool.definition() for tool in tools],
        call_id=frame.next_call_id("prompt", chosen.id),
        span_id=new_span_id(),
        identity=model_identity(chosen),
    )
    return conversation.run(messages)


@dataclass(frozen=True)
class _Conversation:
    frame: Frame
    model: Model
    schema: dict[str, JSON] | None
    check: Any
    tools: dict[str, Tool]
    definitions: list[ToolDefinition]
    call_id: str
    span_id: str
    identity: dict[str, JSON]

    def _event(self, kind: str, span: str, parent: str, **fields: Any) -> TraceEvent:
        return trace_event(kind, self.frame.agent_id, self.frame.run.trace_id, span, parent, **fields)

    async def run(self, messages: list[Message]) -> Any:
        frame, started = self.frame, time.perf_counter()
        common = {"callId": self.call_id, "model": self.identity}
        frame.emit(self._event(EVENTS.PROMPT_START, self.span_id, frame.span_id, **common))
        outcome: dict[str, Any] = {"success": False}
        try:
            answer = await self._loop(messages)
            outcome = {"success": True, "result": describe(answer)}
        except Exception as exc:
            outcome["error"] = error_info(exc)
            raise
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            frame.emit(
                self._event(EVENTS.PROMPT_END, self.span_id, frame.span_id, duration=elapsed, **common, **outcome)
            )
        return answer

    async def _loop(self, messages: list[Message]) -> Any:
        retries = 0
        for step in range(MAX_TURNS):
            message = await self._turn(step, messages)
            messages.append(message)
            if calls := message.get("tool_calls"):
                messages.extend(await self._run_tools(calls))
                continue
            if self.check is None:
                return message.get("content")
            try:
                return self._parse(message.get("content"))
            except SchemaViolation as exc:
                retries += 1
                self.frame.emit(
                    self._event(
                        EVENTS.VALIDATION_FAILURE,
                        new_span_id(),
                        self.span_id,
                        callId=self.call_id,
                        attempt=retries,
                        error={"name": "SchemaViolation", "message": str(exc)},
                    )
                )
                if retries > MAX_SCHEMA_RETRIES:
                    raise PromptError(
                        f"the model's answer did not match the schema after {retries} attempts: {exc}"
                    ) from None
                messages.append(
                    {
                        "role": "user",
                        "content": f"Your answer is not valid: {exc}. Answer again, as JSON matching the schema.",
                    }
                )
        raise PromptError(f"no final answer after {MAX_TURNS} turns (the model kept asking for tools)")

    async def _turn(self, step: int, messages: list[Message]) -> Message:
        frame = self.frame
        call_id = frame.next_call_id("turn", self.model.id)
        edit = frame.run.edits.get(call_id) if frame.run.edits else None
        if edit is not None and "messages" in edit:
            # A fork's edited input: this turn sends it, and the later turns go on from it.
            messages[:] = json_copy(edit["messages"])  # type: ignore[assignment]
        turn = Turn(
            frame,
            parent_span=self.span_id,
            call_id=call_id,
            step=step,
            model=self.identity,
            content_hash=content_hash([messages, self.schema, self.identity, self.definitions]),
            request={"messages": messages, "schema": self.schema, "model": self.identity, "tools": self.definitions},
        )
        turn.start(messages=list(messages), schema=self.schema, tools=self.definitions)  # type: ignore[arg-type]
        entry = turn.cached()
        if entry is not None:
            output = entry["output"]
            # A fork may give a turn's answer as its text alone.
            message: Message = (
                {"role": "assistant", "content": output} if isinstance(output, str) else json_copy(output)  # type: ignore[assignment]
            )
            turn.served(message)  # type: ignore[arg-type]
            return message
        try:
            message = await self._call_model(turn, messages)
        except Exception as exc:
            turn.failed(exc)
            raise
        turn.answered(message)  # type: ignore[arg-type]
        return message

    async def _call_model(self, turn: Turn, messages: list[Message]) -> Message:
        call = turn.call(adapter_id=self.model.id, provider=self.model.provider, message_count=len(messages))
        # The adapter's SDK request is this turn's: instrumentation of the SDK lets it through.
        token = MODEL_CALL.set(True)
        try:
            if getattr(self.model, "streams", False) is True:
                pending = self.model.call(
                    list(messages), schema=self.schema, tools=self.definitions, progress=call.progress()
                )  # type: ignore[call-arg]
            else:
                pending = self.model.call(list(messages), schema=self.schema, tools=self.definitions)
            reply = await pending
            message = _assistant_message(reply.get("message"), self.model)
        except Exception as exc:
            call.failed(exc)
            raise
        finally:
            MODEL_CALL.reset(token)
        answer: Any = message
        call.answered(reply.get("usage"), reply.get("costs"), reply.get("finishReason"), message=answer)
        return message

    async def _run_tools(self, requests: list[ToolCallRequest]) -> list[Message]:
        planned = []
        for request in requests:
            tool = self.tools.get(request["name"])
            arguments: Any = request.get("arguments", {})
            if isinstance(arguments, str):
                try:
                    arguments = orjson.loads(arguments) if arguments.strip() else {}
                except orjson.JSONDecodeError:
                    arguments = {"$unparsedArguments": arguments}
            config_id = tool.name if tool else request["name"]
            planned.append(
                PlannedCall(tool, arguments, self.frame.next_call_id("tool", config_id), request["id"], request["name"])
            )
        outcomes = await run_batch(self.frame, planned, self.span_id)
        replies: list[Message] = []
        for request, outcome in zip(requests, outcomes, strict=True):
            if outcome.exception is not None:
                content = f"error: {outcome.exception}"
            elif isinstance(outcome.output, str):
                content = outcome.output
            else:
                content = orjson.dumps(outcome.result.get("output")).decode()
            replies.append({"role": "tool", "tool_call_id": request["id"], "content": content})
        return replies

    def _parse(self, content: Any) -> Any:
        if not isinstance(content, str):
            raise SchemaViolation(f"the answer is {type(content).__name__}, not JSON text")
        try:
            value = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise SchemaViolation(f"the answer is not JSON ({exc})") from None
        self.check(value)
        return value


def _assistant_message(message: Any, model: Model) -> Message:
    if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
        raise ModelError(f"model {model.id!r} returned {message!r}, not an assistant message")
    try:
        return json_copy({**message, "role": "assistant"})  # type: ignore[return-value]
    except NotJSONError as exc:
        raise ModelError(f"model {model.id!r} returned a message that is not JSON: {exc}") from None
