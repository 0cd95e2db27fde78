"""What each content hash covers: every field that changes a model's answer changes the hash (else a
replay serves a stale answer), and no field that does not (else a replay calls the model for nothing).

On core's `prompt()` (messages, schema, the model's identity and params, tool definitions) and on every
SDK API the instrumentation journals (`openai.chat`, `openai.responses`, `anthropic.messages`: the
request body less what changes nothing), each through a real run, the SDKs against the fake provider;
the hash read from the turn's own event."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import openai
import pytest

import devtool.instrument
from devtool.core import MemorySink, ScriptedModel, create_agent, create_tool, prompt, run_with
from devtool.core.jsonvalue import JSON
from testkit.fake_provider import FakeProvider

devtool.instrument.install()

KEY = "sk-hash-test-0123456789"


def turn_hashes(sink: MemorySink) -> list[str]:
    return [str(event["contentHash"]) for event in sink.events if event["type"] == "turn:start"]


# Core: prompt()


class ParamsModel(ScriptedModel):
    """A scripted model with the `params` a provider model has (temperature and the like)."""

    def __init__(self, *args: Any, params: dict[str, JSON] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params = params or {}


def lookup(q: str) -> str:
    return q


def lookup_elsewhere(q: str) -> str:
    return q.upper()


SEARCH = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
ANSWER = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def prompt_hash(
    messages: str | Sequence[dict[str, Any]] = "What is 2+2?",
    *,
    schema: dict[str, JSON] | None = None,
    tools: Sequence[Any] = (),
    model: dict[str, Any] | None = None,
) -> str:
    """The content hash of the first turn of `prompt(messages, schema=, tools=)` on a model made of `model`."""
    chosen = ParamsModel(['{"answer": "4"}'], **(model or {}))
    sink = MemorySink()

    async def handler(props: Any) -> Any:
        return await prompt(messages, schema=schema, tools=tools)

    asyncio.run(run_with(lambda: create_agent("asker", handler, model=chosen)(None), sinks=[sink]))
    return turn_hashes(sink)[0]


def tool(**changes: Any) -> Any:
    options: dict[str, Any] = {"handler": lookup, "description": "Look a thing up.", "parameters": SEARCH}
    options.update(changes)
    name = options.pop("name", "lookup")
    return create_tool(name, options.pop("handler"), **options)


PROMPT_CHANGES: dict[str, Callable[[], str]] = {
    "the text": lambda: prompt_hash("What is 3+3?"),
    "a system message": lambda: prompt_hash(
        [{"role": "system", "content": "Be terse."}, {"role": "user", "content": "What is 2+2?"}]
    ),
    "the role": lambda: prompt_hash([{"role": "assistant", "content": "What is 2+2?"}]),
    "a schema": lambda: prompt_hash(schema=ANSWER),
    "the schema's fields": lambda: prompt_hash(schema={**ANSWER, "required": []}),
    "the model id": lambda: prompt_hash(model={"id": "other-model"}),
    "the provider": lambda: prompt_hash(model={"provider": "other"}),
    "a model param": lambda: prompt_hash(model={"params": {"temperature": 0.5}}),
    "a tool": lambda: prompt_hash(tools=[tool()]),
}
TOOL_CHANGES: dict[str, Callable[[], str]] = {
    "the tool's name": lambda: prompt_hash(tools=[tool(name="find")]),
    "the tool's description": lambda: prompt_hash(tools=[tool(description="Find a thing.")]),
    "the tool's parameters": lambda: prompt_hash(tools=[tool(parameters={**SEARCH, "required": []})]),
    "a second tool": lambda: prompt_hash(tools=[tool(), tool(name="find")]),
}
PROMPT_SAME: dict[str, Callable[[], str]] = {
    "another run": prompt_hash,
    "the model's pricing and speed": lambda: prompt_hash(model={"micro_usd_per_token": 9.0, "delay": 0.001}),
    "the text as a user message": lambda: prompt_hash([{"role": "user", "content": "What is 2+2?"}]),
}
TOOL_SAME: dict[str, Callable[[], str]] = {
    "the tool's code": lambda: prompt_hash(tools=[tool(handler=lookup_elsewhere)]),
    "the parameters' key order": lambda: prompt_hash(
        tools=[tool(parameters={"required": ["q"], "properties": {"q": {"type": "string"}}, "type": "object"})]
    ),
}


@pytest.mark.parametrize("change", PROMPT_CHANGES)
def test_what_changes_a_prompts_answer_changes_its_hash(change: str) -> None:
    assert PROMPT_CHANGES[change]() != prompt_hash()


@pytest.mark.parametrize("change", TOOL_CHANGES)
def test_what_changes_a_tool_definition_changes_the_hash(change: str) -> None:
    assert TOOL_CHANGES[change]() != prompt_hash(tools=[tool()])


@pytest.mark.parametrize("same", PROMPT_SAME)
def test_what_does_not_change_a_prompts_answer_keeps_its_hash(same: str) -> None:
    assert PROMPT_SAME[same]() == prompt_hash()


@pytest.mark.parametrize("same", TOOL_SAME)
def test_what_does_not_change_a_tool_definition_keeps_the_hash(same: str) -> None:
    assert TOOL_SAME[same]() == prompt_hash(tools=[tool()])


def test_a_replay_with_changed_tools_asks_the_model_again() -> None:
    """The user-visible side: a recording replays only while the tools are the ones it was made with."""
    from devtool.core.debugger import dump_snapshot

    box: dict[str, Any] = {}

    def agent(model: ScriptedModel, tools: list[Any]) -> Any:
        async def handler(props: Any) -> Any:
            answer = await prompt("What is 2+2?", tools=tools)
            box.setdefault("snapshot", dump_snapshot())
            return answer

        return create_agent("asker", handler, model=model)

    asyncio.run(run_with(lambda: agent(ScriptedModel(["four"]), [tool()])(None)))
    same = ScriptedModel([])
    assert asyncio.run(run_with(lambda: agent(same, [tool()])(None), snapshot=box["snapshot"])) == "four"
    changed = ScriptedModel(["4, with the new tool"])
    described = [tool(description="Look a thing up, now with dates.")]
    assert asyncio.run(run_with(lambda: agent(changed, described)(None), snapshot=box["snapshot"])) == (
        "4, with the new tool"
    )
    assert (same.calls, changed.calls) == (0, 1)


# The SDKs' APIs, as the instrumentation hashes their requests


def sdk_hash(ask: Callable[[], Any]) -> str:
    sink = MemorySink()

    async def main() -> None:
        ask()

    asyncio.run(run_with(main, sinks=[sink]))
    (digest,) = turn_hashes(sink)
    return digest


HI = [{"role": "user", "content": "What is 2+2?"}]
CHAT_TOOL = {
    "type": "function",
    "function": {"name": "lookup", "description": "Look a thing up.", "parameters": SEARCH},
}
RESPONSES_TOOL = {"type": "function", "name": "lookup", "description": "Look a thing up.", "parameters": SEARCH}
ANTHROPIC_TOOL = {"name": "lookup", "description": "Look a thing up.", "input_schema": SEARCH}


def changed_tool(tool_: dict[str, Any], where: str, **changes: Any) -> dict[str, Any]:
    """`tool_` with `changes` made in its definition (under `where`, or at its top when empty)."""
    if not where:
        return {**tool_, **changes}
    return {**tool_, where: {**tool_[where], **changes}}


# Per API: the base request's keyword arguments, those that must change the hash, those that must not.
# Every case's request is the base one with the case's arguments merged in.
APIS: dict[str, dict[str, Any]] = {
    "openai.chat": {
        "base": {"model": "gpt-4.1-mini", "messages": HI, "tools": [CHAT_TOOL]},
        "tool_at": "function",
        "tool": CHAT_TOOL,
        "changes": {
            "the user message": {"messages": [{"role": "user", "content": "What is 3+3?"}]},
            "a system message": {"messages": [{"role": "system", "content": "Be terse."}, *HI]},
            "an earlier turn": {"messages": [*HI, {"role": "assistant", "content": "4"}, *HI]},
            "the model": {"model": "gpt-4.1"},
            "temperature": {"temperature": 0.5},
            "top_p": {"top_p": 0.5},
            "max_completion_tokens": {"max_completion_tokens": 16},
            "seed": {"seed": 7},
            "stop": {"stop": ["\n"]},
            "tool_choice": {"tool_choice": "required"},
            "response_format": {"response_format": {"type": "json_object"}},
            "no tools": {"tools": []},
        },
        "same": {
            "user": {"user": "u2"},
            "metadata": {"metadata": {"k": "v"}, "store": True},
            "headers and timeout": {"extra_headers": {"X-A": "1"}, "timeout": 9},
            "service_tier and cache key": {"service_tier": "auto", "prompt_cache_key": "k"},
        },
    },
    "openai.responses": {
        "base": {"model": "gpt-4.1-mini", "input": HI, "tools": [RESPONSES_TOOL]},
        "tool_at": "",
        "tool": RESPONSES_TOOL,
        "changes": {
            "the input": {"input": [{"role": "user", "content": "What is 3+3?"}]},
            "instructions": {"instructions": "Be terse."},
            "the model": {"model": "gpt-4.1"},
            "temperature": {"temperature": 0.5},
            "max_output_tokens": {"max_output_tokens": 16},
            "tool_choice": {"tool_choice": "required"},
            "no tools": {"tools": []},
        },
        "same": {
            "user": {"user": "u2"},
            "metadata": {"metadata": {"k": "v"}, "store": True},
            "headers and timeout": {"extra_headers": {"X-A": "1"}, "timeout": 9},
        },
    },
    "anthropic.messages": {
        "base": {"model": "claude-haiku-4-5", "max_tokens": 64, "messages": HI, "tools": [ANTHROPIC_TOOL]},
        "tool_at": "",
        "tool": ANTHROPIC_TOOL,
        "changes": {
            "the user message": {"messages": [{"role": "user", "content": "What is 3+3?"}]},
            "a system prompt": {"system": "Be terse."},
            "an earlier turn": {"messages": [*HI, {"role": "assistant", "content": "4"}, *HI]},
            "the model": {"model": "claude-sonnet-4-5"},
            "max_tokens": {"max_tokens": 65},
            "thinking": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            "stop_sequences": {"stop_sequences": ["\n"]},
            "tool_choice": {"tool_choice": {"type": "any"}},
            "no tools": {"tools": []},
        },
        "same": {
            "metadata": {"metadata": {"user_id": "u2"}},
            "headers and timeout": {"extra_headers": {"X-A": "1"}, "timeout": 9},
            "service_tier": {"service_tier": "auto"},
        },
    },
}
TOOL_DEFINITION_CHANGES = {
    "the tool's name": {"name": "find"},
    "the tool's description": {"description": "Find a thing."},
}


def caller(api: str, fake: FakeProvider) -> Callable[[dict[str, Any]], Callable[[], Any]]:
    if api == "anthropic.messages":
        claude = anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key=KEY, max_retries=0)
        return lambda kwargs: lambda: claude.messages.create(**kwargs)
    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY, max_retries=0)
    if api == "openai.responses":
        return lambda kwargs: lambda: client.responses.create(**kwargs)
    return lambda kwargs: lambda: client.chat.completions.create(**kwargs)


def api_cases() -> list[tuple[str, str, bool]]:
    cases = []
    for api, spec in APIS.items():
        cases += [(api, name, True) for name in spec["changes"]]
        cases += [(api, name, True) for name in TOOL_DEFINITION_CHANGES]
        cases += [(api, "the tool's parameters", True)]
        cases += [(api, name, False) for name in spec["same"]]
    return cases


def case_kwargs(api: str, name: str) -> dict[str, Any]:
    spec = APIS[api]
    base = spec["base"]
    parameters_key = "input_schema" if api == "anthropic.messages" else "parameters"
    if name in TOOL_DEFINITION_CHANGES:
        return {**base, "tools": [changed_tool(spec["tool"], spec["tool_at"], **TOOL_DEFINITION_CHANGES[name])]}
    if name == "the tool's parameters":
        changes = {parameters_key: {**SEARCH, "required": []}}
        return {**base, "tools": [changed_tool(spec["tool"], spec["tool_at"], **changes)]}
    return {**base, **spec["changes"].get(name, spec["same"].get(name, {}))}


@pytest.mark.parametrize(("api", "name", "changes"), api_cases())
def test_each_sdk_api_hashes_what_changes_the_answer_and_nothing_else(
    fake_provider: FakeProvider, api: str, name: str, changes: bool
) -> None:
    fake_provider.reply({"text": "4"}, times=None)
    call = caller(api, fake_provider)
    base = sdk_hash(call(APIS[api]["base"]))
    assert sdk_hash(call(APIS[api]["base"])) == base  # the same request, another run
    varied = sdk_hash(call(case_kwargs(api, name)))
    assert (varied != base) is changes, f"{api}: {name} {'should' if changes else 'should not'} change the hash"
