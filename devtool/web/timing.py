"""`Server-Timing` on every response: how long the server spent, for the browser's devtools and benchmarks."""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ServerTiming:
    """ASGI middleware adding `Server-Timing: app;dur=<ms>` (time to the response's first byte)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            if message["type"] == "http.response.start":
                elapsed = (time.perf_counter() - started) * 1000
                message.setdefault("headers", []).append((b"server-timing", f"app;dur={elapsed:.1f}".encode()))
            await send(message)

        await self.app(scope, receive, timed)
