"""Error pages: a wrong request gets a page that says what is wrong; a bug gets a 500 page, not a crash.

An htmx request gets the message alone, to swap in where the answer would have gone; anything else
gets a full page. The message is escaped like all text. Unexpected errors are logged with their
traceback and the server goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from devtool.web.response_headers import SECURITY_HEADERS
from devtool.web.templating import render

logger = logging.getLogger("devtool.web")

TITLES = {400: "Bad request", 403: "Forbidden", 404: "Not found", 405: "Method not allowed", 413: "Too large"}


def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    return _page(request, exc.status_code, str(exc.detail), exc.headers)


def server_error(request: Request, exc: Exception) -> Response:
    logger.exception("devtool: %s %s failed", request.method, request.url.path, exc_info=exc)
    message = f"The DevTool hit a bug ({type(exc).__name__}); the server log has the details."
    # Made outside the middleware that adds them to every other answer.
    return _page(request, 500, message, SECURITY_HEADERS)


def _page(request: Request, status: int, message: str, headers: Mapping[str, str] | None = None) -> HTMLResponse:
    title = TITLES.get(status, "Error" if status >= 500 else "Request failed")
    context = {"status": status, "title": title, "message": message}
    response = render(request, "error.html", context, fragment="_error.html", status_code=status)
    response.headers.update(headers or {})
    return response


EXCEPTION_HANDLERS = {HTTPException: http_error, Exception: server_error}
