"""Any run as OTLP/JSON with GenAI attributes: what Jaeger, Tempo, Phoenix and the Collector read.

`otlp_requests(events)` turns a run's TraceEvents (in store order) into `ExportTraceServiceRequest`
documents of up to `batch` spans each, the shape of the Collector's file exporter (one a line), so
`devtool load` reads the file back. Every span the DevTool shows becomes one OTLP span with the same
trace, span and parent ids, times (to the microsecond) and status:

- a span that came from OpenTelemetry is given back as it came (name, kind, attributes, events,
  links, status, resource and scope, all kept under `otel` on its start event);
- one of the DevTool's own: an agent is `invoke_agent <agent>` (`gen_ai.operation.name`,
  `gen_ai.agent.name`), a turn `chat <model>` (model, provider, `gen_ai.input.messages` and
  `gen_ai.output.messages` in the latest GenAI shape, tokens from the turn or its model calls), a
  tool batch of one call `execute_tool <tool>` (`gen_ai.tool.*`, arguments and result); OpenInference's
  span kind and `input.value`/`output.value` are written too, for viewers that read those. Anything
  else keeps its kind and fields under `devtool.*`. A batch of several tool calls is its span and one
  `execute_tool` child per call (ids derived from the batch's, stable across exports).
- a failed span has status ERROR and an `exception` event; a span still running ends at the run's
  last event with `devtool.running`; point events inside a span become its span events.
- given the events' stored texts (`texts`), each span carries those of its events as
  `devtool.events` (`native.py`): loaded back, the span is those very events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from devtool.core.jsonvalue import JSON
from devtool.formats.native import EVENTS
from devtool.formats.otlp_values import MAX_DEPTH, SPAN_KINDS, STATUS_CODES, VALUE_KEYS
from devtool.formats.pairing import Event, Span, paired_spans

SCOPE = {"name": "devtool", "version": "1"}
RESOURCE: dict[str, JSON] = {"service.name": "devtool"}
_HIDDEN = ("schemaVersion", "trace", "type", "timestamp")

Resource = tuple[bytes, bytes]  # (resource, scope) as canonical JSON: spans are grouped by it


def otlp_requests(
    events: Iterable[Event], *, batch: int = 512, texts: dict[int, str] | None = None
) -> Iterator[dict[str, Any]]:
    """`ExportTraceServiceRequest` documents of the run's spans, `batch` spans at most in each.

    `texts`: each event's JSON text as stored, by the `id()` of its dict in `events` (taken out as it
    is used); each span then carries the texts of its events as `devtool.events`, which loading the
    export reads back as those very events (`native.py`): the run's own export adds nothing to it."""
    usage: dict[str, list[int]] = {}
    pending: list[tuple[Resource, dict[str, Any]]] = []
    for span in paired_spans(events):
        _count_usage(span, usage)
        made = _spans(span, usage)
        if texts is not None:
            carry(made, span, texts)
        pending.extend(made)
        if len(pending) >= batch:
            yield _request(pending[:batch])
            pending = pending[batch:]
    if pending:
        yield _request(pending)


def _request(spans: list[tuple[Resource, dict[str, Any]]]) -> dict[str, Any]:
    groups: dict[Resource, list[dict[str, Any]]] = {}
    for key, span in spans:
        groups.setdefault(key, []).append(span)
    resources: dict[bytes, list[dict[str, Any]]] = {}
    for (resource, scope), members in groups.items():
        resources.setdefault(resource, []).append({"scope": orjson.loads(scope), "spans": members})
    return {
        "resourceSpans": [
            {"resource": {"attributes": attributes(orjson.loads(resource))}, "scopeSpans": scopes}
            for resource, scopes in resources.items()
        ]
    }


