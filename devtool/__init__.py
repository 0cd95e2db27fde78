"""DevTool: time travel for AI agents.

`devtool.core` records agent runs and replays them from snapshots, `devtool.journal` keeps the
append-only ledger of a long-lived agent process, and `devtool.store` / `devtool.web` /
`devtool.cli` make up the local DevTool app that shows both.
"""

from __future__ import annotations

__version__ = "0.1.0"
