"""Agents written on the real SDKs and frameworks, as their users write them, for the instrumentation tests.

Each `Program` is a researcher that calls two tools (`weather`, then `hotels`) over three model requests,
then a writer (a system prompt of its own) that writes the answer up in one more: four requests, the
second one after the first tool call, and only the last one reading the writer's prompt. Each client
runs it its own way: the `openai` SDK by hand (sync, the writer streamed), the `anthropic` SDK by hand
(async, the writer through `messages.stream`), Pydantic AI (two agents, its tools), and the OpenAI Agents
SDK (a triage agent that hands off to a billing agent with the two tools; Chat Completions, or the
Responses API streamed). Tools and agents are marked with `devtool.tool` / `devtool.agent`, the one line
each a user adds. `script(fake)` scripts the fake provider to answer each request by its last message.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import devtool
from testkit.fake_provider import FakeProvider

KEY = "sk-instrument-0123456789abcdef"
QUESTION = "Plan a day in Lisbon"
WRITER = "You write plans up in one line."
CHANGED_WRITER = "You write plans up as a haiku."
# Side effects of the tools, so a test can tell a tool that ran from one served by the journal.
TOOL_RUNS: list[str] = []


@devtool.tool
def weather(city: str) -> str:
    """The weather in a city."""
    TOOL_RUNS.append(f"weather {city}")
    return f"{city}: sunny"


@devtool.tool
async def hotels(city: str) -> list[str]:
    """Hotels in a city."""
    TOOL_RUNS.append(f"hotels {city}")
    return ["Ritz"]


def script(fake: FakeProvider, handoff: bool = False) -> None:
    """Answers by each request's last message, so a replay's live requests get the same answers."""
    if handoff:
        fake.reply({"tool_calls": [{"name": "transfer_to_billing", "arguments": {}}]}, last=QUESTION, times=None)
        fake.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, last="billing", times=None)
    else:
        fake.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, last=QUESTION, times=None)
    fake.reply({"tool_calls": [{"name": "hotels", "arguments": {"city": "Lisbon"}}]}, last="sunny", times=None)
    fake.reply({"text": "Stay central."}, last="Ritz", times=None)
    fake.reply({"text": "Lisbon, sunny: stay at the Ritz."}, last="Write it up", times=None)


@dataclass(frozen=True)
class Program:
    name: str
    run: Callable[[FakeProvider, str], Awaitable[str]]  # (fake, writer's system prompt) -> the plan
    requests: int = 4
    handoff: bool = False


TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} of a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
    for name in ("weather", "hotels")
]
TOOLS = {"weather": weather, "hotels": hotels}


async def _call_tool(name: str, arguments: dict[str, Any]) -> Any:
    result = TOOLS[name](**arguments)
    return await result if name == "hotels" else result


async def openai_sdk(fake: FakeProvider, writer_prompt: str) -> str:
    import openai

    client = openai.OpenAI(base_url=fake.openai_base_url, api_key=KEY)

    @devtool.agent
    async def researcher(question: str) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "You research."},
            {"role": "user", "content": question},
        ]
        while True:
            completion = client.chat.completions.create(model="gpt-4.1-mini", messages=messages, tools=TOOLS_OPENAI)
            message = completion.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                output = await _call_tool(call.function.name, json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(output)})

    @devtool.agent
    def writer(notes: str) -> str:
        stream = client.chat.completions.create(
            model="gpt-4.1-mini",
            messages=[
                {"role": "system", "content": writer_prompt},
                {"role": "user", "content": f"Write it up: {notes}"},
            ],
            stream=True,
            stream_options={"include_usage": True},
        )
        return "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)

    return writer(await researcher(QUESTION))


async def anthropic_sdk(fake: FakeProvider, writer_prompt: str) -> str:
    import anthropic

    client = anthropic.AsyncAnthropic(base_url=fake.anthropic_base_url, api_key=KEY)
    tools = [
        {
            "name": t["function"]["name"],
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in TOOLS_OPENAI
    ]

    @devtool.agent
    async def researcher(question: str) -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        while True:
            reply = await client.messages.create(
                model="claude-haiku-4-5", max_tokens=512, system="You research.", messages=messages, tools=tools
            )
            uses = [block for block in reply.content if block.type == "tool_use"]
            if not uses:
                return "".join(block.text for block in reply.content if block.type == "text")
            messages.append({"role": "assistant", "content": [block.model_dump() for block in reply.content]})
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": use.id,
                    "content": json.dumps(await _call_tool(use.name, use.input)),
                }
                for use in uses
            ]
            messages.append({"role": "user", "content": results})

    @devtool.agent
    async def writer(notes: str) -> str:
        async with client.messages.stream(
            model="claude-haiku-4-5",
            max_tokens=512,
            system=writer_prompt,
            messages=[{"role": "user", "content": f"Write it up: {notes}"}],
        ) as stream:
            return await stream.get_final_text()

    return await writer(await researcher(QUESTION))


async def pydantic_ai(fake: FakeProvider, writer_prompt: str) -> str:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(base_url=fake.openai_base_url, api_key=KEY))
    planner = Agent(model, name="planner", instructions="You research.", tools=[weather, hotels])
    scribe = Agent(model, name="scribe", instructions=writer_prompt)

    @devtool.agent
    async def researcher(question: str) -> str:
        return (await planner.run(question)).output

    @devtool.agent
    async def writer(notes: str) -> str:
        return (await scribe.run(f"Write it up: {notes}")).output

    return await writer(await researcher(QUESTION))


def openai_agents(api: str) -> Callable[[FakeProvider, str], Awaitable[str]]:
    async def run(fake: FakeProvider, writer_prompt: str) -> str:
        import agents
        import openai

        agents.set_default_openai_client(openai.AsyncOpenAI(base_url=fake.openai_base_url, api_key=KEY), False)
        agents.set_default_openai_api(api)
        agents.set_tracing_disabled(True)
        tools = [agents.function_tool(weather), agents.function_tool(hotels)]
        writer = agents.Agent(name="writer", instructions=writer_prompt, model="gpt-4.1-mini")
        billing = agents.Agent(name="billing", instructions="You research.", tools=tools, model="gpt-4.1-mini")
        triage = agents.Agent(name="triage", instructions="You triage.", handoffs=[billing], model="gpt-4.1-mini")

        @devtool.agent
        async def support(question: str) -> str:
            if api == "responses":  # streamed, through the SDK's `with_streaming_response`
                streamed = agents.Runner.run_streamed(triage, question)
                async for _ in streamed.stream_events():
                    pass
                return str(streamed.final_output)
            return str((await agents.Runner.run(triage, question)).final_output)

        @devtool.agent
        async def write(notes: str) -> str:
            return str((await agents.Runner.run(writer, f"Write it up: {notes}")).final_output)

        return await write(await support(QUESTION))

    return run


PROGRAMS = [
    Program("openai", openai_sdk),
    Program("anthropic", anthropic_sdk),
    Program("pydantic-ai", pydantic_ai),
    Program("openai-agents-chat", openai_agents("chat_completions"), requests=5, handoff=True),
    Program("openai-agents-responses", openai_agents("responses"), requests=5, handoff=True),
]
