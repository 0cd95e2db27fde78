"""The cassette file: one test's recorded calls, in a layout made for code review.

    {
      "devtoolCassette": 1,
      "test": "tests/test_bot.py::test_order",
      "calls": [
        {
          "callId": "root/agent:support:0/turn:gpt-4.1-mini:0",
          "agent": "support",
          "kind": "prompt",
          "contentHash": "<sha-256 of the request's meaning>",
          "request": {...},     # what was hashed: the messages, tools, model and parameters
          "output": {...}       # what the journal replays: the model's message, or the provider's answer
        }
      ]
    }

A call is the snapshot's journal entry with the request it answers and where it was made: the
cassette is the run's trace of calls (callId, agent, request, answer), and `snapshot()` makes of it
the `AgentSnapshot` a replay takes (frames by callId, journals by hash). What changes on every run
and says nothing of the agent (timestamps, span and trace ids, durations, tokens' prices) is left out,
so a re-record of the same calls writes the same bytes, and a changed call changes its entry only:
calls are in callId order (numbers as numbers), keys in a fixed order at the top and sorted below, two
spaces a level, and a streamed answer's server-sent events one line each.

Nothing of HTTP is in it: no header, no key, no base URL, no request id or timeout (the request is the
body's meaning, as hashed); `scrub` also replaces, in requests and answers, any value under a key
named like a credential and any text of the environment's keys and tokens.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from devtool.core.jsonvalue import JSON
from devtool.core.snapshot import ROOT_CALL_ID, SNAPSHOT_VERSION, AgentSnapshot, FrameSnapshot
from devtool.testing.errors import CassetteError

FORMAT: Final = 1
KINDS: Final = ("prompt", "tool")
REDACTED: Final = "[redacted]"
# Keys whose values are credentials wherever they appear (compared in lower case, `-` as `_`).
SECRET_KEYS: Final = frozenset(
    {"authorization", "proxy_authorization", "cookie", "set_cookie", "api_key", "apikey", "x_api_key",
     "access_token", "refresh_token", "password", "secret", "client_secret"}
)  # fmt: skip
# Environment variables whose values are never written (an API key in a prompt's text, say).
SECRET_ENV: Final = re.compile(r"(API_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)


@dataclass(frozen=True)
class Call:
    """One journaled call as the cassette keeps it."""

    call_id: str
    agent: str
    kind: str
    content_hash: str
    request: JSON
    output: JSON
    error: str | None = None  # a tombstone: recorded, but its output was not JSON (never replayed)

    def to_json(self) -> dict[str, JSON]:
        entry: dict[str, JSON] = {
            "callId": self.call_id,
            "agent": self.agent,
            "kind": self.kind,
            "contentHash": self.content_hash,
            "request": _sorted(self.request),
            "output": _sorted(_lines(self.output)),
        }
        if self.error is not None:
            entry["error"] = self.error
        return entry


def dumps(test: str, calls: Iterable[Call]) -> str:
    """The cassette's text: the same calls give the same bytes, whatever order they were made in."""
    ordered = sorted(calls, key=lambda call: call_order(call.call_id))
    document = {"devtoolCassette": FORMAT, "test": test, "calls": [call.to_json() for call in ordered]}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def load(path: Path) -> list[Call]:
    """The calls of the cassette at `path`; `CassetteError` naming the file and the first bad field."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"{path}: cannot be read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise CassetteError(f"{path}: not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    if not isinstance(document, dict) or document.get("devtoolCassette") != FORMAT:
        raise CassetteError(f'{path}: not a DevTool cassette (no "devtoolCassette": {FORMAT})')
    entries = document.get("calls")
    if not isinstance(entries, list):
        raise CassetteError(f"{path}: calls: must be an array")
    return [_call(entry, f"{path}: calls[{index}]") for index, entry in enumerate(entries)]


def snapshot(calls: Iterable[Call]) -> AgentSnapshot:
    """The snapshot a replay of these calls takes: each in its frame's journal (frames made from the
    callIds), every frame's memory empty, so the test's code runs from its start as it did when recorded."""
    root = _frame(ROOT_CALL_ID, "")
    frames = {ROOT_CALL_ID: root}
    for call in calls:
        frame = _frame_of(frames, call.call_id.rpartition("/")[0])
        entry: dict[str, JSON] = {"output": call.output, "contentHash": call.content_hash}
        if call.error is not None:
            entry["error"] = call.error
        frame["journal"]["prompt" if call.kind == "prompt" else "tool"][call.content_hash] = entry  # type: ignore[assignment]
    return {
        "processId": "devtool-cassette",
        "timestamp": 0,
        "root": root,
        "provenance": {"traceId": "0" * 32, "source": "dump"},
        "version": SNAPSHOT_VERSION,
    }


def call_order(call_id: str) -> list[tuple[str, int]]:
    """A callId's place among its run's: segment by segment, sequence numbers compared as numbers."""
    order = []
    for segment in call_id.split("/"):
        head, _, seq = segment.rpartition(":")
        order.append((head, int(seq)) if seq.isdigit() else (segment, -1))
    return order


def scrub(value: JSON, secrets: tuple[str, ...]) -> JSON:
    """`value` with credentials replaced: values under credential-like keys, and any text in `secrets`."""
    if isinstance(value, dict):
        return {
            key: REDACTED if key.lower().replace("-", "_") in SECRET_KEYS else scrub(item, secrets)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [scrub(item, secrets) for item in value]
    if isinstance(value, str):
        for secret in secrets:
            value = value.replace(secret, REDACTED)
    return value


def environment_secrets() -> tuple[str, ...]:
    """The values of the environment's keys, tokens and secrets long enough to be one, longest first."""
    found = {value for name, value in os.environ.items() if SECRET_ENV.search(name) and len(value) >= 8}
    return tuple(sorted(found, key=len, reverse=True))


