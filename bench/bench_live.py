"""Benchmark of live attachment: an agent streaming 1,000 events/s into `devtool serve` while 10 browsers watch.

    python bench/bench_live.py [--rate 1000] [--seconds 60] [--clients 10] [--page-every 0.5] [--workdir DIR]

1. Starts a real `devtool serve` (its own process, a fresh DuckDB file).
2. Opens `--clients` SSE connections to the run's stream (`/runs/<trace_id>/live`) from a process of
   their own, one thread each, before the run starts.
3. A producer process emits `--rate` events a second for `--seconds` seconds through `HttpSink`, what
   an instrumented agent uses: spans (`custom:span` start and end) under one root agent, each event
   stamped with the wall clock when emitted; then it ends the root span, which ends the streams.
4. Reports, per client, the events it received (target: all of them, each once) and, over every event
   of every client, the latency from emit (the event's timestamp) to receipt (the wall clock when its
   message was read): p50, p95 (target ≤ 250 ms), p99, max; and from emit to the `spans` message that
   says the event's spans are derived (what the run page redraws on). And the server's CPU time
   (user + system, from /proc, with its worker processes') over the run, per second and per 1,000
   events: what ingest and fan-out cost.
5. Meanwhile a teammate opens the run: every `--page-every` seconds (from the first event to the
   last) `GET /runs/<trace_id>`, the whole page, is timed from request to the last byte read, with
   the server's own time (`Server-Timing`) beside it, and how much of that was waiting for the live
   derive to settle: p50, p95 (target ≤ 300 ms, issue 20), max.

The processes share the machine: on 2 cores, producer, clients and server compete for CPU, so the
figures are what a laptop running agent, DevTool and browser at once would see.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import secrets
import statistics
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx

from devtool.core.http_sink import HttpSink
from devtool.store import store_files
from testkit import served
from testkit.served import Served
from testkit.sse import SseStream

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` and of its live children (a server's worker processes)
    so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    own = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return own + sum(_cpu_if_running(child) for child in _children(pid))


def _cpu_if_running(pid: int) -> float:
    try:
        return cpu_seconds(pid)
    except FileNotFoundError:  # it ended meanwhile
        return 0.0


def _children(pid: int) -> list[int]:
    """The processes `pid` started that are still running (one that ends meanwhile is left out)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except FileNotFoundError:
            continue
    return found


def machine() -> str:
    lines = Path("/proc/cpuinfo").read_text().splitlines()
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    cpu = names[0] if names else platform.machine()
    return f"{cpu}, {os.cpu_count()} cores, {platform.platform(terse=True)}, CPython {platform.python_version()}"


def event(trace_id: str, type_: str, span: str, parent: str, **fields: Any) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "type": type_,
        "timestamp": time.time() * 1000,
        "agentId": "bench",
        "trace": {"traceId": trace_id, "spanId": span, "parentSpanId": parent},
        **fields,
    }


