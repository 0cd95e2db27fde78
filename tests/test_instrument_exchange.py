"""What a recorded SDK request leaves behind, pinned byte for byte: the trace of a run, its journal and
its snapshot, and those of its replay, for every API and form the instrumentation wraps.

A run of 18 requests (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages; sync and async,
whole and streamed, a plain answer and tool calls) is recorded through the public API (`devtool.record`
to a JSONL file, the official SDKs against the fake provider over HTTP), its snapshot dumped, then
replayed from that snapshot. Both traces, each with its `snapshot:dump` (the journal inside), must be
the bytes in `fixtures/instrument_recorded.jsonl`, less only what differs from one run to the next: times
(`timestamp`, `duration`, `ttft`, the fake's `created`), random ids (replaced by their order of first
appearance, so what refers to what still has to match), a snapshot's id (a hash over those), and the
`turn:progress` events after a turn's first (how many a stream sends depends on how fast it arrives).

The fixture was recorded by the code before issue 15's performance pass; a change to how events are
built or written that changes a byte of what is recorded fails here. To re-record it after a deliberate
change of the wire format: `DEVTOOL_RERECORD=1 pytest tests/test_instrument_exchange.py`.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import orjson

import devtool
import devtool.instrument
from devtool.core.debugger import dump_snapshot
from testkit.fake_provider import FakeProvider

KEY = "sk-exchange-test-0123456789"
FIXTURE = Path(__file__).parent / "fixtures" / "instrument_recorded.jsonl"
TEXT = "Lisbon: trams."
TOOLS_CHAT = [
    {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Weather.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
TOOLS_RESPONSES = [
    {
        "type": "function",
        "name": "weather",
        "description": "Weather.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]
TOOLS_MESSAGES = [
    {
        "name": "weather",
        "description": "Weather.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
]

devtool.instrument.install()


def _ask(kind: str, client: Any, streamed: bool, tools: bool) -> Any:
    if kind == "chat":
        extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if streamed else {}
        if tools:
            extra["tools"] = TOOLS_CHAT
        messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Lisbon?"}]
        return client.chat.completions.create(
            model="gpt-4.1-mini", messages=messages, stream=streamed, temperature=0, user="u1", **extra
        )
    if kind == "responses":
        extra = {"tools": TOOLS_RESPONSES} if tools else {}
        return client.responses.create(
            model="gpt-4.1-mini", instructions="Be brief.", input="Lisbon?", stream=streamed, **extra
        )
    extra = {"tools": TOOLS_MESSAGES} if tools else {}
    return client.messages.create(
        model="claude-haiku-4-5",
        max_tokens=64,
        system="Be brief.",
        messages=[{"role": "user", "content": "Lisbon?"}],
        stream=streamed,
        **extra,
    )


def _client(kind: str, fake: FakeProvider, asynchronous: bool) -> Any:
    if kind == "messages":
        sdk_class = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return sdk_class(base_url=fake.anthropic_base_url, api_key=KEY)
    return (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(base_url=fake.openai_base_url, api_key=KEY)


FORMS = [
    (kind, asynchronous, streamed, tools)
    for kind in ("chat", "responses", "messages")
    for asynchronous, streamed, tools in (
        (False, False, False),
        (False, True, False),
        (True, False, False),
        (True, True, False),
        (False, False, True),
        (True, True, True),
    )
]


async def _requests(fake: FakeProvider) -> None:
    for kind, asynchronous, streamed, tools in FORMS:
        client = _client(kind, fake, asynchronous)
        result = _ask(kind, client, streamed, tools)
        if asynchronous:
            result = await result
            if streamed:
                async for _ in result:
                    pass
            await client.close()
        else:
            if streamed:
                for _ in result:
                    pass
            client.close()
    dump_snapshot()


def _normalized(trace: bytes, ids: dict[str, str]) -> list[bytes]:
    """The trace's lines with what changes from run to run replaced (see the module docstring)."""
    lines, progressed = [], set()
    for line in trace.splitlines():
        event = orjson.loads(line)
        if event["type"] == "turn:progress":
            if event["trace"]["spanId"] in progressed:
                continue
            progressed.add(event["trace"]["spanId"])
        line = re.sub(rb'("(?:timestamp|duration|ttft)":)-?[0-9.eE+-]+', rb"\g<1>0", line)
        line = re.sub(rb'(\\?"(?:created|created_at|completed_at)\\?":)[0-9]+', rb"\g<1>0", line)

        def renamed(found: re.Match[bytes]) -> bytes:
            key = found.group(1).decode()
            return b'"' + ids.setdefault(key, f"id{len(ids)}").encode() + b'"'

        line = re.sub(rb'("snapshotId":)"[0-9a-f]+"', rb'\g<1>"of its times and ids"', line)
        lines.append(re.sub(rb'"([0-9a-f]{16}|[0-9a-f]{32})"', renamed, line))
    return lines


def test_a_recorded_run_and_its_replay_record_the_same_bytes(fake_provider: FakeProvider, tmp_path: Path) -> None:
    for *_, tools in FORMS:
        if tools:
            fake_provider.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}, "id": "call_1"}]})
        else:
            fake_provider.reply({"text": TEXT, "usage": {"input": 9, "output": 5}})
    first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
    with devtool.record("exchange", to=first):
        asyncio.run(_requests(fake_provider))
    recorded = first.read_bytes().splitlines()
    snapshot = orjson.loads(next(line for line in recorded if b'"type":"snapshot:dump"' in line))["snapshot"]
    with devtool.record("exchange", to=second, snapshot=snapshot):
        asyncio.run(_requests(fake_provider))
    assert fake_provider.count() == len(FORMS)  # the replay sent no request

    ids: dict[str, str] = {}
    documents = [*_normalized(first.read_bytes(), ids), *_normalized(second.read_bytes(), ids)]
    if os.environ.get("DEVTOOL_RERECORD"):
        FIXTURE.write_bytes(b"\n".join(documents) + b"\n")
    expected = FIXTURE.read_bytes().splitlines()
    assert len(documents) == len(expected)
    for index, (got, want) in enumerate(zip(documents, expected, strict=True)):
        assert got == want, f"line {index + 1} of the recorded traces differs from {FIXTURE.name}"
