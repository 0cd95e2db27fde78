"""Ids in URL paths: any text, `/` included, as one path segment.

A trace id comes from a file a user loaded, so it can hold `/`. Links encode it as `%2F`
(`devtool.web.links`), but ASGI hands routing a decoded path, where that slash would split the id.
`KeepEncodedSlashes` rebuilds the path from the raw one with `%2F` (and `%25`, so a literal `%2F`
in an id stays itself) left encoded, and the `id` path convertor (`{trace_id:id}`) decodes them
in the one segment it matches.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from starlette.convertors import Convertor, register_url_convertor
from starlette.types import ASGIApp, Receive, Scope, Send

_KEPT = re.compile(r"(%2[fF]|%25)")


class IdConvertor(Convertor[str]):
    regex = "[^/]+"

    def convert(self, value: str) -> str:
        return _KEPT.sub(lambda match: "/" if match.group(0).lower() == "%2f" else "%", value)

    def to_string(self, value: str) -> str:
        return value.replace("%", "%25").replace("/", "%2F")


register_url_convertor("id", IdConvertor())


class KeepEncodedSlashes:
    """ASGI middleware: the path routing sees keeps `%2F` and `%25` encoded (the rest decoded, as usual)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = scope.get("raw_path")
        if scope["type"] in ("http", "websocket") and raw and b"%2" in raw.upper():
            text = raw.decode("latin-1").split("?", 1)[0]
            scope = {
                **scope,
                "path": "".join(part if _KEPT.fullmatch(part) else unquote(part) for part in _KEPT.split(text)),
            }
        await self.app(scope, receive, send)
