"""The cassette file: the same calls give the same bytes in any order, it reads back what it wrote (a
streamed answer one event a line), makes the snapshot a replay takes, and writes no credential."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from devtool.core.snapshot import validate
from devtool.testing.cassette import Call, dumps, environment_secrets, load, scrub, snapshot
from devtool.testing.errors import CassetteError


def turn(call_id: str, text: str = "hi") -> Call:
    return Call(call_id, "writer", "prompt", f"h-{call_id}", {"messages": [{"role": "user", "content": text}]},
                {"role": "assistant", "content": text.upper()})  # fmt: skip


CALLS = [
    turn("root/agent:writer:0/turn:gpt:2"),
    turn("root/agent:writer:0/turn:gpt:10"),
    turn("root/agent:writer:0/turn:gpt:1"),
    Call("root/agent:writer:0/agent:critic:0/tool:search:0", "critic", "tool", "t-0",
         {"name": "search", "input": {"q": "rust"}}, {"hits": 3}),
    Call("root/turn:gpt:0", "", "prompt", "s-0", {"api": "openai.chat", "request": {"stream": True}},
         {"api": "openai.chat", "status": 200, "sse": "data: {\"a\": 1}\n\ndata: [DONE]\n\n"}),
]  # fmt: skip


def test_the_same_calls_give_the_same_bytes_in_callid_order(tmp_path: Path) -> None:
    text = dumps("t.py::test_x", CALLS)
    shuffled = CALLS[:]
    random.Random(7).shuffle(shuffled)
    assert dumps("t.py::test_x", shuffled) == text
    order = [line.split('"')[3] for line in text.splitlines() if '"callId"' in line]
    assert order == [
        "root/agent:writer:0/agent:critic:0/tool:search:0",
        "root/agent:writer:0/turn:gpt:1",
        "root/agent:writer:0/turn:gpt:2",
        "root/agent:writer:0/turn:gpt:10",
        "root/turn:gpt:0",
    ]
    assert '          "data: [DONE]",' in text.splitlines()  # one event line a line
    path = tmp_path / "c.json"
    path.write_text(text)
    assert sorted(load(path), key=lambda c: c.call_id) == sorted(CALLS, key=lambda c: c.call_id)


def test_the_snapshot_puts_each_call_in_its_frames_journal() -> None:
    made = validate(snapshot(CALLS))
    root = made["root"]
    assert root["journal"]["prompt"]["s-0"]["output"]["sse"].startswith("data: ")  # type: ignore[index]
    writer = root["children"]["root/agent:writer:0"]
    assert writer["agentId"] == "writer"
    assert sorted(writer["journal"]["prompt"]) == [f"h-root/agent:writer:0/turn:gpt:{n}" for n in (1, 10, 2)]
    critic = writer["children"]["root/agent:writer:0/agent:critic:0"]
    assert critic["journal"]["tool"]["t-0"] == {"output": {"hits": 3}, "contentHash": "t-0"}
    assert critic["memory"] == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[]", 'not a DevTool cassette (no "devtoolCassette": 1)'),
        ('{"devtoolCassette": 1, "calls": {}}', "calls: must be an array"),
        ('{"devtoolCassette": 1, "calls": [{"callId": "x", "agent": "", "kind": "prompt", "contentHash": "h",'
         ' "output": 1}]}', "calls[0].callId: must start with root/, got 'x'"),
        ('{"devtoolCassette": 1, "calls": [{"callId": "root/t:a:0", "agent": "", "kind": "llm",'
         ' "contentHash": "h", "output": 1}]}', "calls[0].kind: must be prompt or tool, got 'llm'"),
        ('{"devtoolCassette": 1, "calls": [{"callId": "root/t:a:0", "agent": "", "kind": "tool",'
         ' "contentHash": "h"}]}', "calls[0]: has no output"),
    ],
)  # fmt: skip
def test_a_bad_cassette_names_its_first_bad_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(CassetteError) as caught:
        load(path)
    assert str(caught.value) == f"{path}: {message}"


def test_credentials_are_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-12345678")
    monkeypatch.setenv("SHORT_TOKEN", "abc")  # too short to be a secret: replacing it would garble text
    secrets = environment_secrets()
    assert "tok-12345678" in secrets
    assert "abc" not in secrets
    value = {"headers": {"X-Api-Key": "k", "Set-Cookie": "s"}, "text": ["use tok-12345678 now", 3, None]}
    assert scrub(value, secrets) == {
        "headers": {"X-Api-Key": "[redacted]", "Set-Cookie": "[redacted]"},
        "text": ["use [redacted] now", 3, None],
    }
