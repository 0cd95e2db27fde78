"""One round of one system: start it on a fresh data folder, then ingest, one small trace at a time,
the 10,000-span trace, the search, and its storage and peak memory; the figures as a dict.

A round has a budget a figure: an ingest not visible, or a search not answered, within it is
recorded as the budget with `OVER + key` set (a lower bound: "> 300 s"), so a peer that takes half
an hour does not stop the sitting, and what it did not finish is said, not dropped. After an ingest
over budget the round's other figures are not taken: the system is still draining it."""

from __future__ import annotations

import functools
import math
import statistics
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.peers import web
from bench.peers.workload import WORD, Workload

POLL = 0.005  # s between looks at a single trace
PROBE_GAP = 0.05  # s between two probes, so each is alone
OVER = "over:"  # figures[OVER + key] = 1: figures[key] is the budget, which ran out first


def wait(check: Callable[[], bool], timeout: float, every: float, relative: float = 0.0) -> float:
    """Seconds until `check()` holds, looked at every `every` s or, once longer, every `relative` of the
    time waited so far (a look costs the system under test too: a count over 100,000 spans every
    0.1 s for 15 minutes would slow the peer it measures); raises past `timeout`."""
    began = time.perf_counter()
    while not check():
        waited = time.perf_counter() - began
        if waited > timeout:
            raise TimeoutError(f"not visible after {timeout:.0f} s")
        time.sleep(max(every, relative * waited))
    return time.perf_counter() - began


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def ingest(
    system: ModuleType, running: Any, load: Workload, busy: Workload, budget: float, connections: int = 2
) -> dict[str, float]:
    """Post the bodies over `connections` connections at once, then wait until all are visible; while
    they are posted, the `busy` single traces go one at a time on a connection of their own, each
    looked for as `probes` does (the time to visible of one small trace under that load). Not
    visible within `budget` seconds: the budget, marked OVER, and the server CPU until then."""
    deadline = time.monotonic() + budget
    exporters = [web.Exporter(running.url, system.HEADERS, deadline) for _ in range(connections)]
    cpu = running.cpu()
    began = time.perf_counter()
    failures: list[BaseException] = []
    posting = threading.Event()
    latencies: list[float] = []
    posts: list[float] = []

    def send(k: int) -> None:
        try:
            for body in load.bodies[k::connections]:
                exporters[k].post(body)
        except Exception as error:  # raised again below, on the bench's thread
            failures.append(error)

    def probe() -> None:
        try:
            found, answered = _probe(system, running, busy, until=posting, deadline=deadline)
            latencies.extend(found)
            posts.extend(answered)
        except Exception as error:
            failures.append(error)

    threads = [threading.Thread(target=send, args=(k,)) for k in range(connections)]
    prober = threading.Thread(target=probe)
    posting.set()
    for thread in [*threads, prober]:
        thread.start()
    for thread in threads:
        thread.join()
    posting.clear()
    prober.join()
    for exporter in exporters:
        exporter.close()

    def over_budget() -> dict[str, float]:
        return {
            OVER + "ingest_s": 1.0,
            OVER + "ingest_cpu_s": 1.0,
            "ingest_s": budget,
            "ingest_cpu_s": running.cpu() - cpu,
        }

    if failures:
        if time.monotonic() > deadline and all(isinstance(e, web.OutOfTime | TimeoutError) for e in failures):
            return over_budget()
        raise failures[0]
    posted = time.perf_counter() - began
    # The busy traces posted are visible too: the ingest is visible when all of them are.
    traces, spans = len(load.trace_ids) + len(latencies), load.spans + len(latencies) * busy.spans // len(busy.bodies)
    try:
        wait(lambda: system.visible(running, traces, spans), deadline - time.monotonic(), every=0.1, relative=0.01)
    except TimeoutError:
        return over_budget()
    took = time.perf_counter() - began
    used = running.cpu() - cpu
    # The full check (ours: every page of the runs list) is not timed when it holds at once, nor is
    # its CPU counted: it is the bench reading, not the ingest (ours: 167 pages, 3-6 s of the server's
    # CPU, a sixth of what it was counted at before; BENCHMARKS.md, issue 43's ingest CPU).
    checking = running.cpu()
    check_cpu = 0.0  # when the check fails at first, it is part of the ingest, timed and counted
    if system.complete(running, traces, spans):
        check_cpu = running.cpu() - checking
    else:
        wait(lambda: system.complete(running, traces, spans), timeout=3600, every=0.1, relative=0.01)
        took = time.perf_counter() - began
        used = running.cpu() - cpu
    during = (
        {
            "busy_p50_ms": percentile(latencies, 0.5),
            "busy_p95_ms": percentile(latencies, 0.95),
            "busy_post_p50_ms": percentile(posts, 0.5),
            "busy_post_p95_ms": percentile(posts, 0.95),
        }
        if latencies
        else {}
    )
    return {
        "ingest_s": took,
        "ingest_posted_s": posted,
        "ingest_spans_per_s": load.spans / took,
        "ingest_cpu_s": used,
        "check_cpu_s": check_cpu,
        "ingest_retries": sum(exporter.retries for exporter in exporters),
        **during,
        "busy_probes": len(latencies),
    }


