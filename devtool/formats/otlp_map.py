"""OpenTelemetry spans as TraceEvents: each span a start and an end event the rest of the DevTool reads.

A span becomes `<kind>:start` at its start time and `<kind>:end` at its end time, with the span's own
ids as `trace.traceId/spanId/parentSpanId`, so spans nest by parent span id, a trace is a run, and
the timeline, frame tree, detail panel and search read them as they read the DevTool's own. The
start event carries everything the span said under `otel` (name, kind, status, scope, resource,
attributes, events, links, trace state): nothing is dropped, and an export gives the span back.

| the span says | kind |
|---|---|
| `gen_ai.operation.name` `invoke_agent` · OpenInference `AGENT` | `agent` |
| `chat`, `text_completion`, `generate_content` · `LLM` · (no operation, but `gen_ai.system`) | `turn` |
| `execute_tool` · `TOOL` | `tools:execute` (a batch of one call) |
| anything else (`embeddings`, `CHAIN`, `RETRIEVER`, an HTTP span ...) | `custom:span` |

The GenAI operation wins over the OpenInference kind. Fields (the first source present wins; the
names are in `semconv.py`):

- every event: `agentId` from `gen_ai.agent.name`, `agent.name` (an agent span without either: its
  span name; other spans: ""); `name`, the span name.
- agent: `props` from `input.value`, else `gen_ai.input.messages`; `result` from `output.value`,
  Pydantic AI's `final_result`, else the first of `gen_ai.output.messages`.
- turn: `model` `{id: gen_ai.request.model | gen_ai.response.model | llm.model_name, provider:
  gen_ai.provider.name | gen_ai.system | llm.provider | llm.system}`; `messages` and the answer
  `message` as `messages.py` says (GenAI latest, then OpenInference, then the per-message events);
  `usage` `{promptTokens: gen_ai.usage.input_tokens | gen_ai.usage.prompt_tokens |
  llm.token_count.prompt, completionTokens: ..output_tokens | ..completion_tokens |
  llm.token_count.completion, totalTokens: llm.token_count.total, else the sum, details:
  {cacheReadTokens, cacheWriteTokens}}` and `costs {micro_usd}` from the DevTool's price table
  (`devtool.core.providers.pricing`) for the provider and the model that answered (else the one asked
  for), when both token counts are known: a turn that carries its usage is a model request of its
  own to the store (`run_summary.MODEL_REQUEST_END`), so run totals and the detail panel count it.
- tools: `toolNames` `[gen_ai.tool.name | tool.name | the span name]`, and on the end one
  `toolResults` entry `{toolName, toolCallId: gen_ai.tool.call.id | tool_call.id, input:
  gen_ai.tool.call.arguments | tool_arguments | input.value, output: gen_ai.tool.call.result |
  tool_response | output.value, duration, success, error}`.
- custom: `props` from `input.value`, `result` from `output.value`.
- every end: `duration` (end − start, ms) and `success`; status ERROR (or no status and a GenAI
  `error.type`) is `success: false` with
  `error {name: the last exception event's exception.type | error.type | "Error", message: the
  status message | exception.message | the name, stack: exception.stacktrace}`.

A value held as JSON text (tool arguments, `input.value`) is read into the object or array it holds.
A field with no value is left out. Times are ms since the epoch to the microsecond (`otlp_values.ms`).
`devtool.store.otlp_sql` computes the very same events in SQL for files; a test holds them equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, cast

from devtool.core.events import SCHEMA_VERSION, TraceEvent
from devtool.core.jsonvalue import JSON
from devtool.core.model import Usage
from devtool.core.providers.pricing import PriceTable, default_price_table
from devtool.formats import semconv as sc
from devtool.formats.messages import (
    Message,
    clean,
    event_answer,
    event_messages,
    genai_answer,
    genai_messages,
    openinference_messages,
    structured,
    system_message,
)
from devtool.formats.otlp_spans import OtlpSpan
from devtool.formats.otlp_values import SPAN_KINDS, STATUS_CODES, STATUS_ERROR, STATUS_UNSET, ms


def otlp_events(spans: Iterable[OtlpSpan], prices: PriceTable | None = None) -> Iterator[TraceEvent]:
    """The start and end events of each span, in span order; costs from `prices` (default: the DevTool's)."""
    table = default_price_table() if prices is None else prices
    for span in spans:
        yield from span_events(span, table)


def span_events(span: OtlpSpan, prices: PriceTable | None = None) -> tuple[TraceEvent, TraceEvent]:
    """The `<kind>:start` and `<kind>:end` events of one span."""
    # Written field by field, in the order the events have always had (their text is their identity:
    # `event_sql.EVENT_KEY_SQL`), leaving out fields with no value; this runs for every posted span.
    attributes = span.attributes
    kind = span_kind(attributes)
    start_ms, end_ms = ms(span.start_ns), ms(span.end_ns)
    agent_id = _first_text(attributes, sc.AGENT_NAME)
    name = span.name
    trace = {"traceId": span.trace_id, "spanId": span.span_id, "parentSpanId": span.parent_span_id}
    agent = span.name if agent_id is None and kind == "agent" else agent_id or ""
    start: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "type": kind + ":start",
        "timestamp": start_ms,
        "agentId": agent,
        "trace": trace,
        "name": name,
    }
    end: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "type": kind + ":end",
        "timestamp": end_ms,
        "agentId": agent,
        "trace": trace,
        "name": name,
    }
    failed = _failed(span)
    closing: dict[str, Any] = {"duration": end_ms - start_ms, "success": not failed}
    if failed:
        closing["error"] = _error(span)
    if kind == "agent":
        props = _first_value(attributes, sc.INPUT, structured)
        if props is None:
            props = _messages_value(genai_messages(attributes.get(sc.INPUT_MESSAGES)))
        _put(start, "props", props)
        end.update(closing)
        result = _first_value(attributes, sc.AGENT_OUTPUT, structured)
        _put(
            end,
            "result",
            result if result is not None else cast(JSON, genai_answer(attributes.get(sc.OUTPUT_MESSAGES))),
        )
    elif kind == "turn":
        model = clean({"id": _first_text(attributes, sc.MODEL), "provider": _first_text(attributes, sc.PROVIDER)})
        if model:
            start["model"] = end["model"] = model
        _put(start, "messages", _messages_value(_turn_messages(span)))
        end.update(closing)
        _put(end, "message", cast(JSON, _turn_answer(span)))
        usage = _usage(attributes)
        _put(end, "usage", cast(JSON, usage))
        _put(end, "costs", _costs(attributes, usage, default_price_table() if prices is None else prices))
    elif kind == "tools:execute":
        tool = _first_text(attributes, sc.TOOL_NAME)
        tool = name if tool is None else tool
        start["toolNames"] = [tool]
        start["toolCallsCount"] = 1
        end["toolNames"] = [tool]
        end["toolCallsCount"] = 1
        end.update(closing)
        result = {
            "toolName": tool,
            "toolCallId": _first_text(attributes, sc.TOOL_CALL_ID),
            "input": _first_value(attributes, sc.TOOL_ARGUMENTS, structured),
            "output": _first_value(attributes, sc.TOOL_RESULT, structured),
            **closing,
        }
        end["toolResults"] = [clean(result)]
    else:
        _put(start, "props", _first_value(attributes, sc.INPUT, structured))
        end.update(closing)
        _put(end, "result", _first_value(attributes, sc.OUTPUT, structured))
    start["otel"] = _otel(span)
    return cast(TraceEvent, start), cast(TraceEvent, end)


