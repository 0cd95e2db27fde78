"""What a run's observer hears of each journal lookup: which call asked, with what request, and whether
the journal (a replayed snapshot's) had its answer.

`run_with(fn, observe=...)` (and `RunScope(observe=...)`) hands every journaled call's lookup to one
callable before the call is answered, recorded or not, replayed or not: a prompt turn (`prompt()`'s or
an instrumented SDK request's) and a tool call. It sees the call before any model or tool is reached, so
an observer that raises stops the call there: the turn or tool call fails with its exception, and
nothing is asked. The pytest plugin (`devtool.testing`) is the one user: it learns each call's request
for its cassette, and refuses a request its cassette does not hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

LookupKind = Literal["prompt", "tool"]


@dataclass(frozen=True)
class Lookup:
    """One journaled call's lookup. `request` is what `content_hash` is the hash of (a prompt turn's
    messages, schema, model and tools, an SDK request's API and body, a tool's name and input), as the
    caller holds it: an observer that keeps it copies it (`json_copy`) while it is called.
    `content_hash` is None when the request is not JSON (the call then always runs)."""

    kind: LookupKind
    agent_id: str
    call_id: str
    content_hash: str | None
    request: Any
    found: bool


Observer = Callable[[Lookup], None]
