"""A realistic synthetic agent trace, streamed to a TraceEvent JSONL file.

The shape is that of a large batch job written with `devtool.core` (or `@rejelly/core`): one
`runWith` root, one orchestrator agent, and tens of thousands of worker sub-agents it runs a
few at a time. Each worker has a generation, a `promptAgent` loop of turns (every turn carries
the conversation so far, a model call, a `budget:update` and the model's answer) and, between
turns, tool batches whose `toolResults` carry their inputs and outputs. Some tools and some
workers fail; the orchestrator logs progress. Agent, turn and tool events carry our `callId`;
turns and tool results carry a real SHA-256 `contentHash` of their input, so a restore from
this trace builds a journal that a replay can hit. Tool results are in `devtool.core`'s shape:
`callId` ours (`.../tool:search:0`), `toolCallId` the model's.

Events are written in emit order (timestamps never go backwards), and the file is written as
it is generated: memory stays flat whatever the size. `generate(path, events=N, seed=S)` writes
exactly N events and is deterministic for a given seed.

    python bench/gen_trace.py trace.jsonl --events 1000000 --seed 7
"""

from __future__ import annotations

import argparse
import hashlib
import heapq
import itertools
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

Event = dict[str, Any]

MODEL = {"id": "gpt-sim-1", "provider": "bench"}
START_MS = 1_790_000_000_000
TOOLS = [
    {
        "name": "search",
        "description": "Search the document index",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
    {
        "name": "fetch",
        "description": "Fetch one document by id",
        "parameters": {"type": "object", "properties": {"doc": {"type": "string"}}, "required": ["doc"]},
    },
    {
        "name": "calculator",
        "description": "Evaluate an arithmetic expression",
        "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}, "required": ["expr"]},
    },
]
TOPICS = [
    "invoice reconciliation",
    "shipping delays in the northern region",
    "refund policy exceptions",
    "duplicate customer records",
    "quarterly churn by plan",
    "supplier contract renewals",
    "warehouse stock discrepancies",
    "support tickets about login failures",
]
SENTENCE = (
    "the account shows a balance that does not match the ledger after the last sync so we need to check "
    "each line item against the source documents and flag anything that looks off before the report goes "
    "out to finance on monday morning"
)
WORDS = SENTENCE.split(" ")


@dataclass(frozen=True)
class GeneratedTrace:
    """What `generate` wrote: enough for a benchmark or a test to find its way around."""

    path: Path
    trace_id: str
    events: int
    bytes: int
    workers: int
    root_span_id: str
    orchestrator_span_id: str
    first_ms: int
    last_ms: int


def canonical_hash(value: Any) -> str:
    """SHA-256 of canonical JSON, as `devtool.core.jsonvalue.content_hash` (without its JSON check)."""
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


class _Ids:
    def __init__(self, rng: random.Random) -> None:
        self._rng = rng

    def span(self) -> str:
        return f"{self._rng.getrandbits(64):016x}"

    def trace(self) -> str:
        return f"{self._rng.getrandbits(128):032x}"


class _Writer:
    """Turns (timestamp, event) pairs into JSONL lines, stamping the common fields."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id

    def event(
        self, type_: str, ts: int, agent_id: str, span: str, parent: str, fields: dict[str, Any]
    ) -> tuple[int, Event]:
        event: Event = {
            "type": type_,
            "agentId": agent_id,
            "schemaVersion": 1,
            "timestamp": ts,
            "trace": {"traceId": self.trace_id, "spanId": span, "parentSpanId": parent},
        }
        event.update(fields)
        return ts, event


def _sentence(rng: random.Random, words: int) -> str:
    start = rng.randrange(len(WORDS))
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(words))


def _worker(
    w: _Writer, rng: random.Random, ids: _Ids, index: int, parent_span: str, parent_call: str, start: int, fail: bool
) -> Iterator[tuple[int, Event]]:
    """One worker sub-agent: agent → generation → promptAgent → turns and tool batches."""
    agent_id = "worker"
    call_id = f"{parent_call}/agent:{agent_id}:{index}"
    topic = TOPICS[index % len(TOPICS)]
    props = {"task": index, "topic": topic}
    agent_span, gen_span, loop_span = ids.span(), ids.span(), ids.span()
    t = start
    agent_fields = {"callId": call_id, "props": props, "scopeLayers": [], "resourceKeys": [], "maxReborns": 3}
    yield w.event("agent:start", t, agent_id, agent_span, parent_span, agent_fields)
    yield w.event("generation:start", t, agent_id, gen_span, agent_span, {"generationId": 0, "props": props})
    loop_fields = {"generationId": 0, "policyId": "standard-structure"}
    yield w.event("promptAgent:start", t, agent_id, loop_span, gen_span, loop_fields)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"You are worker {index}. Research {topic} and answer in one paragraph."},
        {"role": "user", "content": f"Task {index}: {_sentence(rng, 18)}"},
    ]
    turns = rng.choice((1, 2, 2, 3, 3, 4))
    tool_seq: dict[str, int] = {}
    tokens = 0
    failed_at = rng.randrange(turns) if fail else -1
    for step in range(turns):
        last = step == turns - 1
        turn_span, call_span = ids.span(), ids.span()
        turn_call = f"{call_id}/prompt:{agent_id}:{step}"
        prompt_input = [messages, None, MODEL, TOOLS]
        turn_fields: dict[str, Any] = {
            "callId": turn_call,
            "step": step,
            "messages": list(messages),
            "toolConfig": {"tools": TOOLS},
            "messageCount": len(messages),
        }
        yield w.event("turn:start", t, agent_id, turn_span, loop_span, turn_fields)
        model_fields = {"adapterId": MODEL["id"], "provider": MODEL["provider"], "messageCount": len(messages)}
        yield w.event("model:call:start", t, agent_id, call_span, turn_span, model_fields)
        latency = rng.randint(300, 4000)
        t += latency
        usage = {"promptTokens": 40 * len(messages) + rng.randint(0, 60), "completionTokens": rng.randint(8, 160)}
        usage["totalTokens"] = usage["promptTokens"] + usage["completionTokens"]
        tokens += usage["totalTokens"]
        yield w.event(
            "budget:update",
            t,
            agent_id,
            ids.span(),
            call_span,
            {"identifiers": [f"model:{MODEL['provider']}:{MODEL['id']}"], "delta": {**usage, "callCount": 1}},
        )
        if step == failed_at:
            error = {"name": "ModelError", "message": f"upstream 503 while serving worker {index}"}
            yield w.event("model:call:end", t, agent_id, call_span, turn_span, {**model_fields, "success": False})
            yield w.event(
                "turn:end",
                t,
                agent_id,
                turn_span,
                loop_span,
                {**turn_fields, "duration": latency, "success": False, "error": error, "cache": False},
            )
            t += rng.randint(1, 20)
            yield w.event("promptAgent:end", t, agent_id, loop_span, gen_span, {**loop_fields, "success": False})
            end = {"duration": t - start, "success": False, "error": error}
            yield w.event("generation:end", t, agent_id, gen_span, agent_span, {"generationId": 0, **end})
            yield w.event("agent:end", t, agent_id, agent_span, parent_span, {**agent_fields, **end})
            return
        if last:
            message: dict[str, Any] = {"role": "assistant", "content": f"Summary for {topic}: {_sentence(rng, 30)}"}
        else:
            calls = []
            for n in range(rng.choice((1, 1, 2, 3))):
                tool = TOOLS[rng.randrange(len(TOOLS))]["name"]
                arg = {"search": "query", "fetch": "doc", "calculator": "expr"}[tool]
                value = f"{topic} {rng.randrange(50)}" if tool != "calculator" else f"{rng.randrange(999)}*{n + 2}"
                calls.append({"id": f"call_{ids.span()[:12]}", "name": tool, "arguments": {arg: value}})
            message = {"role": "assistant", "content": None, "tool_calls": calls}
        yield w.event(
            "model:call:end",
            t,
            agent_id,
            call_span,
            turn_span,
            {**model_fields, "duration": latency, "usage": usage, "finishReason": "stop" if last else "tool_calls"},
        )
        yield w.event(
            "turn:end",
            t,
            agent_id,
            turn_span,
            loop_span,
            {
                **turn_fields,
                "message": message,
                "duration": latency,
                "success": True,
                "contentHash": canonical_hash(prompt_input),
                "cache": False,
                "resultType": "text" if last else "tool_calls",
            },
        )
        messages.append(message)
        if last:
            break
        tools_span = ids.span()
        names = [c["name"] for c in message["tool_calls"]]
        batch = {"toolCallsCount": len(names), "toolNames": names}
        yield w.event("tools:execute:start", t, agent_id, tools_span, loop_span, batch)
        results = []
        batch_start = t
        for call in message["tool_calls"]:
            seq = tool_seq.get(call["name"], 0)
            tool_seq[call["name"]] = seq + 1
            took = rng.randint(5, 900)
            t += took
            ok = rng.random() > 0.03
            output: Any = {"hits": [f"{call['name']} result {k} for {index}" for k in range(3)]} if ok else None
            result: dict[str, Any] = {
                "callId": f"{call_id}/tool:{call['name']}:{seq}",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "input": call["arguments"],
                "output": output,
                "duration": took,
                "success": ok,
                "cache": False,
                "contentHash": canonical_hash({"name": call["name"], "input": call["arguments"]}),
            }
            if not ok:
                result["error"] = {"name": "ToolError", "message": f"{call['name']} timed out"}
            results.append(result)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": orjson.dumps(output).decode()})
        failures = sum(1 for r in results if not r["success"])
        yield w.event(
            "tools:execute:end",
            t,
            agent_id,
            tools_span,
            loop_span,
            {
                **batch,
                "successCount": len(results) - failures,
                "failureCount": failures,
                "duration": t - batch_start,
                "toolResults": results,
                "success": True,
            },
        )
    t += rng.randint(1, 20)
    yield w.event("promptAgent:end", t, agent_id, loop_span, gen_span, {**loop_fields, "success": True})
    memory = {"topic": topic, "turns": turns, "tokens": tokens}
    yield w.event(
        "generation:end",
        t,
        agent_id,
        gen_span,
        agent_span,
        {"generationId": 0, "memory": memory, "duration": t - start, "success": True},
    )
    result = {"topic": topic, "answer": message["content"]}
    yield w.event(
        "agent:end",
        t,
        agent_id,
        agent_span,
        parent_span,
        {**agent_fields, "result": result, "duration": t - start, "success": True},
    )


def _events(total: int, seed: int, concurrency: int, failure_rate: float) -> Iterator[tuple[int, Event]]:
    rng = random.Random(seed)
    ids = _Ids(rng)
    w = _Writer(ids.trace())
    root, orch, gen = ids.span(), ids.span(), ids.span()
    orch_call = "root/agent:orchestrator:0"
    t = START_MS
    head = [
        w.event("runWith:start", t, "", root, "", {"props": {"batch": seed}, "config": {"enableSnapshot": True}}),
        w.event("agent:start", t, "orchestrator", orch, root, {"callId": orch_call, "props": {"batch": seed}}),
        w.event("generation:start", t, "orchestrator", gen, orch, {"generationId": 0}),
    ]
    tail_size = 4
    yield from head
    budget = total - len(head) - tail_size
    # Workers run `concurrency` at a time: a heap of their next events, merged by timestamp so the
    # file is in emit order, the way a live run writes it.
    running: list[tuple[int, int, Event, Iterator[tuple[int, Event]]]] = []
    started = 0
    order = itertools.count()
    worst_worker = 40  # events of the longest worker: 4 turns and 3 tool batches
    last = t

    def start_worker(at: int) -> None:
        nonlocal started
        gen_iter = _worker(w, rng, ids, started, gen, orch_call, at, rng.random() < failure_rate)
        ts, event = next(gen_iter)
        heapq.heappush(running, (ts, next(order), event, gen_iter))
        started += 1

    for _ in range(concurrency):
        start_worker(t + rng.randint(0, 50))
    emitted = 0
    while running:
        ts, _, event, gen_iter = heapq.heappop(running)
        last = max(last, ts)
        yield ts, event
        emitted += 1
        nxt = next(gen_iter, None)
        if nxt is not None:
            heapq.heappush(running, (nxt[0], next(order), nxt[1], gen_iter))
        elif emitted + len(running) * worst_worker + worst_worker < budget:
            start_worker(last + rng.randint(1, 30))
            if started % 1000 == 0:
                log = {"level": "info", "message": f"{started} workers started", "args": []}
                emitted += 1
                yield w.event("sys:log", last, "orchestrator", ids.span(), gen, log)
    for _ in range(budget - emitted):
        last += rng.randint(0, 2)
        log = {"level": "debug", "message": "collecting results", "args": []}
        yield w.event("sys:log", last, "orchestrator", ids.span(), gen, log)
    last += 5
    result = {"workers": started}
    yield w.event("generation:end", last, "orchestrator", gen, orch, {"generationId": 0, "memory": result})
    yield w.event(
        "agent:end", last, "orchestrator", orch, root, {"callId": orch_call, "result": result, "success": True}
    )
    yield w.event("sys:log", last, "", ids.span(), root, {"level": "info", "message": "batch done", "args": []})
    yield w.event("runWith:end", last, "", root, "", {"result": result, "duration": last - START_MS, "success": True})


def generate(
    path: Path | str,
    events: int = 1_000_000,
    seed: int = 0,
    *,
    concurrency: int = 16,
    failure_rate: float = 0.02,
) -> GeneratedTrace:
    """Write a trace of exactly `events` TraceEvents to `path` (JSONL) and say what is in it."""
    if events < 50:
        raise ValueError("a generated trace needs at least 50 events (one orchestrator and a worker)")
    path = Path(path)
    count = 0
    first = last = 0
    trace_id = root = orch = ""
    workers = 0
    buffer: list[bytes] = []
    with path.open("wb") as out:
        for ts, event in _events(events, seed, concurrency, failure_rate):
            if count == 0:
                first, trace_id, root = ts, event["trace"]["traceId"], event["trace"]["spanId"]
            elif count == 1:
                orch = event["trace"]["spanId"]
            if event["type"] == "agent:start" and event["agentId"] == "worker":
                workers += 1
            last = ts
            buffer.append(orjson.dumps(event))
            count += 1
            if len(buffer) >= 4096:
                out.write(b"\n".join(buffer) + b"\n")
                buffer.clear()
        if buffer:
            out.write(b"\n".join(buffer) + b"\n")
    return GeneratedTrace(path, trace_id, count, path.stat().st_size, workers, root, orch, first, last)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the .jsonl file to write")
    parser.add_argument("--events", type=int, default=1_000_000, help="how many events (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--concurrency", type=int, default=16, help="workers running at once (default 16)")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    info = generate(args.out, events=args.events, seed=args.seed, concurrency=args.concurrency)
    took = time.perf_counter() - began
    print(
        f"{info.events:,} events, {info.workers:,} workers, {info.bytes / 1e6:,.0f} MB, trace {info.trace_id} "
        f"in {took:.1f} s -> {info.path}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
