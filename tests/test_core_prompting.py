"""`prompt()`: turns, tool batches, structured answers with bounded retries, model identity in the hash."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from devtool.core import (
    MemorySink,
    ModelError,
    PromptError,
    ScriptedModel,
    create_agent,
    create_tool,
    prompt,
    run_with,
)
from devtool.core.debugger import dump_snapshot

ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def run_prompt(model: ScriptedModel, *args: Any, sinks: Any = (), **kwargs: Any) -> Any:
    async def handler(props: Any) -> Any:
        return await prompt(*args, **kwargs)

    return asyncio.run(run_with(lambda: create_agent("asker", handler, model=model)(None), sinks=sinks))


def test_tool_loop_runs_a_batch_per_model_request_and_returns_the_answer() -> None:
    seen: list[str] = []

    def search(q: str) -> dict[str, Any]:
        seen.append(q)
        return {"q": q, "n": len(q)}

    model = ScriptedModel(
        [
            {
                "tool_calls": [
                    {"name": "search", "arguments": {"q": "a"}},
                    {"name": "search", "arguments": '{"q": "bb"}'},
                ]
            },
            "two results",
        ]
    )
    sink = MemorySink()
    answer = run_prompt(model, "find things", tools=[create_tool("search", search)], sinks=[sink])
    assert answer == "two results"
    assert sorted(seen) == ["a", "bb"]
    assert model.calls == 2
    kinds = [e["type"] for e in sink.events if e["type"].startswith(("turn", "tools", "promptAgent"))]
    assert kinds == [
        "promptAgent:start",
        "turn:start",
        "turn:end",
        "tools:execute:start",
        "tools:execute:end",
        "turn:start",
        "turn:end",
        "promptAgent:end",
    ]
    second_turn = [e for e in sink.events if e["type"] == "turn:start"][1]
    tool_messages = [m for m in second_turn["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ['{"q":"a","n":1}', '{"q":"bb","n":2}']
    batch = next(e for e in sink.events if e["type"] == "tools:execute:end")
    # The TypeScript library's meaning: a result's callId is the model's id for the call.
    ids = [r["callId"] for r in batch["toolResults"]]
    assert ids[0].endswith("_0")
    assert ids[1] == ids[0][:-1] + "1"
    assert [m["tool_call_id"] for m in tool_messages] == ids
    assert batch["toolResults"][1]["callPath"] == "root/agent:asker:0/tool:search:1"


def test_scripted_tool_call_ids_follow_from_the_answer() -> None:
    # A deterministic model gives the same ids for the same answer, whatever came before, so a
    # replay that runs part of a conversation live hashes its later turns as the recording did.
    answer = {"tool_calls": [{"name": "search", "arguments": {"q": "a"}}]}
    first = ScriptedModel([answer])
    later = ScriptedModel(["warm-up", answer])
    ids = []
    for model in (first, later):
        while True:
            reply = asyncio.run(model.call([{"role": "user", "content": "x"}], schema=None, tools=[]))
            if "tool_calls" in reply["message"]:
                ids.append(reply["message"]["tool_calls"][0]["id"])
                break
    assert ids[0] == ids[1]
    other = asyncio.run(
        ScriptedModel([{"tool_calls": [{"name": "search", "arguments": {"q": "b"}}]}]).call([], schema=None, tools=[])
    )
    assert other["message"]["tool_calls"][0]["id"] != ids[0]


def test_structured_answer_is_parsed_and_validated() -> None:
    model = ScriptedModel(['{"answer": "42"}'])
    assert run_prompt(model, "what?", schema=ANSWER) == {"answer": "42"}


def test_a_bad_structured_answer_is_sent_back_with_the_reason() -> None:
    model = ScriptedModel(['{"answer": 42}', "not json at all", '{"answer": "42"}'])
    sink = MemorySink()
    assert run_prompt(model, "what?", schema=ANSWER, sinks=[sink]) == {"answer": "42"}
    assert model.calls == 3
    failures = [e for e in sink.events if e["type"] == "validation:failure"]
    assert [f["attempt"] for f in failures] == [1, 2]
    assert "$.answer must be string" in failures[0]["error"]["message"]
    last_turn = [e for e in sink.events if e["type"] == "turn:start"][-1]
    assert "Your answer is not valid" in last_turn["messages"][-1]["content"]


def test_schema_never_satisfied_raises_a_clear_error() -> None:
    model = ScriptedModel(['{"answer": 1}'] * 3)
    with pytest.raises(PromptError, match=r"did not match the schema after 3 attempts: \$.answer must be string"):
        run_prompt(model, "what?", schema=ANSWER)


def test_a_model_that_never_stops_asking_for_tools_is_stopped() -> None:
    model = ScriptedModel(lambda messages: {"tool_calls": [{"name": "noop", "arguments": {}}]})
    with pytest.raises(PromptError, match="no final answer after 24 turns"):
        run_prompt(model, "loop", tools=[create_tool("noop", lambda: None)])


def test_unknown_tools_and_failures_go_back_to_the_model() -> None:
    def boom() -> None:
        raise RuntimeError("kaput")

    model = ScriptedModel(
        [{"tool_calls": [{"name": "nope", "arguments": {}}, {"name": "boom", "arguments": {}}]}, "recovered"]
    )
    sink = MemorySink()
    assert run_prompt(model, "go", tools=[create_tool("boom", boom)], sinks=[sink]) == "recovered"
    second = [e for e in sink.events if e["type"] == "turn:start"][1]["messages"]
    assert [m["content"] for m in second if m["role"] == "tool"] == [
        "error: there is no tool named 'nope'",
        "error: kaput",
    ]


def test_no_model_is_a_clear_error() -> None:
    async def handler(props: Any) -> Any:
        return await prompt("hi")

    with pytest.raises(ModelError, match="no model for this prompt"):
        asyncio.run(run_with(lambda: create_agent("x", handler)(None)))


def test_model_failure_ends_the_turn_failed_and_propagates() -> None:
    class Down:
        id, provider = "down", "test"

        async def call(self, messages: Any, *, schema: Any, tools: Any) -> Any:
            raise ConnectionError("503 from upstream")

    sink = MemorySink()

    async def handler(props: Any) -> Any:
        return await prompt("hi", model=Down())

    with pytest.raises(ConnectionError):
        asyncio.run(run_with(lambda: create_agent("x", handler)(None), sinks=[sink]))
    turn_end = next(e for e in sink.events if e["type"] == "turn:end")
    assert turn_end["success"] is False
    assert turn_end["error"]["message"] == "503 from upstream"
    agent_end = next(e for e in sink.events if e["type"] == "agent:end")
    assert agent_end["success"] is False


def test_the_model_identity_is_part_of_the_prompt_hash() -> None:
    box: dict[str, Any] = {}

    def agent_with(model: ScriptedModel) -> Any:
        async def handler(props: Any) -> Any:
            answer = await prompt("same words")
            box.setdefault("snapshot", dump_snapshot())
            return answer

        return create_agent("a", handler, model=model)

    asyncio.run(run_with(lambda: agent_with(ScriptedModel(["one"], id="m1"))(None)))
    other = ScriptedModel(["two"], id="m2")
    assert asyncio.run(run_with(lambda: agent_with(other)(None), snapshot=box["snapshot"])) == "two"
    assert other.calls == 1
    same = ScriptedModel([], id="m1")
    assert asyncio.run(run_with(lambda: agent_with(same)(None), snapshot=box["snapshot"])) == "one"


def test_usage_and_cost_are_recorded_on_model_calls() -> None:
    sink = MemorySink()
    run_prompt(ScriptedModel(["a fine answer"]), "question text", sinks=[sink])
    end = next(e for e in sink.events if e["type"] == "model:call:end")
    assert end["usage"] == {"promptTokens": 4, "completionTokens": 4, "totalTokens": 8}
    assert end["costs"] == {"micro_usd": 8.0}
    run_end = sink.events[-1]
    assert run_end["metrics"]["totalTokens"] == 8
    assert run_end["metrics"]["modelCalls"] == 1


HEAD = ["schemaVersion", "type", "timestamp", "agentId", "trace"]
TURN = ["callId", "step", "model", "contentHash", "messages", "messageCount", "schema", "toolConfig"]
WHO = ["adapterId", "provider"]
ASKED = [*HEAD, "messageCount", *WHO]
ANSWERED = [*HEAD, "duration", "success", "usage", "costs", "rawText", "finishReason"]


def test_a_turns_events_carry_their_keys_in_wire_order() -> None:
    """Answered (tool calls, then text), served from a snapshot, failed: each event of a turn and of its
    model call, key for key in the order the wire has them."""

    def double(x: int) -> int:
        return 2 * x

    def boom() -> None:
        raise RuntimeError("kaput")

    box: dict[str, Any] = {}

    async def handler(props: Any) -> Any:
        answer = await prompt("go", tools=[create_tool("double", double), create_tool("boom", boom)])
        box.setdefault("snapshot", dump_snapshot())
        return answer

    def run(script: list[Any], sink: MemorySink, snapshot: Any = None) -> Any:
        agent = create_agent("asker", handler, model=ScriptedModel(script))
        return asyncio.run(run_with(lambda: agent(None), sinks=[sink], snapshot=snapshot))

    def shapes(sink: MemorySink) -> list[tuple[str, list[str]]]:
        return [(e["type"], list(e)) for e in sink.events if e["type"].startswith(("turn:", "model:call:"))]

    recorded, served, failed = MemorySink(), MemorySink(), MemorySink()
    tools = {"tool_calls": [{"name": "double", "arguments": {"x": 2}}, {"name": "boom", "arguments": {}}]}
    assert run([tools, "done"], recorded) == "done"
    batch = next(e for e in recorded.events if e["type"] == "tools:execute:end")
    assert [r["success"] for r in batch["toolResults"]] == [True, False]
    ended = [*HEAD, "duration", "message", "resultType", "cache", "success", *TURN]
    turn = [
        ("turn:start", [*HEAD, *TURN]),
        ("model:call:start", ASKED),
        ("model:call:end", [*ANSWERED, "toolCalls", *WHO]),
        ("turn:end", ended),
        ("turn:start", [*HEAD, *TURN]),
        ("model:call:start", ASKED),
        ("model:call:end", [*ANSWERED, *WHO]),
        ("turn:end", ended),
    ]
    assert shapes(recorded) == turn
    assert run([], served, box["snapshot"]) == "done"
    assert shapes(served) == [turn[0], turn[3], turn[4], turn[7]]
    assert [e["cache"] for e in served.events if e["type"] == "turn:end"] == [True, True]
    with pytest.raises(ModelError):
        run([], failed)
    assert shapes(failed) == [
        turn[0],
        ("model:call:start", ASKED),
        ("model:call:end", [*HEAD, "duration", "success", "error", *WHO]),
        ("turn:end", [*HEAD, "duration", "cache", "success", "error", *TURN]),
    ]
