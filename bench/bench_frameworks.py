"""CPU of a framework agent step recorded whole (`devtool.instrument.install()`, no decorator) over the
same step not recorded, against the fake provider.

    python bench/bench_frameworks.py [--framework pydantic-ai|openai-agents|langgraph] [--rounds 15] [--block 10]

A step is one agent run that asks the model once for a tool call, runs the tool, and asks once more
for the answer (the OpenAI Agents SDK's agent stops at its tool's output, `stop_on_first_tool`: one
model call and one tool call). A real fake provider process answers over loopback HTTP. Each round
runs, in an order that alternates by round, a block of `--block` steps of each kind:
- unrecorded: outside any run, the framework as it is (the wrappers `install()` put on it pass the
  call through on one ContextVar read);
- recorded: inside a `devtool.record` run of its own whose events go to a JSONL file: the agent frames,
  turns, journaled tool calls and their events, the run's pending work settled before the clock stops.
Timed: the process's CPU time over the block (every thread's: the drainer's too). Reported: each kind's
median CPU per step (with its user and system parts, context switches and the garbage collector's
passes: counts that load changes little, to explain a ratio with), and the median over rounds of the
recorded/unrecorded ratio (paired by round, so a burst of load falls on both). The target is at most
5% more CPU recorded.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import devtool  # noqa: E402
import devtool.instrument  # noqa: E402
from devtool.core.frame import CURRENT_FRAME  # noqa: E402
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


def script(fake: FakeProvider) -> None:
    fake.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, last=QUESTION, times=None)
    fake.reply({"text": "Lisbon is sunny."}, last="sunny", times=None)


# What `getrusage` counts for the whole process (every thread), a step: CPU seconds in user space and
# in the kernel, and the switches away from its threads, voluntary (a wait: I/O, a lock, a sleep) and
# involuntary (preempted); then the garbage collector's passes of its youngest two generations and
# full ones (a full one walks every object of the process: ~175 ms with a framework loaded). Switches,
# passes and the user/system split are what load changes least.
USAGE = ("user", "system", "voluntary", "involuntary", "young collections", "full collections")
COLLECTIONS = [0, 0]


def _collected(phase: str, info: dict[str, int]) -> None:
    if phase == "stop":
        COLLECTIONS[info["generation"] == 2] += 1


gc.callbacks.append(_collected)


def usage() -> tuple[float, ...]:
    got = resource.getrusage(resource.RUSAGE_SELF)
    return got.ru_utime, got.ru_stime, got.ru_nvcsw, got.ru_nivcsw, *COLLECTIONS


def block(step: Callable[[], Any], steps: int, trace: Path | None) -> tuple[float, ...]:
    """The process's CPU seconds for `steps` steps, in a recorded run of their own when `trace` is given,
    then its `USAGE` over them."""
    before, started = usage(), time.process_time()
    if trace is None:
        for _ in range(steps):
            step()
    else:
        with devtool.record("bench", to=trace):
            for _ in range(steps):
                step()
            CURRENT_FRAME.get().run.emitter.settle()  # what is still pending is the steps' work too
    spent = time.process_time() - started
    return (spent, *(after - first for after, first in zip(usage(), before, strict=True)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", choices=("pydantic-ai", "openai-agents", "langgraph"), default="pydantic-ai")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--block", type=int, default=10)
    args = parser.parse_args()
    devtool.instrument.install()
    load_before = os.getloadavg()
    cpu: dict[str, list[float]] = {"unrecorded": [], "recorded": []}
    counts: dict[str, list[tuple[float, ...]]] = {"unrecorded": [], "recorded": []}
    ratios: list[float] = []
    with FakeProviderProcess.start() as process, tempfile.TemporaryDirectory() as folder:
        fake = process.namespace("bench")
        script(fake)
        step = step_of(args.framework, fake.openai_base_url)
        block(step, WARMUP, None)
        block(step, WARMUP, Path(folder) / "warmup.jsonl")
        for index in range(args.rounds):
            order = ("unrecorded", "recorded") if index % 2 == 0 else ("recorded", "unrecorded")
            trace = Path(folder) / f"{index}.jsonl"
            got = {kind: block(step, args.block, trace if kind == "recorded" else None) for kind in order}
            for kind, (seconds, *rest) in got.items():
                cpu[kind].append(seconds / args.block)
                counts[kind].append(tuple(value / args.block for value in rest))
            ratios.append(got["recorded"][0] / got["unrecorded"][0])
    load_after = os.getloadavg()
    print(f"{args.framework}: {args.rounds} rounds of {args.block} steps, {date.today()}, {platform.python_version()}")
    machine = f"{platform.machine()}, {os.cpu_count()} CPUs"
    print(f"machine: {machine}; load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    for kind, values in cpu.items():
        columns = list(zip(*counts[kind], strict=True))
        user, system, voluntary, involuntary = (statistics.median(column) for column in columns[:4])
        young, full = (sum(column) * 100 / len(column) for column in columns[4:])
        print(
            f"{kind:>10}: {statistics.median(values) * 1000:.2f} ms CPU a step (median): user {user * 1000:.2f},"
            f" system {system * 1000:.2f} ms; context switches {voluntary:.1f} voluntary,"
            f" {involuntary:.1f} involuntary; collections a 100 steps {young:.1f} young, {full:.2f} full"
        )
    spread = f"min {min(ratios):.3f}, max {max(ratios):.3f}"
    print(f"recorded/unrecorded: {statistics.median(ratios):.3f} (median of paired rounds; {spread})")


if __name__ == "__main__":
    main()