def produce(url: str, trace_id: str, rate: int, seconds: float, done: Any) -> None:
    """Emit `rate` events/s for `seconds` through HttpSink, then end the run; report what was sent."""
    sink = HttpSink(f"{url}api/v1/traces", flush_timeout=60)
    root = secrets.token_hex(8)
    sink(event(trace_id, "agent:start", root, "", props={"bench": True}))
    total = int(rate * seconds)
    tick = 0.01
    per_tick = rate * tick
    began = time.monotonic()
    emitted = 1
    open_span = ""
    for n in range(total):
        due = began + (n // per_tick) * tick
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        if n % 2 == 0:
            open_span = secrets.token_hex(8)
            sink(event(trace_id, "custom:span:start", open_span, root, name=f"step {n // 2}"))
        else:
            sink(event(trace_id, "custom:span:end", open_span, root, name=f"step {n // 2}", success=True))
        emitted += 1
    sink(event(trace_id, "agent:end", root, "", success=True, result="done"))
    emitted += 1
    sink.close()
    done.put({"emitted": emitted, "sent": sink.sent, "spooled": sink.spooled, "took": time.monotonic() - began})


def listen(url: str, trace_id: str, clients: int, ready: Any, done: Any) -> None:
    """Hold `clients` SSE connections, each in a thread; report ids received and latencies."""
    results: list[dict[str, Any]] = [{} for _ in range(clients)]

    def client(index: int) -> None:
        stream = SseStream(f"{url}runs/{trace_id}/live?after=0", timeout=120)
        ids: list[int] = []
        latencies: list[float] = []
        # Events received whose spans are not derived yet (id, emitted at), and when they were.
        underived: deque[tuple[int, float]] = deque()
        derived: list[float] = []
        messages = 0
        ready.put(index)
        closed = False
        for message in stream.messages():
            if message.event == "close":
                closed = True
                break
            now = time.time() * 1000
            if message.event == "spans":
                through = message.json()["through"]
                while underived and underived[0][0] <= through:
                    derived.append(now - underived.popleft()[1])
                continue
            if message.event != "events":
                continue
            messages += 1
            for item in message.json()["events"]:
                ids.append(item["id"])
                latencies.append(now - item["timestamp"])
                underived.append((item["id"], item["timestamp"]))
        stream.close()
        results[index] = {
            "ids": ids,
            "latencies": latencies,
            "derived": derived,
            "messages": messages,
            "closed": closed,
        }

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.put(results)


def open_page(url: str, trace_id: str, every: float, stop: Any, done: Any) -> None:
    """GET the run page every `every` seconds until `stop` is set; report (wall, server, of it waiting
    for the live derive) in ms of each."""
    timings: list[tuple[float, float, float]] = []
    statuses: list[int] = []
    with httpx.Client(base_url=url, timeout=60) as client:
        while not stop.is_set():
            began = time.perf_counter()
            response = client.get(f"runs/{trace_id}")
            wall = (time.perf_counter() - began) * 1000
            statuses.append(response.status_code)
            if response.status_code == 200:
                spent = dict(
                    (name.strip(), float(dur))
                    for name, _, dur in (
                        part.partition(";dur=") for part in response.headers["server-timing"].split(",")
                    )
                )
                timings.append((wall, spent["app"], spent.get("settle", 0.0)))
            stop.wait(max(0.0, every - wall / 1000))
    done.put({"timings": timings, "statuses": statuses})


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def spread(values: list[float]) -> str:
    """The p50, p95, p99, max and mean of latencies `values` (ms), as the reports print them."""
    return (
        f"p50 {percentile(values, 0.50):.0f} ms, p95 {percentile(values, 0.95):.0f} ms, "
        f"p99 {percentile(values, 0.99):.0f} ms, max {max(values):.0f} ms, mean {statistics.fmean(values):.0f} ms"
    )


@contextmanager
def serving(workdir: Path, name: str, tree: Path | None = None) -> Iterator[Served]:
    """A `devtool serve` on a fresh database `name`.duckdb under `workdir` (its log `name`.log beside
    it), stopped on the way out; with `tree`, that checkout's (started in it, its code first on the
    path)."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"{name}.duckdb"
    for stale in store_files(db):
        stale.unlink(missing_ok=True)
    env = {**os.environ, "XDG_DATA_HOME": str(workdir / "data")}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    with served.serving(db, log=workdir / f"{name}.log", env=env, cwd=tree) as server:
        yield server


def watch(
    server_pid: int,
    url: str,
    trace_id: str,
    clients: int,
    produce: Any,
    args: tuple[Any, ...],
    timeout: float,
    page_every: float | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]], float, float, dict[str, Any] | None]:
    """Run `produce(url, trace_id, *args, done)` in a process while `clients` SSE clients watch the run
    (and, with `page_every`, a teammate opens its page that often); what the producer reported, what
    each client received, the server's CPU and wall seconds, and the page loads' timings."""
    context = multiprocessing.get_context("spawn")
    ready, listened, produced, paged = context.Queue(), context.Queue(), context.Queue(), context.Queue()
    listener = context.Process(target=listen, args=(url, trace_id, clients, ready, listened))
    listener.start()
    for _ in range(clients):
        ready.get(timeout=30)
    time.sleep(0.5)  # every stream has subscribed
    cpu_before, wall_before = cpu_seconds(server_pid), time.monotonic()
    producer = context.Process(target=produce, args=(url, trace_id, *args, produced))
    producer.start()
    stop = context.Event()
    pager = None
    if page_every is not None:
        time.sleep(0.5)  # the run exists
        pager = context.Process(target=open_page, args=(url, trace_id, page_every, stop, paged))
        pager.start()
    sent = produced.get(timeout=timeout)
    stop.set()
    pages = None
    if pager is not None:
        pages = paged.get(timeout=120)
        pager.join()
    results = listened.get(timeout=300)
    cpu, wall = cpu_seconds(server_pid) - cpu_before, time.monotonic() - wall_before
    producer.join()
    listener.join()
    return sent, results, cpu, wall, pages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=1000, help="events a second (default 1000)")
    parser.add_argument("--seconds", type=float, default=60, help="how long the producer emits (default 60)")
    parser.add_argument("--clients", type=int, default=10, help="SSE clients (default 10)")
    parser.add_argument("--page-every", type=float, default=0.5, help="seconds between run page loads (default 0.5)")
    parser.add_argument("--workdir", type=Path, help="where the database goes (default: a temporary folder)")
    args = parser.parse_args()

    trace_id = secrets.token_hex(16)
    with serving(args.workdir or Path(tempfile.mkdtemp(prefix="bench-live-")), "live") as server:
        sent, results, cpu, wall, pages = watch(
            server.process.pid,
            server.url,
            trace_id,
            args.clients,
            produce,
            (args.rate, args.seconds),
            args.seconds * 5 + 120,
            page_every=args.page_every,
        )

    total = sent["emitted"]
    expected = list(range(1, total + 1))
    print(f"Machine: {machine()}; {date.today().isoformat()}")
    print(
        f"Producer: {total:,} events in {sent['took']:.1f} s ({total / sent['took']:,.0f}/s) through HttpSink, "
        f"{sent['sent']:,} delivered, {sent['spooled']:,} spooled"
    )
    latencies: list[float] = []
    for index, result in enumerate(results):
        complete = "all, once" if result["ids"] == expected else f"MISSING/EXTRA (unique {len(set(result['ids'])):,})"
        print(
            f"client {index}: {len(result['ids']):,} of {total:,} events ({complete}) in {result['messages']} "
            f"messages, closed: {result['closed']}, p95 {percentile(result['latencies'], 0.95):.0f} ms"
        )
        latencies.extend(result["latencies"])
    print(f"Latency emit→receipt over {len(latencies):,} receipts: {spread(latencies)}")
    derived = [latency for result in results for latency in result["derived"]]
    print(f"Latency emit→spans derived (the page redraws) over {len(derived):,} events: {spread(derived)}")
    assert pages is not None
    walls = [wall for wall, _, _ in pages["timings"]]
    servers = [server for _, server, _ in pages["timings"]]
    settles = [settle for _, _, settle in pages["timings"]]
    others = sorted({status for status in pages["statuses"] if status != 200})
    print(
        f"GET /runs/<id> while it streams, {len(walls)} loads (other answers: {others or 'none'}): "
        f"wall p50 {percentile(walls, 0.50):.0f} ms, p95 {percentile(walls, 0.95):.0f} ms, max {max(walls):.0f} ms; "
        f"server p50 {percentile(servers, 0.50):.0f} ms, p95 {percentile(servers, 0.95):.0f} ms, "
        f"of it waiting for the live derive p50 {percentile(settles, 0.50):.0f} ms, "
        f"p95 {percentile(settles, 0.95):.0f} ms"
    )
    print(
        f"Server CPU: {cpu:.1f} s over {wall:.1f} s ({cpu / wall:.2f} cores), "
        f"{cpu / total * 1000 * 1000:.0f} ms per 1,000 events (ingest, store, fan-out to {args.clients} clients)"
    )


if __name__ == "__main__":
    main()
