"""DevTool: time travel for AI agents.

`devtool.core` records agent runs and replays them from snapshots, `devtool.journal` keeps the
append-only ledger of a long-lived agent process, `devtool.instrument` brings agents written on the
official SDKs and plain functions into runs (`devtool.record`, `devtool.agent`, `devtool.tool`), and
`devtool.store` / `devtool.web` / `devtool.cli` make up the local DevTool app that shows them.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

# `devtool.record`, `devtool.agent`, `devtool.tool` are `devtool.instrument`'s, imported when first
# used: `import devtool` stays light (no SDK, no web stack, not even the core runtime).
_INSTRUMENT = frozenset({"record", "agent", "tool"})


def __getattr__(name: str) -> Any:
    if name in _INSTRUMENT:
        from devtool import instrument

        return getattr(instrument, name)
    raise AttributeError(f"module 'devtool' has no attribute {name!r}")
