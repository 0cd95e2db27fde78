"""How journal entries read: one line per known type, any other type as its data."""

from __future__ import annotations

from typing import Any

import pytest

from devtool.web.pages.journal_words import LANE_OF, SUMMARY_CHARS, summarize


@pytest.mark.parametrize(
    ("entry_type", "data", "line"),
    [
        ("state_transition", {"from_state": "created", "to_state": "running"}, "created → running"),
        ("state_transition", {"to_state": "stopped", "reason": "done"}, "? → stopped (done)"),
        (
            "trigger_event",
            {"trigger_type": "webhook", "trigger_id": "whk_1", "payload": {"event": "payment_failed"}},
            'webhook whk_1: {"event": "payment_failed"}',
        ),
        ("trigger_event", {"trigger_type": "cron"}, "cron"),
        ("context_update", {"key": "status", "value": "delinquent"}, 'status = "delinquent"'),
        ("user_prompt", {"prompt": "hello"}, "user: hello"),
        ("assistant_message", {"content": "hi"}, "assistant: hi"),
        ("conversation_turn", {"role": "system", "content": "be brief"}, "system: be brief"),
        ("tool_call", {"tool": "hold", "args": {"account": "a"}}, 'hold({"account": "a"})'),
        ("tool_result", {"tool": "hold", "result": True}, "hold → true"),
        ("invocation_start", {"invocation": 2, "trace_id": "ab" * 16}, "invocation 2 started · run abababababab"),
        (
            "invocation_result",
            {"invocation": 2, "success": False, "duration_ms": 1500},
            "invocation 2 failed in 1.50 s",
        ),
        ("invocation_result", {"invocation": 3}, "invocation 3 ended"),
        (
            "checkpoint",
            {"state": {"context_state": {"a": 1, "b": 2}, "lifecycle_state": "running"}},
            "checkpoint: 2 context keys, lifecycle running",
        ),
        ("checkpoint", {"state": "garbled"}, "checkpoint: 0 context keys, lifecycle ?"),
        (
            "rewind",
            {"target_entry_id": "e7", "mode": "code_only", "actor": "ana"},
            "rewind to e7 (code_only, by ana)",
        ),
        ("error", {"message": "boom"}, "boom"),
        ("something:new", {"x": [1, 2]}, '{"x": [1, 2]}'),
    ],
)
def test_a_line_per_entry(entry_type: str, data: dict[str, Any], line: str) -> None:
    assert summarize(entry_type, data) == line


def test_long_text_is_cut_with_an_ellipsis() -> None:
    line = summarize("user_prompt", {"prompt": "x" * 1000})
    assert len(line) == SUMMARY_CHARS
    assert line.endswith("…")


def test_every_type_the_journal_knows_has_a_lane() -> None:
    from devtool.journal.entries import KNOWN_TYPES

    assert set(KNOWN_TYPES) <= set(LANE_OF)
