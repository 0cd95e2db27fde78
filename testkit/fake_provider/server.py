"""The fake provider's web app: the provider APIs, the control API, the request log.

Provider APIs (each `Dialect` of `DIALECTS`), in the default namespace and in any other:
`POST /v1/chat/completions`, `POST /v1/responses`, `POST /v1/messages`, and the same under
`/ns/<namespace>/`. A request
is checked as the provider would (its key when `config.api_key` is set: a 401; its model when
`config.models` is set: a 404; a field in `config.unsupported_params`: a 400), then answered by the
first rule of its namespace that matches it. A request no rule matches gets a 500 that says so.

Control API, per namespace (JSON in and out; a bad body gets a 400 `{"error": "..."}` naming it):
- `POST /_fake/<ns>/rules` `{"rules": [{"match": {...}, "reply": {...}, "times": 1}]}` adds rules;
- `GET /_fake/<ns>/rules`: the rules with the uses they have left;
- `PUT /_fake/<ns>/config` `{"api_key", "models", "unsupported_params", "chunk_delay", "chunk_size"}`
  changes the fields given;
- `GET /_fake/<ns>/requests`: `{"count": n, "requests": [...]}`, every provider request the namespace
  answered (whatever its status), with its number, api, model, stream, status, rule, body and headers;
- `POST /_fake/<ns>/reset`: no rules, no requests, the default config;
- `GET /_fake/health`: `{"ok": true, "apis": [...]}`.

Every provider request is also appended to the log file (one JSON object a line: namespace, api,
path, status, headers, body). Like a provider's own logs, it never holds credentials: the
`Authorization`, `x-api-key` and `api-key` headers are written as "[not logged]", so a key found in
the log leaked into a request somewhere else (its body, its URL, another header).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from testkit.fake_provider.anthropic_messages import AnthropicMessages
from testkit.fake_provider.dialect import Dialect
from testkit.fake_provider.openai_chat import OpenAIChat
from testkit.fake_provider.openai_responses import OpenAIResponses
from testkit.fake_provider.script import (
    Config,
    ErrorReply,
    Namespace,
    Reply,
    RequestView,
    ScriptError,
    parse_config,
    parse_rule,
)

DIALECTS: tuple[Dialect, ...] = (OpenAIChat(), OpenAIResponses(), AnthropicMessages())
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})


class Fake:
    """The namespaces and the log of one fake provider process."""

    def __init__(self, log: Path | None) -> None:
        self.namespaces: dict[str, Namespace] = {}
        self._log = log.open("ab") if log is not None else None
        self._lock = threading.Lock()

    def namespace(self, name: str) -> Namespace:
        return self.namespaces.setdefault(name, Namespace())

    def write_log(self, entry: dict[str, Any]) -> None:
        if self._log is not None:
            with self._lock:
                self._log.write(orjson.dumps(entry) + b"\n")
                self._log.flush()


def create_app(log: Path | None = None) -> Starlette:
    fake = Fake(log)
    routes = []
    for dialect in DIALECTS:
        endpoint = _provider_endpoint(fake, dialect)
        routes += [
            Route(dialect.path, endpoint, methods=["POST"]),
            Route("/ns/{ns}" + dialect.path, endpoint, methods=["POST"]),
        ]
    routes += [
        Route("/_fake/health", _health, methods=["GET"]),
        Route("/_fake/{ns}/rules", _control(fake, _add_rules), methods=["POST"]),
        Route("/_fake/{ns}/rules", _control(fake, _list_rules), methods=["GET"]),
        Route("/_fake/{ns}/config", _control(fake, _set_config), methods=["PUT"]),
        Route("/_fake/{ns}/requests", _control(fake, _list_requests), methods=["GET"]),
        Route("/_fake/{ns}/reset", _control(fake, _reset), methods=["POST"]),
    ]
    return Starlette(routes=routes)


def _provider_endpoint(fake: Fake, dialect: Dialect) -> Any:
    async def endpoint(request: Request) -> Response:
        name = request.path_params.get("ns", "default")
        namespace = fake.namespace(name)
        raw = await request.body()
        number = namespace.next_id()
        request_id = f"req_fake{number:08d}"
        view: RequestView | None = None
        reply: Reply | None = None
        error: ErrorReply | None
        rule_index: int | None = None
        try:
            body = orjson.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
            view = dialect.view(body)
        except ValueError as exc:
            body, error = None, ErrorReply(400, str(exc), None, None, None)
        else:
            error, reply, rule_index = _decide(dialect, namespace, view, dialect.api_key(request.headers))
        if reply is not None and reply.delay:
            await asyncio.sleep(reply.delay)
        status = error.status if error is not None else 200
        headers = {k: ("[not logged]" if k in SECRET_HEADERS else v) for k, v in request.headers.items()}
        namespace.requests.append(
            {
                "number": number,
                "api": dialect.name,
                "path": request.url.path,
                "model": view.model if view else None,
                "stream": view.stream if view else False,
                "status": status,
                "rule": rule_index,
                "body": body,
                "headers": headers,
            }
        )
        fake.write_log(
            {
                "time": time.time(),
                "namespace": name,
                "api": dialect.name,
                "path": request.url.path,
                "query": request.url.query,
                "status": status,
                "headers": headers,
                "body": raw.decode("utf-8", "replace"),
            }
        )
        answer_headers = {dialect.request_id_header(): request_id}
        if error is not None:
            if error.retry_after is not None:
                answer_headers["retry-after"] = str(math.ceil(error.retry_after))
                answer_headers["retry-after-ms"] = str(int(error.retry_after * 1000))
            return _json(dialect.error_body(error, view, request_id), error.status, answer_headers)
        assert view is not None
        assert reply is not None
        if view.stream:
            config = namespace.config
            delay = reply.chunk_delay if reply.chunk_delay is not None else config.chunk_delay
            frames = dialect.stream(reply, view, number, config)
            return StreamingResponse(_paced(frames, delay), media_type="text/event-stream", headers=answer_headers)
        return _json(dialect.answer(reply, view, number), 200, answer_headers)

    return endpoint


def _decide(
    dialect: Dialect, namespace: Namespace, view: RequestView, key: str | None
) -> tuple[ErrorReply | None, Reply | None, int | None]:
    """The error the provider would give this request, else the rule that answers it (and its reply)."""
    config = namespace.config
    if config.api_key is not None and key != config.api_key:
        return dialect.unauthorized(key), None, None
    if config.models is not None and view.model not in config.models:
        return dialect.unknown_model(view.model), None, None
    refused = sorted(config.unsupported_params & view.params)
    if refused:
        return dialect.unsupported(refused[0], view.model), None, None
    rule = namespace.take(view)
    if rule is None:
        message = (
            f"fake provider: no scripted reply matches this request (api {view.api}, model {view.model!r}, "
            f"last message {view.last[:200]!r}): add a rule whose match accepts it"
        )
        return ErrorReply(500, message, "fake_provider_unscripted", None, None), None, None
    return rule.reply.error, rule.reply, namespace.rules.index(rule)


async def _paced(frames: Iterator[bytes], delay: float) -> AsyncIterator[bytes]:
    for index, frame in enumerate(frames):
        if delay and index:
            await asyncio.sleep(delay)
        yield frame


def _control(fake: Fake, action: Any) -> Any:
    async def endpoint(request: Request) -> Response:
        namespace = fake.namespace(request.path_params["ns"])
        data: Any = None
        if request.method in ("POST", "PUT"):
            raw = await request.body()
            try:
                data = orjson.loads(raw) if raw.strip() else {}
            except orjson.JSONDecodeError as exc:
                return _json({"error": f"the body is not JSON: {exc}"}, 400)
        try:
            return _json(action(namespace, data), 200)
        except ScriptError as exc:
            return _json({"error": str(exc)}, 400)

    return endpoint


def _add_rules(namespace: Namespace, data: Any) -> dict[str, Any]:
    rules = data.get("rules") if isinstance(data, dict) else None
    if not isinstance(rules, list):
        raise ScriptError('the body is {"rules": [{"match": {...}, "reply": {...}, "times": 1}, ...]}')
    parsed = [parse_rule(rule) for rule in rules]
    namespace.rules.extend(parsed)
    return {"rules": len(namespace.rules)}


def _list_rules(namespace: Namespace, data: Any) -> dict[str, Any]:
    return {"rules": [rule.describe() for rule in namespace.rules]}


def _set_config(namespace: Namespace, data: Any) -> dict[str, Any]:
    namespace.config = parse_config(data, namespace.config)
    config = namespace.config
    return {
        "config": {
            "api_key": "[set]" if config.api_key is not None else None,
            "models": list(config.models) if config.models is not None else None,
            "unsupported_params": sorted(config.unsupported_params),
            "chunk_delay": config.chunk_delay,
            "chunk_size": config.chunk_size,
        }
    }


def _list_requests(namespace: Namespace, data: Any) -> dict[str, Any]:
    return {"count": len(namespace.requests), "requests": namespace.requests}


def _reset(namespace: Namespace, data: Any) -> dict[str, Any]:
    namespace.rules.clear()
    namespace.requests.clear()
    namespace.config = Config()
    return {"reset": True}


async def _health(request: Request) -> Response:
    return _json({"ok": True, "apis": [dialect.name for dialect in DIALECTS]}, 200)


def _json(data: Any, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(data), status_code=status, media_type="application/json", headers=headers)