def probes(system: ModuleType, running: Any, load: Workload) -> dict[str, float]:
    """Each small trace posted alone, then looked for every POLL s: export to visible, in ms."""
    latencies, _ = _probe(system, running, load)
    return {"visible_p50_ms": percentile(latencies, 0.5), "visible_p95_ms": percentile(latencies, 0.95)}


def _probe(
    system: ModuleType,
    running: Any,
    load: Workload,
    until: threading.Event | None = None,
    deadline: float = math.inf,
) -> tuple[list[float], list[float]]:
    """Post `load`'s single traces one at a time (while `until` is set, if given), each looked for every
    POLL s until visible: each one's export to visible, and to the export's answer, in ms. Past
    `deadline` (a `time.monotonic()`), a trace not yet visible raises TimeoutError."""
    exporter = web.Exporter(running.url, system.HEADERS)
    latencies, posts = [], []
    for body, trace_id in zip(load.bodies, load.trace_ids, strict=True):
        if until is not None and not until.is_set():
            break
        began = time.perf_counter()
        exporter.post(body)
        posts.append((time.perf_counter() - began) * 1000)
        timeout = min(600.0, deadline - time.monotonic())
        wait(functools.partial(system.trace_visible, running, trace_id, 6), timeout, every=POLL)
        latencies.append((time.perf_counter() - began) * 1000)
        time.sleep(PROBE_GAP)
    exporter.close()
    return latencies, posts


def big_trace(system: ModuleType, running: Any, load: Workload) -> dict[str, float]:
    """The 10,000-span trace posted, then opened as a user would: first, and again (warm)."""
    exporter = web.Exporter(running.url, system.HEADERS)
    for body in load.bodies:
        exporter.post(body)
    exporter.close()
    trace_id = load.trace_ids[0]
    wait(lambda: system.trace_visible(running, trace_id, load.spans), timeout=1800, every=0.2)
    times, sizes = [], []
    for _ in range(2):
        began = time.perf_counter()
        sizes.append(system.open_trace(running, trace_id))
        times.append(time.perf_counter() - began)
    # What came back (bytes, or spans where the API pages them), to see that it was the whole view.
    return {"open_first_s": times[0], "open_warm_s": times[1], "open_answered": sizes[0]}


def search(system: ModuleType, running: Any, expected: int, budget: float) -> dict[str, float]:
    """Every page of the search for WORD; not answered within `budget` seconds: the budget, marked
    OVER (the search goes on in its thread until the round stops the server under it)."""
    found: list[int] = []
    failures: list[BaseException] = []

    def ask() -> None:
        try:
            found.append(system.search(running, WORD))
        except Exception as error:  # raised again below, on the bench's thread
            failures.append(error)

    asking = threading.Thread(target=ask, daemon=True)
    began = time.perf_counter()
    asking.start()
    asking.join(budget)
    took = time.perf_counter() - began
    if failures:
        raise failures[0]
    if not found:
        return {"search_ms": budget * 1000, OVER + "search_ms": 1.0, "search_expected": expected}
    return {"search_ms": took * 1000, "search_found": found[0], "search_expected": expected}


FIGURES = ("ingest", "probes", "big", "search")  # in the order a round takes them


def one_round(
    system: ModuleType,
    data: Path,
    loads: dict[str, Workload],
    figures_of: tuple[str, ...] = FIGURES,
    budget: float = 1800.0,
) -> dict[str, float]:
    """The figures of `system` named by `figures_of` (all by default) on a fresh `data` folder, each
    within `budget` seconds; it is stopped on the way out. Without the ingest, the others are taken
    on a store holding only theirs."""
    running = system.start(data)
    figures: dict[str, float] = {"cold_start_s": running.cold_start}
    try:
        if "ingest" in figures_of:
            figures |= ingest(system, running, loads["ingest"], loads["busy"], budget)
        drained = OVER + "ingest_s" not in figures
        if not drained:  # its storage and the other figures would be of a store still taking spans
            print(f"  {system.NAME}: the ingest not visible in {budget:g} s; its other figures not taken")
            figures[OVER + "peak_rss_mb"] = 1.0
        if drained and "probes" in figures_of:
            figures |= probes(system, running, loads["probes"])
        if drained and "big" in figures_of:
            figures |= big_trace(system, running, loads["big"])
        if drained and "search" in figures_of:
            figures |= search(system, running, loads["ingest"].word_traces, budget)
        figures["peak_rss_mb"] = running.peak_rss / 1e6
    finally:
        running.stop()
    if drained:
        figures["storage_mb"] = running.storage() / 1e6
    print(f"  {system.NAME}: " + ", ".join(f"{key} {value:,.3g}" for key, value in figures.items()), flush=True)
    return figures


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds that took it; marked OVER when the rounds over budget
    reach the median (counted as infinite, the median is)."""
    keys = {key: None for r in rounds for key in r if not key.startswith(OVER)}  # a round may lack some
    found: dict[str, float] = {}
    for key in keys:
        taken = [r for r in rounds if key in r]
        found[key] = statistics.median(r[key] for r in taken)
        if statistics.median(math.inf if OVER + key in r else r[key] for r in taken) == math.inf:
            found[OVER + key] = 1.0
    return found
