"""A run that fails: a release checker whose probe times out and whose fallback never answers right.

    devtool run devtool.demo.failing:main

Shows what a failure looks like: a tool that raises, a sub-agent that fails and is caught, a
structured answer the model keeps getting wrong until `prompt` gives up, and the failed run.
"""

from __future__ import annotations

from typing import Any

from devtool.core import ScriptedModel, create_agent, create_tool, memory, prompt, replayable
from devtool.core.jsonvalue import JSON
from devtool.core.model import Message

STATUS_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"healthy": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["healthy", "reason"],
}


def probe(service: str) -> dict[str, Any]:
    raise TimeoutError(f"{service}: no answer from the health endpoint within 2.0 s")


def scripted_model() -> ScriptedModel:
    def answer(messages: list[Message]) -> Any:
        last = messages[-1]
        if last["role"] == "user" and "Probe" in str(last["content"]):
            return {"tool_calls": [{"name": "probe", "arguments": {"service": "payments-api"}}]}
        if last["role"] == "tool":
            return "The probe failed, I cannot tell."
        # The fallback: the model keeps answering "healthy" as a string, never a boolean.
        return '{"healthy": "probably", "reason": "the dashboard looked green"}'

    return ScriptedModel(answer, id="demo-model", provider="scripted")


def build(model: ScriptedModel) -> Any:
    probe_tool = create_tool(
        "probe",
        probe,
        description="Call a service's health endpoint",
        parameters={"type": "object", "properties": {"service": {"type": "string"}}, "required": ["service"]},
    )

    async def prober(props: Any) -> str:
        reply = await prompt("Probe payments-api and report its health.", tools=[probe_tool])
        raise RuntimeError(f"probe inconclusive: {reply}")

    async def fallback(props: Any) -> Any:
        return await prompt("Judge health from the dashboard summary.", schema=STATUS_SCHEMA)

    async def checker(props: Any) -> Any:
        memory()["release"] = props["release"]
        try:
            return await create_agent("prober", prober, model=model)(props)
        except RuntimeError as exc:
            memory()["probe_error"] = str(exc)
        return await create_agent("fallback", fallback, model=model)(props)

    return create_agent("release-checker", checker, model=model)


@replayable
async def main(props: dict[str, Any] | None = None) -> Any:
    return await build(scripted_model())({"release": (props or {}).get("release", "2026.11.3")})
