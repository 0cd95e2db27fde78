"""A research agent: a lead plans topics, researchers search in parallel, a writer reports.

    devtool run devtool.demo.research:main --props '{"question": "...", "delay": 0.2}'

Shows nested and parallel sub-agents, prompt↔tool loops with a structured answer, repeated tool
calls and memory. The "web" is a small fixed index, so every run and every replay is the same.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from devtool.core import ScriptedModel, create_agent, create_tool, memory, prompt, replayable
from devtool.core.jsonvalue import JSON
from devtool.core.model import Message

DEFAULT_QUESTION = "Should our team write its next agent service in Rust, Go or Python?"

INDEX: dict[str, list[dict[str, str]]] = {
    "rust": [
        {
            "url": "https://example.org/rust-async",
            "title": "Async Rust in production",
            "text": "Tokio powers most services.",
        },
        {
            "url": "https://example.org/rust-hiring",
            "title": "Hiring Rust engineers",
            "text": "Fewer candidates, high retention.",
        },
    ],
    "go": [
        {
            "url": "https://example.org/go-services",
            "title": "Go for network services",
            "text": "Goroutines keep services simple.",
        },
    ],
    "python": [
        {
            "url": "https://example.org/python-agents",
            "title": "Python agent frameworks",
            "text": "Most agent SDKs ship Python first.",
        },
        {
            "url": "https://example.org/python-speed",
            "title": "Python and latency",
            "text": "Async IO hides most model latency.",
        },
    ],
}

PLAN_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"topics": {"type": "array", "items": {"type": "string"}, "minItems": 1}},
    "required": ["topics"],
}
FINDING_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"topic": {"type": "string"}, "finding": {"type": "string"}, "sources": {"type": "array"}},
    "required": ["topic", "finding", "sources"],
}


def web_search(query: str) -> list[dict[str, str]]:
    words = set(re.findall(r"[a-z]+", query.lower()))
    return [
        {"url": hit["url"], "title": hit["title"]} for topic, hits in INDEX.items() if topic in words for hit in hits
    ]


def fetch_page(url: str) -> dict[str, str]:
    for hits in INDEX.values():
        for hit in hits:
            if hit["url"] == url:
                return {"url": url, "text": hit["text"]}
    raise LookupError(f"404 for {url}")


def tools() -> tuple[Any, Any]:
    search = create_tool(
        "web_search",
        web_search,
        description="Search the web index",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    )
    fetch = create_tool(
        "fetch_page",
        fetch_page,
        description="Fetch a page's text",
        parameters={"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    )
    return search, fetch


def scripted_model(delay: float = 0.0) -> ScriptedModel:
    """A model that plays lead, researcher and writer by reading the conversation."""

    def answer(messages: list[Message]) -> Any:
        system = str(messages[0]["content"]) if messages[0]["role"] == "system" else ""
        last = messages[-1]
        if "plan" in system:
            question = str(messages[-1]["content"]).lower()
            return json.dumps({"topics": [t for t in ("rust", "go", "python") if t in question] or ["python"]})
        if "researcher" in system:
            topic = system.rsplit(" ", 1)[-1]
            if last["role"] == "user":
                return {"tool_calls": [{"name": "web_search", "arguments": {"query": f"{topic} in production"}}]}
            if last["role"] == "tool" and '"url"' in str(last["content"]) and "fetch" not in _asked(messages):
                urls = re.findall(r'"url":"([^"]+)"', str(last["content"]))
                return {"tool_calls": [{"name": "fetch_page", "arguments": {"url": url}} for url in urls]}
            texts = [str(m["content"]) for m in messages if m["role"] == "tool" and '"text"' in str(m["content"])]
            sources = re.findall(r'"url":"([^"]+)"', " ".join(texts))
            finding = "; ".join(re.findall(r'"text":"([^"]+)"', " ".join(texts))) or "nothing found"
            return json.dumps({"topic": topic, "finding": finding, "sources": sources})
        findings = str(last["content"])
        report = f"Recommendation, from {findings.count('topic')} findings: prefer Python for the agent layer."
        if "Be brief." in system:
            return report
        topics = ", ".join(re.findall(r'"topic": "([^"]+)"', findings))
        return f"{report} In detail: {topics} were researched; Python wins on agent SDKs and async IO."

    return ScriptedModel(answer, id="demo-model", provider="scripted", delay=delay)


def _asked(messages: list[Message]) -> str:
    return " ".join(call["name"] for m in messages for call in m.get("tool_calls", []))


def build(model: ScriptedModel) -> Any:
    search, fetch = tools()

    async def researcher(props: dict[str, Any]) -> Any:
        memory()["topic"] = props["topic"]
        finding = await prompt(
            [
                {"role": "system", "content": f"You are a researcher. Topic: {props['topic']}"},
                {"role": "user", "content": f"Research {props['topic']} for: {props['question']}"},
            ],
            schema=FINDING_SCHEMA,
            tools=[search, fetch],
        )
        memory()["sources"] = len(finding["sources"])
        return finding

    async def writer(props: dict[str, Any]) -> Any:
        # Kept in memory, so a fork of a snapshot can ask for another style and replay the writer.
        style = memory().setdefault("style", "brief")
        memory()["findings"] = len(props["findings"])
        return await prompt(
            [
                {"role": "system", "content": f"You are the writer. Be {style}."},
                {"role": "user", "content": json.dumps(props["findings"])},
            ]
        )

    research = create_agent("researcher", researcher, model=model)
    write = create_agent("writer", writer, model=model)

    async def lead(props: dict[str, Any]) -> dict[str, Any]:
        memory()["question"] = props["question"]
        plan = await prompt(
            [
                {"role": "system", "content": "You plan research: list the topics to look into."},
                {"role": "user", "content": props["question"]},
            ],
            schema=PLAN_SCHEMA,
        )
        memory()["topics"] = plan["topics"]
        findings = await asyncio.gather(
            *[research({"topic": t, "question": props["question"]}) for t in plan["topics"]]
        )
        memory()["phase"] = "writing"
        report = await write({"findings": findings})
        memory()["phase"] = "done"
        return {"report": report, "findings": findings}

    return create_agent("research-lead", lead, model=model)


@replayable
async def main(props: dict[str, Any] | None = None) -> dict[str, Any]:
    props = props or {}
    model = scripted_model(float(props.get("delay", 0.0)))
    result: dict[str, Any] = await build(model)({"question": props.get("question", DEFAULT_QUESTION)})
    return result
