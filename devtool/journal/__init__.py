"""The process journal: the append-only ledger of a long-lived agent process."""

from __future__ import annotations
