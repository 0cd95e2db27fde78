"""Headers on every response: how long the server took, and what the browser may do with the answer.

- `Server-Timing: app;dur=<ms>` (time to the response's first byte), for the browser's devtools and
  the benchmarks.
- `Content-Security-Policy: default-src 'self'; frame-ancestors 'none'`: scripts, styles, images,
  fonts and connections (htmx requests, SSE) from this server only, and no page of the DevTool in a
  frame of another site. It holds because the pages have no inline script, no `style` attribute
  (positions go through `static/place.js`, which sets them in the CSSOM) and no `data:` URL; htmx is
  told not to add its own `<style>` (`<meta name="htmx-config">` in `base.html`).
- `X-Content-Type-Options: nosniff`: a file is what its `Content-Type` says (an uploaded trace is
  never run as a script).
- `Referrer-Policy: same-origin`: the DevTool's URLs (run and process ids) are not sent to other sites.

Not on the 500 page of an unexpected error: Starlette makes that one outside all middleware.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

SECURITY = (
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class ResponseHeaders:
    """ASGI middleware adding `Server-Timing` and the `SECURITY` headers to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                elapsed = (time.perf_counter() - started) * 1000
                timing = (b"server-timing", f"app;dur={elapsed:.1f}".encode())
                message["headers"] = [*message.get("headers", ()), timing, *SECURITY]
            await send(message)

        await self.app(scope, receive, with_headers)
