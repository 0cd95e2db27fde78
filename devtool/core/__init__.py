"""The core snapshot library: agents, prompts and tools that record and replay their runs."""

from __future__ import annotations