def _spans(span: Span, usage: dict[str, list[int]]) -> list[tuple[Resource, dict[str, Any]]]:
    otel = (span.start or {}).get("otel")
    if isinstance(otel, dict):
        return [(_key(otel.get("resource") or {}, otel.get("scope") or {}), _from_otel(span, otel))]
    key = _key(RESOURCE, SCOPE)
    results = (span.end or {}).get("toolResults") or []
    if span.kind == "tools:execute" and len(results) > 1:
        batch = _native(span, usage)
        return [(key, batch)] + [(key, _tool_call(span, result, i)) for i, result in enumerate(results)]
    return [(key, _native(span, usage))]


def carry(made: list[tuple[Resource, dict[str, Any]]], span: Span, texts: dict[int, str]) -> None:
    """The texts of `span`'s events (start, end; a point of its own) on the first of the OTLP spans
    made of it (`EVENTS`); the others (a tool batch's calls) carry none: they add no event. A point
    inside a span is not carried (it stays one of the span's OTLP events)."""
    own = span.points if span.instant else [event for event in (span.start, span.end) if event is not None]
    carried = [texts.pop(id(event)) for event in own]
    if not span.instant:
        for point in span.points:
            texts.pop(id(point), None)
    for index, (_, found) in enumerate(made):
        found["attributes"].append(
            {"key": EVENTS, "value": {"stringValue": orjson.dumps(carried if index == 0 else []).decode()}}
        )


def _key(resource: Any, scope: Any) -> Resource:
    return orjson.dumps(resource, option=orjson.OPT_SORT_KEYS), orjson.dumps(scope, option=orjson.OPT_SORT_KEYS)


def _frame(span: Span, name: str, attrs: dict[str, JSON], *, kind: int = 1) -> dict[str, Any]:
    trace = span.trace
    found: dict[str, Any] = {
        "traceId": trace["traceId"],
        "spanId": trace["spanId"],
        "name": name,
        "kind": kind,
        "startTimeUnixNano": nanos(span.start_ms),
        "endTimeUnixNano": nanos(span.end_ms),
        "attributes": attributes({k: v for k, v in attrs.items() if v is not None}),
        "status": {},
    }
    if trace["parentSpanId"]:
        found["parentSpanId"] = trace["parentSpanId"]
    return found


def _from_otel(span: Span, otel: dict[str, Any]) -> dict[str, Any]:
    kind = otel.get("kind")
    found = _frame(span, str(otel.get("name", "")), otel.get("attributes") or {})
    found["kind"] = SPAN_KINDS.index(kind) if kind in SPAN_KINDS else 0
    status = otel.get("status") or {}
    code = STATUS_CODES.index(status["code"]) if status.get("code") in STATUS_CODES else 0
    found["status"] = {key: value for key, value in (("code", code), ("message", status.get("message"))) if value}
    found["events"] = [
        {"timeUnixNano": nanos(e["timestamp"]), "name": e["name"], "attributes": attributes(e["attributes"])}
        for e in otel.get("events") or []
    ]
    found["links"] = [
        {"traceId": k["traceId"], "spanId": k["spanId"], "attributes": attributes(k["attributes"])}
        for k in otel.get("links") or []
    ]
    if otel.get("traceState"):
        found["traceState"] = otel["traceState"]
    return found


