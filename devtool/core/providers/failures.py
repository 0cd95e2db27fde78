"""What a failed request to a provider becomes: a `ModelError` that says who failed, where and why.

After the SDK's own retries, its exception is turned into one message: provider and model, the HTTP
status with its name, the server asked, the provider's own message, its error code and request id,
and how many retries were spent on it. Whatever the server echoed, the API key is blanked out, and the
SDK's exception is not chained (its text holds the raw response body).
"""

from __future__ import annotations

import http
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from devtool.core.errors import ModelError

REDACTED = "[redacted]"


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """An SDK's exception classes: any of its errors, an HTTP status, a timeout, no connection."""

    base: type[Exception]
    status: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]


def model_error(
    exc: Exception, errors: SdkErrors, *, provider: str, model_id: str, retries: int, secrets: Sequence[str]
) -> ModelError:
    """`exc`, raised by the SDK after `retries` retries at most, as a `ModelError` without `secrets`."""
    who = f"{provider} model {model_id!r}"
    request = _request_of(exc)
    endpoint = _endpoint(str(request.url)) if request is not None else None
    where = f" from {endpoint}" if endpoint else ""
    status: int | None = None
    if isinstance(exc, errors.status):
        status = int(getattr(exc, "status_code", 0)) or None
        body = getattr(exc, "body", None)
        said, kind = _provider_message(body)
        code = _code(status, kind)
        if status is None or status >= 400:
            text = f"{who}: HTTP {status} {_phrase(status or 0)}{where}: {said or exc}"
        else:  # an error event in the middle of a streamed answer that had started with 200 OK
            text = f"{who}: the answer{where} broke off with an error: {said or exc}"
        facts = [fact for fact in (kind, _request_id(exc)) if fact]
        if facts:
            text += f" ({'; '.join(facts)})"
    elif isinstance(exc, errors.timeout):
        code = "timeout"
        text = f"{who}: no answer{where} before the timeout"
    elif isinstance(exc, errors.connection):
        code = "connection"
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        text = f"{who}: cannot reach {endpoint or 'the server'}{cause}"
    else:
        code = "unknown"
        text = f"{who}: {type(exc).__name__}: {exc}"
    if retries and code in ("timeout", "connection", "rate_limit", "server_error"):
        text += f", after {retries} {'retry' if retries == 1 else 'retries'}"
    return ModelError(
        redact(text, secrets), provider=provider, model_id=model_id, status=status, code=code, endpoint=endpoint
    )


def redact(text: str, secrets: Sequence[str]) -> str:
    """`text` with every occurrence of each secret replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return text


def _request_of(exc: Exception) -> Any:
    try:
        return getattr(exc, "request", None)
    except RuntimeError:  # httpx's request property raises when the error has none
        return None


def _endpoint(url: str) -> str:
    """The URL without credentials, query or fragment: which server was asked, safe to show."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def _provider_message(body: Any) -> tuple[str | None, str | None]:
    """The provider's own message and error type (or code) from its error body (or the body's `error`)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if isinstance(body, dict):
        message = body.get("message")
        kind = body.get("code") or body.get("type")
        return (str(message) if message else None), (str(kind) if kind else None)
    if isinstance(body, str) and body.strip():
        return body.strip()[:500], None
    return None, None


def _request_id(exc: Exception) -> str | None:
    request_id = getattr(exc, "request_id", None)
    return f"request id {request_id}" if request_id else None


def _code(status: int | None, kind: str | None) -> str:
    if kind in ("overloaded_error", "api_error"):
        return "server_error"
    if status is None:
        return "unknown"
    if status in (401, 403):
        return "auth_error"
    if status == 404:
        return "not_found"
    if status == 408:
        return "timeout"
    if status == 429:
        return "rate_limit"
    if status >= 500:
        return "server_error"
    if status in (400, 413, 422):
        return "bad_request"
    return "unknown"


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "Overloaded" if status == 529 else ""
