"""What a person reads when a strict replay refuses a call: who made it, where, what changed, what to run.

    agent 'support' made a model request its cassette does not hold
      callId    root/agent:support:0/turn:gpt-4.1-mini:0
      cassette  tests/__snapshots__/test_bot/test_order.json
      the model request recorded at this callId (-) and this one (+):
        --- recorded
        +++ now
        @@ -4,7 +4,7 @@
               "content": "You are terse.",
        -      "content": "Where is my order A17?",
        +      "content": "Where is my order B22?",
      re-record this test: python -m pytest 'tests/test_bot.py::test_order' --devtool-record=new_episodes

The diff is of the requests as the cassette writes them (the meaning that is hashed: messages, tools,
model and parameters of a model request; name and input of a tool call), so a changed prompt shows as
its changed line. With `--devtool-url`, the report ends with the link to the run in that DevTool.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass

from devtool.core.jsonvalue import JSON
from devtool.testing.cassette import Call

CONTEXT_LINES = 3
# A request that is new (nothing recorded at its callId) is shown whole up to this many lines.
SHOWN_LINES = 60


@dataclass(frozen=True)
class Miss:
    """A call the cassette does not hold: what was asked, and what was recorded at the same callId."""

    kind: str
    agent: str
    call_id: str
    request: JSON
    recorded: Call | None
    hashable: bool = True


def miss_report(miss: Miss, *, cassette: str, exists: bool, command: str, link: str | None = None) -> str:
    what = "model request" if miss.kind == "prompt" else "tool call"
    who = f"agent {miss.agent!r}" if miss.agent else "the run (outside any agent)"
    lines = [
        f"{who} made a {what} its cassette does not hold",
        f"  callId    {miss.call_id}",
        f"  cassette  {cassette}" + ("" if exists else " (not recorded yet)"),
    ]
    if not miss.hashable:
        lines.append("  its request is not JSON, so it can be neither recorded nor replayed")
    elif miss.recorded is None:
        lines.append("  the cassette has nothing at this callId: a new call. It asked:")
        lines.extend(_indented(_shown(miss.request)))
    elif miss.recorded.error is not None:
        lines.append(f"  the call at this callId was recorded without an answer: {miss.recorded.error}")
    else:
        lines.append(f"  the {what} recorded at this callId (-) and this one (+):")
        lines.extend(_indented(request_diff(miss.recorded.request, miss.request)))
    lines.append(f"  re-record this test: {command}")
    if link is not None:
        lines.append(f"  the run: {link}")
    return "\n".join(lines)


def request_diff(recorded: JSON, now: JSON) -> list[str]:
    """A unified diff of two requests as the cassette writes them (keys sorted, two spaces a level)."""
    return list(difflib.unified_diff(_text(recorded), _text(now), "recorded", "now", n=CONTEXT_LINES, lineterm=""))


def _text(value: JSON) -> list[str]:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).splitlines()


def _shown(value: JSON) -> list[str]:
    lines = ["+" + line for line in _text(value)]
    if len(lines) > SHOWN_LINES:
        return [*lines[:SHOWN_LINES], f"  … {len(lines) - SHOWN_LINES} more lines"]
    return lines


def _indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]
