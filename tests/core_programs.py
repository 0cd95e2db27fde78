"""Agent programs the core tests run, record and replay: built fresh for each run by factories."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from devtool.core import Agent, ScriptedModel, Tool, create_agent, create_tool, memory, prompt
from devtool.core.debugger import dump_snapshot
from devtool.core.model import Message


@dataclass
class ToolLog:
    """How many times each tool handler really ran."""

    calls: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return sum(self.calls.values())


def research_model(*, id: str = "scripted-model") -> ScriptedModel:
    """A model that asks for `search` once per topic, then answers from the tool result."""

    def answer(messages: list[Message]) -> Any:
        last = messages[-1]
        if last["role"] == "tool":
            return f"summary of {last['content']}"
        topic = str(messages[-1]["content"]).removeprefix("research ")
        return {"tool_calls": [{"name": "search", "arguments": {"query": topic}}]}

    return ScriptedModel(answer, id=id)


def tools(log: ToolLog) -> dict[str, Tool]:
    async def search(query: str) -> dict[str, Any]:
        log.calls["search"] += 1
        await asyncio.sleep(0)
        return {"query": query, "hits": len(query)}

    def lookup(key: str) -> str:
        log.calls["lookup"] += 1
        return key.upper()

    query = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
    key = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}
    return {
        "search": create_tool("search", search, description="search the web", parameters=query),
        "lookup": create_tool("lookup", lookup, parameters=key),
    }


def orchestrator(model: ScriptedModel, log: ToolLog, dump_into: dict[str, Any] | None = None) -> Agent:
    """Nested and parallel sub-agents, tool loops, repeated identical tools, a caught failure, memory.

    With `dump_into`, the handler ends by taking `dump_snapshot()` into `dump_into["snapshot"]`.
    """
    kit = tools(log)

    async def researcher(props: dict[str, Any]) -> dict[str, Any]:
        memory()["topic"] = props["topic"]
        summary = await prompt(f"research {props['topic']}", tools=[kit["search"]])
        memory()["done"] = True
        return {"topic": props["topic"], "summary": summary}

    async def checker(props: dict[str, Any]) -> str:
        # The same input three times: one journal entry, three calls on the first run.
        results = [await kit["lookup"](key="x") for _ in range(3)]
        inner = create_agent("leaf", lambda p: {"leaf": p}, model=model)
        return f"{results[0]}-{(await inner(props['n']))['leaf']}"

    async def broken(props: Any) -> None:
        memory()["attempted"] = True
        raise RuntimeError("upstream 503")

    research = create_agent("researcher", researcher, model=model)
    check = create_agent("checker", checker, model=model)
    fail = create_agent("broken", broken, model=model)

    async def handler(props: dict[str, Any]) -> dict[str, Any]:
        memory()["phase"] = "research"
        found = await asyncio.gather(*[research({"topic": topic}) for topic in props["topics"]])
        checked = await check({"n": 7})
        try:
            await fail(None)
        except RuntimeError as exc:
            memory()["failures"] = [str(exc)]
        memory()["phase"] = "done"
        if dump_into is not None:
            dump_into["snapshot"] = dump_snapshot()
        return {"found": found, "checked": checked}

    return create_agent("orchestrator", handler, model=model)
