"""Headers on every response: how long the server took, and what the browser may do with the answer.

- `Server-Timing: app;dur=<ms>` (time to the response's first byte), for the browser's devtools and
  the benchmarks; and `settle;dur=<ms>` when part of it was waiting for live appends to be derived
  (`live/settled.py`).
- `Content-Security-Policy: default-src 'self'; frame-ancestors 'none'`: scripts, styles, images,
  fonts and connections (htmx requests, SSE) from this server only, and no page of the DevTool in a
  frame of another site (a framed confirm page under a decoy is how a click gets stolen). It holds
  because the pages have no inline script, no `style` attribute (positions go through
  `static/place.js`, which sets them in the CSSOM) and no `data:` URL; htmx is told not to add its
  own `<style>` (`<meta name="htmx-config">` in `base.html`).
- `X-Frame-Options: DENY`: the same for browsers that predate `frame-ancestors`.
- `X-Content-Type-Options: nosniff`: a file is what its `Content-Type` says (an uploaded trace is
  never run as a script).
- `Referrer-Policy: same-origin`: the DevTool's URLs (run and process ids) are not sent to other sites.

The 500 page of an unexpected error is made outside all middleware (Starlette's `ServerErrorMiddleware`
is outermost), so its handler adds `SECURITY_HEADERS` itself.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from devtool.web.live.settled import SETTLE_MS

SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
}
_SECURITY = tuple((name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items())


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
                settle = scope.get(SETTLE_MS)
                spent = f"app;dur={elapsed:.1f}" + ("" if settle is None else f", settle;dur={settle:.1f}")
                timing = (b"server-timing", spent.encode())
                message["headers"] = [*message.get("headers", ()), timing, *_SECURITY]
            await send(message)

        await self.app(scope, receive, with_headers)
