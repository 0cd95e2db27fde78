"""Calling the ASGI app in-process, with no socket: what `devtool serve --get PATH` prints."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlsplit


def get(app: Any, path: str) -> tuple[int, bytes]:
    """The status and body of GET `path` (with its query string), run to completion."""
    return asyncio.run(_get(app, path))


async def _get(app: Any, path: str) -> tuple[int, bytes]:
    parts = urlsplit(path)
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": parts.path or "/",
        "raw_path": (parts.path or "/").encode(),
        "query_string": parts.query.encode(),
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 0),
        "server": ("localhost", 80),
        "state": {},
    }
    status = 500
    chunks: list[bytes] = []
    request_sent = False

    async def receive() -> dict[str, Any]:
        nonlocal request_sent
        if not request_sent:
            request_sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)
