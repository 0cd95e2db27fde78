"""Reading a POSTed body within a limit: raw, or gzip-compressed (OTLP exporters compress).

`read_body` stops reading as soon as the body is known to be over its limit (the `Content-Length`
it declares, or the bytes that came); `gunzipped` inflates a `Content-Encoding: gzip` body a chunk at
a time and stops at the same limit, so a small body that inflates to gigabytes is refused, not held.
Both raise `BodyError`, whose `status` is the HTTP answer (413 too big, 400 not gzip).
"""

from __future__ import annotations

import zlib

from starlette.requests import Request

_GZIP = 16 + zlib.MAX_WBITS
_STEP = 1 << 20


class BodyError(Exception):
    """A request refused as a whole; `status` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status

    def __reduce__(self) -> tuple[type[BodyError], tuple[int, str]]:
        # As a worker process raises it (`otlp_read.py`): an exception pickles its `args` only.
        return BodyError, (self.status, str(self))


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with a 413 as soon as it is known to be over `limit` bytes."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyError(413, too_big(int(declared), limit))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyError(413, too_big(size, limit, at_least=True))
        chunks.append(chunk)
    return b"".join(chunks)


def gunzipped(body: bytes, limit: int) -> bytes:
    """`body` inflated from gzip; a 413 when it inflates past `limit` bytes, a 400 when it is not gzip."""
    inflater = zlib.decompressobj(_GZIP)
    parts: list[bytes] = []
    size = 0
    pending = body
    try:
        while pending or not inflater.eof:
            part = inflater.decompress(pending, _STEP)
            pending = inflater.unconsumed_tail
            size += len(part)
            if size > limit:
                raise BodyError(413, f"the body inflates to over {limit} bytes, over the limit: send smaller batches")
            parts.append(part)
            if not part and not pending:
                break
    except zlib.error as exc:
        raise BodyError(400, f"the body says Content-Encoding: gzip but is not gzip ({exc})") from None
    if not inflater.eof:
        raise BodyError(400, "the gzip body is cut short: it ends before its gzip stream does")
    return b"".join(parts)


def too_big(size: int, limit: int, *, at_least: bool = False) -> str:
    return f"the body is {'over ' if at_least else ''}{size} bytes, over the limit of {limit}: send smaller batches"
