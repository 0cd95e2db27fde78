"""The formats package's errors: one base class, and what went wrong in an OTLP request."""

from __future__ import annotations


class FormatError(Exception):
    """Base class of the errors of `devtool.formats`; the message says what and where."""


class OtlpError(FormatError):
    """An OTLP request that cannot be read as a whole (not JSON or protobuf, wrong shape): nothing of it is used.

    `where` is the path of the fault in the request (`resourceSpans[0].scopeSpans[1]`), empty for the body.
    """

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.reason = message