def _native(span: Span, usage: dict[str, list[int]]) -> dict[str, Any]:
    fields = span.fields
    kind = span.kind
    attrs: dict[str, JSON] = {
        "devtool.event.type": kind,
        "devtool.call_id": fields.get("callId"),
        "devtool.content_hash": fields.get("contentHash"),
        "devtool.cache": fields.get("cache"),
        "devtool.running": True if span.running else None,
    }
    client = 1
    if kind == "agent":
        name = f"invoke_agent {fields.get('agentId') or ''}".strip()
        attrs |= {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": fields.get("agentId"),
            "openinference.span.kind": "AGENT",
            "input.value": _text(fields.get("props")),
            "output.value": _text(fields.get("result")),
        }
    elif kind == "turn":
        name, client = _turn(fields, attrs, usage.get(span.trace["spanId"]))
    elif kind == "tools:execute" and len(fields.get("toolResults") or []) == 1:
        name = _tool(fields["toolResults"][0], attrs)
    else:
        name = label(kind, fields)
        attrs["devtool.agent_id"] = fields.get("agentId") or None
        if kind == "model:call":
            attrs |= _usage_attributes(fields.get("usage"), "devtool.usage.")
        if kind == "tools:execute":
            attrs["devtool.tool_calls"] = len(fields.get("toolResults") or [])
        if span.instant:
            point = span.points[0]
            name = str(point.get("message") or kind)[:200]
            attrs["devtool.event"] = _point_text(point)
    found = _frame(span, name, attrs, kind=client)
    _status(found, fields.get("error") if span.failed else None, failed=span.failed)
    if not span.instant:
        found.setdefault("events", []).extend(
            {
                "timeUnixNano": nanos(point["timestamp"]),
                "name": str(point.get("type", "event")),
                "attributes": attributes({"devtool.event": _point_text(point)}),
            }
            for point in span.points
        )
    return found


def label(kind: str, fields: Event) -> str:
    """What the DevTool calls a span of this kind (the store's label, `event_sql._LABEL`, in Python)."""
    if kind == "agent":
        return str(fields.get("agentId") or "agent")
    if kind == "generation":
        return f"generation {fields.get('generationId', 0)}"
    if kind == "turn":
        return str(fields.get("name") or f"turn {fields.get('step', 0)}")
    if kind == "tools:execute":
        return ", ".join(str(name) for name in fields.get("toolNames") or []) or "tools"
    if kind == "runWith":
        return str(fields.get("entrypoint") or "runWith")
    if kind == "model:call":
        return str(fields.get("adapterId") or "model call")
    return str(fields.get("name") or kind)


def _turn(fields: Event, attrs: dict[str, JSON], children: list[int] | None) -> tuple[str, int]:
    model = fields.get("model")
    model_id, provider = (model.get("id"), model.get("provider")) if isinstance(model, dict) else (None, None)
    messages = fields.get("messages")
    messages = messages if isinstance(messages, list) else []
    answer = fields.get("message")
    attrs |= {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": model_id,
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "openinference.span.kind": "LLM",
        "gen_ai.input.messages": _text([genai_message(m) for m in messages if isinstance(m, dict)]),
        "gen_ai.output.messages": _text([genai_message(answer)]) if isinstance(answer, dict) else None,
    }
    own = fields.get("usage")
    if isinstance(own, dict):
        attrs |= _usage_attributes(own, "gen_ai.usage.", genai=True)
    elif children is not None:
        attrs |= {"gen_ai.usage.input_tokens": children[0], "gen_ai.usage.output_tokens": children[1]}
    return f"chat {model_id or ''}".strip(), 3  # SpanKind CLIENT: a call out to the model


def _tool(result: dict[str, Any], attrs: dict[str, JSON]) -> str:
    tool = str(result.get("toolName") or "tool")
    attrs |= {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool,
        "gen_ai.tool.call.id": result.get("toolCallId"),
        "gen_ai.tool.call.arguments": _text(result.get("input")),
        "gen_ai.tool.call.result": _text(result.get("output")) if result.get("success", True) else None,
        "openinference.span.kind": "TOOL",
    }
    return f"execute_tool {tool}"


def _tool_call(batch: Span, result: dict[str, Any], index: int) -> dict[str, Any]:
    attrs: dict[str, JSON] = {"devtool.call_id": result.get("callId"), "devtool.cache": result.get("cache")}
    name = _tool(result, attrs)
    trace = batch.trace
    child = Span(
        {
            "type": "tools:execute:start",
            "timestamp": batch.start_ms,
            "trace": {
                "traceId": trace["traceId"],
                "spanId": hashlib.sha256(f"{trace['spanId']}#{index}".encode()).hexdigest()[:16],
                "parentSpanId": trace["spanId"],
            },
        }
    )
    duration = result.get("duration")
    end = batch.start_ms + float(duration) if isinstance(duration, int | float) else batch.end_ms
    child.end = {"timestamp": min(end, batch.end_ms)}
    found = _frame(child, name, attrs)
    failed = result.get("success") is False
    _status(found, result.get("error") if failed else None, failed=failed)
    return found


