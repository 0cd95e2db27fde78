"""What the instrumentation raises: `InstrumentError` and its kinds, each message saying what and where."""

from __future__ import annotations


class InstrumentError(Exception):
    """Something the instrumentation cannot do; the message says why."""


class SdkMissingError(InstrumentError):
    """`devtool.instrument.openai()` or `.anthropic()` was asked for an SDK that is not installed."""


class StreamClosedError(InstrumentError):
    """A streamed answer ended before the provider's last event (closed by its reader, or cut off):
    recorded as a failed turn, never journaled."""


class EntrypointError(InstrumentError):
    """`devtool.record(entrypoint=...)` names no function a replay could import and call."""
