"""What one DevTool server is configured with; `create_app` takes it, nothing reads globals."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """Server settings. Defaults suit `devtool serve` on loopback."""

    # The biggest file the upload form accepts (a trace, a journal or a snapshot).
    max_upload_bytes: int = 512 * 1024 * 1024