def _status(span: dict[str, Any], error: Any, *, failed: bool) -> None:
    if not failed:
        return
    message = error.get("message") if isinstance(error, dict) else error
    span["status"] = {"code": 2, "message": str(message or "failed")}
    if isinstance(error, dict):
        exception = {
            "exception.type": error.get("name"),
            "exception.message": error.get("message"),
            "exception.stacktrace": error.get("stack"),
        }
        span["events"] = [
            {
                "timeUnixNano": span["endTimeUnixNano"],
                "name": "exception",
                "attributes": attributes({k: v for k, v in exception.items() if isinstance(v, str)}),
            }
        ]


def _count_usage(span: Span, usage: dict[str, list[int]]) -> None:
    """Add a model call's tokens to its turn's (its parent's) total, which is written when the turn ends."""
    if span.kind != "model:call":
        return
    counted = (span.end or {}).get("usage")
    if isinstance(counted, dict):
        total = usage.setdefault(span.trace["parentSpanId"], [0, 0])
        total[0] += _int(counted.get("promptTokens"))
        total[1] += _int(counted.get("completionTokens"))


def _usage_attributes(counted: Any, prefix: str, *, genai: bool = False) -> dict[str, JSON]:
    if not isinstance(counted, dict):
        return {}
    names = ("input_tokens", "output_tokens") if genai else ("prompt_tokens", "completion_tokens")
    return {
        prefix + names[0]: counted.get("promptTokens") if isinstance(counted.get("promptTokens"), int) else None,
        prefix + names[1]: counted.get("completionTokens")
        if isinstance(counted.get("completionTokens"), int)
        else None,
    }


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def genai_message(message: dict[str, Any]) -> dict[str, Any]:
    """One of the DevTool's messages in the GenAI conventions' shape: `{role, parts}`."""
    role = message.get("role")
    if role == "tool" and message.get("tool_call_id") is not None:
        response = {"type": "tool_call_response", "id": message["tool_call_id"], "response": message.get("content")}
        return {"role": "tool", "parts": [response]}
    content = message.get("content")
    parts: list[Any] = []
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    elif isinstance(content, list):
        for part in content:
            is_text = isinstance(part, dict) and part.get("type") == "text" and "text" in part
            parts.append({"type": "text", "content": part["text"]} if is_text else part)
    elif content is not None:
        parts.append({"type": "text", "content": orjson.dumps(content).decode()})
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            parts.append({"type": "tool_call", **{k: call[k] for k in ("id", "name", "arguments") if k in call}})
    return {"role": role, "parts": parts}


def nanos(ms: Any) -> str:
    """Milliseconds (to the microsecond) as OTLP's nanoseconds, a decimal string."""
    return str(round(float(ms) * 1000) * 1000)


def _point_text(point: Event) -> str | None:
    """A point event's own fields, as JSON text."""
    return _text({key: value for key, value in point.items() if key not in _HIDDEN})


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": key, "value": any_value(value)} for key, value in values.items()]


def any_value(value: Any, depth: int = 1) -> dict[str, Any]:
    """A JSON value as an OTLP/JSON AnyValue (`otlp_values.any_value` read backwards)."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if depth >= MAX_DEPTH and isinstance(value, dict) and len(value) == 1 and next(iter(value)) in VALUE_KEYS:
        return value  # kept in its OTLP encoding when read (see otlp_values): given back as it came
    if isinstance(value, list):
        return {"arrayValue": {"values": [any_value(item, depth + 1) for item in value]}}
    if isinstance(value, dict):
        entries = [{"key": key, "value": any_value(item, depth + 1)} for key, item in value.items()]
        return {"kvlistValue": {"values": entries}}
    return {"stringValue": str(value)}