def _call(entry: Any, where: str) -> Call:
    if not isinstance(entry, dict):
        raise CassetteError(f"{where}: must be an object")
    for name in ("callId", "agent", "kind", "contentHash"):
        if not isinstance(entry.get(name), str):
            raise CassetteError(f"{where}.{name}: must be a string")
    if entry["kind"] not in KINDS:
        raise CassetteError(f"{where}.kind: must be prompt or tool, got {entry['kind']!r}")
    if not entry["callId"].startswith(ROOT_CALL_ID + "/"):
        raise CassetteError(f"{where}.callId: must start with {ROOT_CALL_ID}/, got {entry['callId']!r}")
    if "output" not in entry:
        raise CassetteError(f"{where}: has no output")
    error = entry.get("error")
    return Call(
        entry["callId"], entry["agent"], entry["kind"], entry["contentHash"], entry.get("request"),
        _joined(entry["output"]), error if isinstance(error, str) else None,
    )  # fmt: skip


def _frame(call_id: str, agent_id: str) -> FrameSnapshot:
    return {
        "callId": call_id,
        "agentId": agent_id,
        "memory": {},
        "journal": {"prompt": {}, "tool": {}},
        "children": {},
        "state": {"status": "completed"},
    }


def _frame_of(frames: dict[str, FrameSnapshot], call_id: str) -> FrameSnapshot:
    """The frame of `call_id`, made (with its ancestors) if the cassette has none yet."""
    found = frames.get(call_id)
    if found is not None:
        return found
    parent_id, _, segment = call_id.rpartition("/")
    parent = _frame_of(frames, parent_id or ROOT_CALL_ID)
    agent_id = segment.split(":", 1)[1].rpartition(":")[0] if segment.count(":") >= 2 else segment
    frame = frames[call_id] = parent["children"][call_id] = _frame(call_id, agent_id)
    return frame


def _sorted(value: JSON) -> JSON:
    if isinstance(value, dict):
        return {key: _sorted(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [_sorted(item) for item in value]
    return value


def _lines(output: JSON) -> JSON:
    """A streamed answer's events text as a list of its lines (a changed event is a changed line)."""
    if isinstance(output, dict):
        events = output.get("sse")
        if isinstance(events, str):
            lines: list[JSON] = list(events.split("\n"))
            return {**output, "sse": lines}
    return output


def _joined(output: JSON) -> JSON:
    if isinstance(output, dict):
        events = output.get("sse")
        if isinstance(events, list):
            return {**output, "sse": "\n".join(str(line) for line in events)}
    return output
