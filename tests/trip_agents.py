"""A multi-agent program on a real model (by name), and the fake provider's script for it.

The lead runs two researchers at once (each a tool loop: a batch of two tool calls, then a summary)
and a writer that answers with JSON matching a schema. The script answers each agent by what its
conversation contains, so the order in which the parallel researchers ask does not matter.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from devtool.core import Agent, create_agent, create_tool, memory, prompt
from devtool.core.debugger import dump_snapshot
from testkit.fake_provider import FakeProvider

CITIES = ("Lisbon", "Porto")
PLAN = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["title", "days"],
    "additionalProperties": False,
}


def trip(model: str, tools_ran: Counter[str], *, writer_says: str = "write a plan from") -> Agent:
    """The lead agent; `tools_ran` counts the tool handlers that really ran."""

    async def search(query: str) -> dict[str, Any]:
        tools_ran["search"] += 1
        return {"query": query, "hits": len(query)}

    def weather(city: str) -> str:
        tools_ran["weather"] += 1
        return f"{city}: sunny"

    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    query = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    kit = [
        create_tool("search", search, description="search the web", parameters=query),
        create_tool("weather", weather, description="today's weather", parameters=city),
    ]

    async def researcher(props: dict[str, Any]) -> str:
        memory()["city"] = props["city"]
        return str(await prompt(f"research {props['city']}", tools=kit))

    async def writer(notes: list[str]) -> Any:
        return await prompt(f"{writer_says} these notes: {' | '.join(notes)}", schema=PLAN)

    research = create_agent("researcher", researcher)
    write = create_agent("writer", writer)

    async def lead(props: dict[str, Any]) -> dict[str, Any]:
        notes = await asyncio.gather(*[research({"city": name}) for name in CITIES])
        plan = await write(list(notes))
        return {"plan": plan, "snapshot": dump_snapshot()}

    return create_agent("lead", lead, model=model)


def script(fake: FakeProvider, *, writer_says: str = "write a plan from") -> int:
    """Rules for one run of `trip` on either API; returns how many requests the run makes."""
    for name in CITIES:
        ask = f"research {name}"
        fake.reply(
            {
                "tool_calls": [
                    {"name": "search", "arguments": {"query": f"{name} sights"}},
                    {"name": "weather", "arguments": {"city": name}},
                ],
                "usage": {"input": 120, "output": 30},
            },
            {"text": f"{name} is lovely and sunny", "usage": {"input": 200, "output": 12}},
            contains=ask,
        )
    fake.reply({"json": {"title": "Two cities", "days": 4}, "usage": {"input": 90, "output": 15}}, contains=writer_says)
    return 2 * len(CITIES) + 1
