"""Benchmark of the process journal: durable appends, and recover / plan / apply on a million entries.

    python bench/bench_journal.py                      # everything, figures as a Markdown table
    python bench/bench_journal.py --entries 100000     # a quick run while developing

What it measures, each in a fresh child process (so the figures include opening the file and peak
memory is that process's maximum resident set):
- appends per second of `FileJournal`, durable (one task, every append fsync'd on its own) and
  group-committed (`group_commit=True`, with 64, 512 and 2048 tasks appending at once: each
  append still returns only once its line is fsync'd, so the rate grows with the appends in flight);
- on a generated journal of `--entries` entries (1,000,000 by default, about 270 MB, the 18 entry
  types of a real process mixed as in the corpus's random journal, a checkpoint every 100,000
  entries up to the middle and none after): the first open of the file without its sidecar index
  (the index is built once), then `ReplayEngine.recover` (which replays the second half),
  `RewindEngine.plan` and `RewindEngine.apply(record=False)` with the middle entry as the target, in
  mode BOTH (the postmortem: the state before it) and SUMMARIZE (which also rebuilds the state now).

The published library took about 8.8 s / 8.7 s / 9.1 s at 1.15 GB peak for recover / plan / apply on
such a journal, and about 41,000 appends/s without any fsync. Targets (issue 5): group-committed
appends >= 41,000/s with durability; recover, plan and apply each <= 2 s and <= 300 MB peak.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

PROCESS_ID = "bench-process"
START = datetime(2026, 7, 1, tzinfo=UTC)
TYPES = [  # (entry type, weight): the mix of the corpus's random-500 journal
    ("context_update", 96),
    ("trigger_event", 43),
    ("conversation_turn", 42),
    ("state_transition", 38),
    ("tool_call", 38),
    ("user_prompt", 36),
    ("assistant_message", 27),
    ("tool_result", 27),
    ("invocation_result", 20),
    ("invocation_start", 18),
    ("file_write", 17),
    ("error", 16),
    ("code_execution", 14),
    ("file_change", 14),
    ("heartbeat", 14),
    ("rewind", 11),
    ("recovered", 4),
]
STATES = ["running", "suspended", "running", "stopped", "running"]


def entry_id(index: int) -> str:
    return f"{index:08x}-4b3c-4d5e-8f60-{index:012x}"


def data_for(entry_type: str, index: int, rng: random.Random) -> dict[str, Any]:
    words = " ".join(rng.choice(("acme", "invoice", "reconcile", "hold", "retry", "ok")) for _ in range(10))
    if entry_type == "context_update":
        return {"key": f"k{rng.randrange(40)}", "value": {"n": index, "note": words}}
    if entry_type == "state_transition":
        return {"from_state": "running", "to_state": rng.choice(STATES), "reason": words}
    if entry_type in ("user_prompt", "assistant_message", "conversation_turn"):
        return {"role": rng.choice(("user", "assistant", "tool")), "content": words, "prompt": words}
    if entry_type in ("tool_call", "tool_result"):
        return {"tool": "search", "args": {"query": words}, "call": index}
    return {"info": words, "n": index}


def generate(path: Path, entries: int, seed: int = 5) -> None:
    """Write the journal (and its checkpoint file) as one process would have, without an index."""
    rng = random.Random(seed)
    names = [name for name, _ in TYPES]
    weights = [weight for _, weight in TYPES]
    middle = entries // 2
    context: dict[str, Any] = {}
    conversation: list[dict[str, Any]] = []  # the last messages, as a bounded conversation buffer keeps them
    with path.open("wb", buffering=1 << 20) as out:
        for index in range(entries):
            checkpoint = (index % 100_000 == 99_999 and index <= middle) or index == middle - 1
            entry_type = "checkpoint" if checkpoint else rng.choices(names, weights)[0]
            if checkpoint:
                data: dict[str, Any] = {
                    "state": {
                        "context_state": dict(context),
                        "lifecycle_state": "running",
                        "conversation": conversation,
                    }
                }
            else:
                data = data_for(entry_type, index, rng)
                if entry_type == "context_update":
                    context[data["key"]] = data["value"]
                elif entry_type == "conversation_turn":
                    conversation = [*conversation[-19:], {"role": data["role"], "content": data["content"]}]
            line = {
                "entry_id": entry_id(index),
                "process_id": PROCESS_ID,
                "timestamp": (START + timedelta(milliseconds=index * 250)).isoformat(),
                "entry_type": entry_type,
                "data": data,
            }
            out.write(orjson.dumps(line) + b"\n")
            if checkpoint:
                (path.parent / f"{PROCESS_ID}.checkpoint.json").write_bytes(orjson.dumps(data["state"]))


async def measure(operation: str, directory: Path, entries: int, tasks: int) -> dict[str, Any]:
    """One operation, timed, in this (fresh) process."""
    from devtool.journal import FileJournal, JournalEntry, ReplayEngine, RewindEngine, RewindMode

    if operation in ("durable", "group"):
        journal = FileJournal(directory, group_commit=operation == "group")
        per_task = entries // tasks

        async def writer(task: int) -> None:
            for index in range(per_task):
                await journal.append(
                    JournalEntry(process_id=PROCESS_ID, entry_type="tool_call", data={"tool": "search", "n": index})
                )

        started = time.perf_counter()
        await asyncio.gather(*(writer(task) for task in range(tasks)))
        elapsed = time.perf_counter() - started
        return {"appends": per_task * tasks, "seconds": elapsed, "per_second": per_task * tasks / elapsed}

    journal = FileJournal(directory)
    target = entry_id(entries // 2)
    started = time.perf_counter()
    if operation == "index":
        await journal.log(PROCESS_ID)
        answer: Any = None
    elif operation == "recover":
        answer = await ReplayEngine(journal).recover(PROCESS_ID)
        answer = {"entries_replayed": answer["entries_replayed"], "keys": len(answer["context_state"])}
    elif operation == "plan":
        answer = (await RewindEngine(journal).plan(process_id=PROCESS_ID, target_entry_id=target)).summary
    else:
        mode = RewindMode.SUMMARIZE if operation == "apply-summarize" else RewindMode.BOTH
        result = await RewindEngine(journal).apply(
            process_id=PROCESS_ID, target_entry_id=target, mode=mode, record=False
        )
        answer = {"keys": len(result.context_state), "messages": len(result.conversation)}
    return {"seconds": time.perf_counter() - started, "answer": answer}


def child(operation: str, directory: Path, entries: int, tasks: int) -> None:
    figures = asyncio.run(measure(operation, directory, entries, tasks))
    figures["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(figures))


def run_child(operation: str, directory: Path, entries: int, tasks: int = 1) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", operation, "--dir", str(directory), "--entries", str(entries)]
    done = subprocess.run(
        [*command, "--tasks", str(tasks)],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=1_000_000, help="entries in the generated journal")
    parser.add_argument("--durable-appends", type=int, default=2_000)
    parser.add_argument("--group-appends", type=int, default=204_800)
    parser.add_argument("--tasks", type=int, nargs="+", default=[64, 512, 2048], help="concurrent appenders")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.dir, args.entries, args.tasks[0])
        return

    work = Path(tempfile.mkdtemp(prefix="devtool-bench-journal-"))
    try:
        rows: list[tuple[str, str, str, str]] = []
        runs = [("durable", args.durable_appends, 1)] + [("group", args.group_appends, n) for n in args.tasks]
        for mode, count, tasks in runs:
            figures = run_child(mode, work / f"{mode}-{tasks}", count, tasks)
            what = f"appends, {mode}, {tasks} task{'s' if tasks > 1 else ''}"
            rows.append((what, f"{figures['per_second']:,.0f} /s", f"{figures['peak_mb']:.0f} MB", ""))

        journal_dir = work / "journal"
        journal_dir.mkdir()
        started = time.perf_counter()
        generate(journal_dir / f"{PROCESS_ID}.jsonl", args.entries)
        size = (journal_dir / f"{PROCESS_ID}.jsonl").stat().st_size
        print(f"generated {args.entries:,} entries, {size / 1e6:.0f} MB in {time.perf_counter() - started:.1f} s")
        for operation in ("index", "recover", "plan", "apply", "apply-summarize"):
            figures = run_child(operation, journal_dir, args.entries)
            answer = "" if figures["answer"] is None else json.dumps(figures["answer"])
            rows.append((operation, f"{figures['seconds']:.2f} s", f"{figures['peak_mb']:.0f} MB", answer))

        print("| what | time or rate | peak memory (process) | answer |")
        print("|---|---|---|---|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