def _put(event: dict[str, Any], key: str, value: JSON) -> None:
    if value is not None:
        event[key] = value


def span_kind(attributes: Mapping[str, JSON]) -> str:
    """The TraceEvent kind of a span with these attributes (the table in the module docstring)."""
    operation = attributes.get(sc.OPERATION)
    if isinstance(operation, str):
        return sc.OPERATION_KINDS.get(operation, sc.CUSTOM)
    kind = attributes.get(sc.OPENINFERENCE_KIND)
    if isinstance(kind, str):
        return sc.OPENINFERENCE_KINDS.get(kind.upper(), sc.CUSTOM)
    if any(isinstance(attributes.get(key), str) for key in sc.MODEL_CALL_MARKERS):
        return "turn"
    return sc.CUSTOM


def _first_text(attributes: Mapping[str, JSON], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if type(value) is str:
            return value
    return None


def _first_int(attributes: Mapping[str, JSON], keys: Iterable[str]) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if type(value) is int:  # not a bool, which is an int to isinstance
            return value
    return None


def _first_value(attributes: Mapping[str, JSON], keys: Iterable[str], read: Any) -> JSON:
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return cast(JSON, read(value))
    return None


def _messages_value(messages: list[Message] | None) -> JSON:
    return None if messages is None else cast(JSON, messages)


def _turn_messages(span: OtlpSpan) -> list[Message] | None:
    system = system_message(span.attributes.get(sc.SYSTEM_INSTRUCTIONS))
    inputs = genai_messages(span.attributes.get(sc.INPUT_MESSAGES))
    if system is not None or inputs is not None:
        return ([system] if system is not None else []) + (inputs or [])
    found = openinference_messages(span.attributes, sc.OI_INPUT)
    return found if found is not None else event_messages(span.events)


def _turn_answer(span: OtlpSpan) -> Message | None:
    answer = genai_answer(span.attributes.get(sc.OUTPUT_MESSAGES))
    if answer is None:
        outputs = openinference_messages(span.attributes, sc.OI_OUTPUT)
        answer = outputs[0] if outputs else None
    return answer if answer is not None else event_answer(span.events)


def _usage(attributes: Mapping[str, JSON]) -> dict[str, JSON] | None:
    prompt = _first_int(attributes, sc.PROMPT_TOKENS)
    completion = _first_int(attributes, sc.COMPLETION_TOKENS)
    total = _first_int(attributes, sc.TOTAL_TOKENS)
    if total is None and (prompt is not None or completion is not None):
        total = (prompt or 0) + (completion or 0)
    counts: dict[str, JSON] = {}
    _put(counts, "promptTokens", prompt)
    _put(counts, "completionTokens", completion)
    _put(counts, "totalTokens", total)
    read = _first_int(attributes, sc.CACHE_READ_TOKENS)
    written = _first_int(attributes, sc.CACHE_WRITE_TOKENS)
    if read is not None or written is not None:
        details: dict[str, JSON] = {}
        _put(details, "cacheReadTokens", read)
        _put(details, "cacheWriteTokens", written)
        counts["details"] = details
    return counts or None


def _costs(attributes: Mapping[str, JSON], usage: dict[str, JSON] | None, prices: PriceTable) -> JSON:
    """What the request cost by the price table, when its provider, model and both token counts are known."""
    provider = _first_text(attributes, sc.PROVIDER)
    if provider is None or usage is None:
        return None
    models = tuple(model for key in sc.PRICED_MODEL if type(model := attributes.get(key)) is str)
    if not models:
        return None
    details = usage.get("details")
    counts = [usage.get("promptTokens"), usage.get("completionTokens")]
    if isinstance(details, dict):
        counts += [details.get(key, 0) for key in ("cacheReadTokens", "cacheWriteTokens")]
    for count in counts:
        if not (isinstance(count, int) and 0 <= count <= sc.MAX_TOKENS):
            return None
    return cast(JSON, prices.cost(provider, models, cast(Usage, usage)))


def _failed(span: OtlpSpan) -> bool:
    """Status ERROR; or, with no status set, a GenAI `error.type` (which the conventions set only when the
    operation failed: an instrumentation that forgot the status still said so). An exception event alone
    is not a failure: OpenTelemetry records handled exceptions too."""
    if span.status_code == STATUS_ERROR:
        return True
    return span.status_code == STATUS_UNSET and isinstance(span.attributes.get(sc.ERROR_TYPE), str)


def _error(span: OtlpSpan) -> JSON:
    exception = next((e.attributes for e in reversed(span.events) if e.name == sc.EXCEPTION_EVENT), {})
    stated = _first_text(exception, (sc.EXCEPTION_TYPE,))
    name = _first_of(stated, _first_text(span.attributes, (sc.ERROR_TYPE,)), "Error")
    message = _first_of(span.status_message or None, _first_text(exception, (sc.EXCEPTION_MESSAGE,)), name)
    return clean({"name": name, "message": message, "stack": _first_text(exception, (sc.EXCEPTION_STACK,))})


def _first_of(*values: str | None) -> str:
    return next(value for value in values if value is not None)


def _otel(span: OtlpSpan) -> JSON:
    return {
        "name": span.name,
        "kind": SPAN_KINDS[span.kind],
        "status": {"code": STATUS_CODES[span.status_code], "message": span.status_message},
        "scope": {"name": span.scope_name, "version": span.scope_version},
        "resource": span.resource,
        "attributes": span.attributes,
        "events": [{"name": e.name, "timestamp": ms(e.time_ns), "attributes": e.attributes} for e in span.events],
        "links": [{"traceId": k.trace_id, "spanId": k.span_id, "attributes": k.attributes} for k in span.links],
        "traceState": span.trace_state,
    }
