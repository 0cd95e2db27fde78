"""CPU of a framework agent step recorded whole (`devtool.instrument.install()`, no decorator) over the
same step bare, against the fake provider.

    python bench/bench_frameworks.py [--framework pydantic-ai|openai-agents|langgraph] [--rounds 7] [--steps 40]

A step is one agent run that asks the model once for a tool call, runs the tool, and asks once more
for the answer (the OpenAI Agents SDK's agent stops at its tool's output, `stop_on_first_tool`: one
model call and one tool call). A real fake provider process answers over loopback HTTP. Each round
runs two child processes, one after the other in an order that alternates by round: `bare` (the
framework as installed, devtool not imported) and `recorded` (`install()`, the steps inside one
`devtool.record` run whose events go to a JSONL file). A child makes a few steps to warm up, then
`--steps` steps, and reports the process's CPU time over them (every thread's: the drainer's too, and
the run's pending work settled before the clock stops). Reported: each mode's median CPU per step, and
the median over rounds of the recorded/bare ratio (paired by round, so a burst of load falls on both).
The target is at most 5% more CPU recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from testkit.fake_provider import FakeProvider, FakeProviderProcess  # noqa: E402

KEY = "sk-bench-frameworks-000000"
QUESTION = "Plan a day in Lisbon"
WARMUP = 5


def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


def step_of(framework: str, base_url: str) -> Callable[[], Any]:
    """One agent step of `framework`, sync, against the fake at `base_url`."""
    if framework == "pydantic-ai":
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.providers.openai import OpenAIProvider

        model = OpenAIChatModel("gpt-4.1-mini", provider=OpenAIProvider(base_url=base_url, api_key=KEY))
        agent = Agent(model, name="travel", tools=[weather])
        return lambda: agent.run_sync(QUESTION).output
    if framework == "openai-agents":
        import agents
        import openai

        agents.set_default_openai_client(openai.AsyncOpenAI(base_url=base_url, api_key=KEY), False)
        agents.set_default_openai_api("chat_completions")
        agents.set_tracing_disabled(True)
        travel = agents.Agent(
            name="travel",
            tools=[agents.function_tool(weather)],
            model="gpt-4.1-mini",
            tool_use_behavior="stop_on_first_tool",
        )
        return lambda: agents.Runner.run_sync(travel, QUESTION).final_output
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model="gpt-4.1-mini", base_url=base_url, api_key=KEY)  # type: ignore[arg-type]
    graph = create_agent(chat, tools=[tool(weather)], name="travel")
    return lambda: graph.invoke({"messages": [{"role": "user", "content": QUESTION}]})["messages"][-1].content


def child(framework: str, mode: str, base_url: str, steps: int, trace: str) -> None:
    """Time `steps` steps in this process and print the CPU seconds per step."""
    if mode == "recorded":
        import devtool
        import devtool.instrument

        devtool.instrument.install()
    step = step_of(framework, base_url)
    for _ in range(WARMUP):
        step()

    def timed() -> float:
        started = time.process_time()
        for _ in range(steps):
            step()
        return time.process_time() - started

    if mode == "bare":
        elapsed = timed()
    else:
        from devtool.core.frame import CURRENT_FRAME

        with devtool.record("bench", to=trace):
            elapsed = timed()
            frame = CURRENT_FRAME.get()
            started = time.process_time()
            frame.run.emitter.settle()  # what is still pending is the steps' work too
            elapsed += time.process_time() - started
    print(json.dumps({"cpu": elapsed / steps}))


def script(fake: FakeProvider) -> None:
    fake.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, last=QUESTION, times=None)
    fake.reply({"text": "Lisbon is sunny."}, last="sunny", times=None)


def run_child(framework: str, mode: str, fake: FakeProvider, steps: int, trace: Path) -> float:
    command = [sys.executable, __file__, "--child", mode, "--framework", framework, "--steps", str(steps)]
    command += ["--base-url", fake.openai_base_url, "--trace", str(trace)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=600)
    return float(json.loads(done.stdout.splitlines()[-1])["cpu"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", choices=("pydantic-ai", "openai-agents", "langgraph"), default="pydantic-ai")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--child", choices=("bare", "recorded"), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--trace", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.framework, args.child, args.base_url, args.steps, args.trace)
        return
    load_before = os.getloadavg()
    cpu: dict[str, list[float]] = {"bare": [], "recorded": []}
    ratios: list[float] = []
    with FakeProviderProcess.start() as process, tempfile.TemporaryDirectory() as folder:
        fake = process.namespace("bench")
        script(fake)
        for index in range(args.rounds):
            order = ("bare", "recorded") if index % 2 == 0 else ("recorded", "bare")
            got = {
                mode: run_child(args.framework, mode, fake, args.steps, Path(folder) / f"{index}.jsonl")
                for mode in order
            }
            for mode, seconds in got.items():
                cpu[mode].append(seconds)
            ratios.append(got["recorded"] / got["bare"])
    load_after = os.getloadavg()
    print(f"{args.framework}: {args.rounds} rounds of {args.steps} steps, {date.today()}, {platform.python_version()}")
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    for mode, values in cpu.items():
        print(f"{mode:>9}: {statistics.median(values) * 1000:.2f} ms CPU a step (median)")
    spread = f"min {min(ratios):.3f}, max {max(ratios):.3f}"
    print(f"recorded/bare: {statistics.median(ratios):.3f} (median of paired rounds; {spread})")


if __name__ == "__main__":
    main()
