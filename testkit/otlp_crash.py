"""SIGKILL during OTLP ingest with bad spans mixed in: a real `devtool serve` (reading requests in its
worker processes, or in its threads) is killed while exporters post OTLP/JSON requests, restarted on
the same database, and what it acknowledged is checked, for `tests/test_web_otlp_crash.py` (a few
rounds) and `bench/soak.py --otlp-rounds` (as many as asked).

Each request is a run of its own (its trace id names it) of `size` spans, some of which the store
refuses (a time outside 2000-2100, an attribute nested past the gate's depth): a 200 must say exactly
those were refused (`rejectedSpans`) and the store must hold every other span of it, both events;
a request whose answer was lost to the kill may be stored whole or not at all, never in part; no
answer may be a 5xx. The server's resident memory (its own and its workers') is sampled throughout.
"""

from __future__ import annotations

import json
import random
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testkit.crash import CrashReport, kill_round, restart, stored_counts

T0_NS = 1_790_000_000_000_000_000
BAD_KINDS = ("start 1 ns", "end 2^64-1 ns", "33+ nested arrays")


@dataclass
class OtlpCrashReport(CrashReport):
    """`CrashReport`'s, and what OTLP adds: the spans refused as bad, the answers that were 5xx or
    refused the wrong spans, and the server's resident memory (MB) at each sample."""

    acknowledged_spans: int = 0
    refused_spans: int = 0
    server_errors: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)


def otlp_request(trace_id: str, size: int, bad: int, rng: random.Random) -> tuple[bytes, int]:
    """An OTLP/JSON request of `size` spans of trace `trace_id`, `bad` of them (at random places) ones
    the store refuses; and how many spans it stores."""
    spans: list[dict[str, Any]] = []
    bad_at = set(rng.sample(range(1, size), min(bad, size - 1)))
    for n in range(size):
        start = T0_NS + n * 1_000_000
        span: dict[str, Any] = {
            "traceId": trace_id,
            "spanId": f"{n + 1:016x}",
            "name": f"step {n}",
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(start + 500_000),
            "attributes": [{"key": "step", "value": {"intValue": str(n)}}],
        }
        if n:
            span["parentSpanId"] = f"{1:016x}"
        if n in bad_at:
            how = BAD_KINDS[n % len(BAD_KINDS)]
            if how == BAD_KINDS[0]:
                span["startTimeUnixNano"] = "1"
            elif how == BAD_KINDS[1]:
                span["endTimeUnixNano"] = str((1 << 64) - 1)
            else:
                nested: dict[str, Any] = {"stringValue": "deep"}
                for _ in range(40):
                    nested = {"arrayValue": {"values": [nested]}}
                span["attributes"].append({"key": "deep", "value": nested})
        spans.append(span)
    document = {"resourceSpans": [{"scopeSpans": [{"scope": {"name": "soak"}, "spans": spans}]}]}
    return json.dumps(document).encode(), size - len(bad_at)


def _post(url: str, body: bytes) -> tuple[int | None, dict[str, Any]]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return int(exc.code), {"body": exc.read()[-300:].decode(errors="replace")}
    except OSError:
        return None, {}  # killed under us: the answer is lost


def rss_mb(pid: int) -> float:
    """The resident memory of process `pid` and its children (the OTLP workers), in MB."""
    total = 0.0
    pids = [pid]
    try:
        pids += [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return 0.0
    for each in pids:
        try:
            for line in Path(f"/proc/{each}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


def kill_during_otlp_ingest(
    db: Path,
    log: Path,
    *,
    rounds: int,
    size: int = 100,
    bad: int = 5,
    writers: int = 2,
    workers: int = 1,
    seed: int = 0,
) -> OtlpCrashReport:
    """`rounds` times: start the server on `db` (`--otlp-workers workers`), post requests of `size`
    spans (`bad` of them refused) from `writers` threads, SIGKILL it at a random moment; then start it
    once more and check every request ever sent against the store."""
    rng = random.Random(seed)
    report = OtlpCrashReport()
    sent: dict[str, tuple[int | None, int]] = {}
    lock = threading.Lock()
    args = ("--otlp-workers", str(workers))
    for round_ in range(rounds):
        served = restart(db, log, report, *args)
        stop = threading.Event()

        def write(writer: int, url: str, round_: int = round_, stop: threading.Event = stop) -> None:
            mine = random.Random(seed * 1_000 + round_ * 10 + writer)
            n = 0
            while not stop.is_set():
                trace_id = f"{round_ + 1:08x}{writer:08x}{n + 1:016x}"
                n += 1
                body, good = otlp_request(trace_id, size, bad, mine)
                status, answer = _post(url, body)
                with lock:
                    sent[trace_id] = (status, good)
                    _judge(report, trace_id, status, answer, size - good)
                if status is None:
                    return

        def sample(pid: int, stop: threading.Event = stop) -> None:
            while not stop.wait(0.2):
                memory = rss_mb(pid)
                if memory:
                    report.rss_mb.append(memory)

        url = f"{served.url}v1/traces"
        threads = [threading.Thread(target=write, args=(w, url)) for w in range(writers)]
        threads.append(threading.Thread(target=sample, args=(served.process.pid,)))
        kill_round(served, threads, stop, rng.uniform(1.0, 3.0), report)
    held = stored_counts(db, log, report, *args)
    report.batches_sent = len(sent)
    for trace_id, (status, good) in sent.items():
        count = held.get(trace_id, 0)
        if status == 200:
            report.acknowledged_batches += 1
            report.acknowledged_spans += good
            report.acknowledged_events += 2 * good
            report.refused_spans += size - good
            if count != 2 * good:
                report.lost.append(f"{trace_id}: {count} of {2 * good} events")
        elif count not in (0, 2 * good):
            report.partial.append(f"{trace_id}: {count} of {2 * good} events (answer {status})")
    return report


def _judge(report: OtlpCrashReport, trace_id: str, status: int | None, answer: dict[str, Any], bad: int) -> None:
    """A 5xx, or a 200 that does not refuse exactly the bad spans, is a failure of its own."""
    if status is not None and status >= 500:
        report.server_errors.append(f"{trace_id}: {status} {answer.get('body', '')}")
    elif status == 200:
        refused = answer.get("partialSuccess", {}).get("rejectedSpans", 0)
        if refused != bad:
            report.wrong_answers.append(f"{trace_id}: {refused} spans refused, {bad} bad")
    elif status is not None:
        report.wrong_answers.append(f"{trace_id}: answered {status} {answer.get('body', '')}")
