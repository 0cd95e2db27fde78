"""The time-travel documentation's examples, in Python: run and dump, then replay from the snapshot.

    python examples/time_travel.py [SNAPSHOT_PATH]

The first run calls the (scripted) model and the tool and saves `dump_snapshot()`; the second
loads the snapshot and replays: the agent returns the same answer with no model or tool call.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from devtool.core import ScriptedModel, create_agent, create_tool, memory, prompt, run_with
from devtool.core.debugger import dump_snapshot

tool_calls = 0


def get_weather(city: str) -> dict[str, Any]:
    global tool_calls
    tool_calls += 1
    return {"city": city, "tempC": 21, "sky": "sunny"}


def make_agent(model: ScriptedModel) -> Any:
    weather = create_tool(
        "get_weather",
        get_weather,
        description="Get current weather for a city",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    )

    async def handler(props: dict[str, Any]) -> Any:
        memory()["visits"] = memory().get("visits", 0) + 1
        return await prompt(
            [
                {"role": "system", "content": "You are a helpful weather assistant."},
                {"role": "user", "content": f"Question: {props['input']}"},
            ],
            schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
            tools=[weather],
        )

    return create_agent("assistant", handler, model=model)


async def main(snapshot_path: Path) -> None:
    # Normal execution (no snapshot), dumping the state at the end of the run.
    model = ScriptedModel(
        [
            {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
            '{"answer": "It is sunny in Paris, 21°C."}',
        ]
    )

    async def first() -> Any:
        result = await make_agent(model)({"input": "What is the weather in Paris?"})
        snapshot_path.write_text(json.dumps(dump_snapshot(metadata={"reason": "before migration"})))
        return result

    result = await run_with(first)
    print(f"recorded: {result['answer']} (model calls: {model.calls}, tool calls: {tool_calls})")

    # Execute with snapshot restoration: prompts and tools come from the journal.
    snapshot = json.loads(snapshot_path.read_text())
    replay_model = ScriptedModel([])  # would raise if it were asked anything
    replayed = await run_with(
        lambda: make_agent(replay_model)({"input": "What is the weather in Paris?"}), snapshot=snapshot
    )
    print(f"replayed: {replayed['answer']} (model calls: {replay_model.calls}, tool calls: {tool_calls - 1})")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1] if len(sys.argv) > 1 else "snapshot.json")))
