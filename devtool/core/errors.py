"""The core library's errors: one base class, a subclass per thing that can go wrong."""

from __future__ import annotations

from typing import Any


class CoreError(Exception):
    """Base class of every error `devtool.core` raises on purpose."""

    @property
    def details(self) -> dict[str, Any]:
        """Structured facts about the error beyond its message, for the `details` of an error event."""
        return {}


class OutsideRunError(CoreError):
    """A function that needs a running agent context was called outside of one."""


class SnapshotDisabledError(CoreError):
    """Snapshots are off for this run (production default), so nothing can be dumped or replayed."""


class SnapshotError(CoreError):
    """A snapshot handed to `run_with` is malformed; the message names the bad field."""


class RestoreError(CoreError):
    """`restore_snapshot` cannot build a snapshot from these events at this cut."""


class ModelError(CoreError):
    """A model could not answer: no model configured, a script ran out, a bad reply, or a request to a
    provider failed (then `provider`, `model_id`, `status`, `code` and `endpoint` say which and why).

    `code` classifies a provider's failure: `auth_error`, `not_found`, `rate_limit`, `server_error`,
    `bad_request`, `timeout`, `connection` or `unknown` (the TypeScript library's `ModelErrorCode`
    names, with the ones it lacks). `endpoint` is the server asked, without credentials or query.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        model_id: str | None = None,
        status: int | None = None,
        code: str | None = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model_id = model_id
        self.status = status
        self.code = code
        self.endpoint = endpoint

    @property
    def details(self) -> dict[str, Any]:
        facts = {
            "provider": self.provider,
            "modelId": self.model_id,
            "status": self.status,
            "code": self.code,
            "endpoint": self.endpoint,
        }
        return {key: value for key, value in facts.items() if value is not None}


class PromptError(CoreError):
    """A prompt did not reach a valid answer (schema never satisfied, too many turns)."""


class ToolError(CoreError):
    """A tool call was refused before its handler ran (unknown tool, input not matching its schema)."""


def is_snapshot_disabled_error(error: object) -> bool:
    """True for the error `dump_snapshot` and `run_with(snapshot=...)` raise when snapshots are off."""
    return isinstance(error, SnapshotDisabledError)


class PriceTableError(CoreError):
    """A price table file (`DEVTOOL_PRICES`) cannot be used; the message names the file and the entry."""
