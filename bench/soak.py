"""Soak: the long versions of tests/test_web_fuzz.py and tests/test_web_ingest_crash.py, against a real
`devtool serve` (issue 20).

    python bench/soak.py [--cases 300] [--kill-rounds 10] [--otlp-rounds 10] [--workdir DIR]

1. Fuzz: `--cases` hostile batches (testkit.fuzz: 25-35 events each, good ones among events with
   times in other units, ids and types of the wrong kind, nesting past the limit, markup...) posted to
   `/api/v1/traces` or uploaded through the form, alternately; after each, every page of the runs the
   batch touched (testkit.fuzz.pages_after, with a fuzzed window and search) is asked over HTTP. The
   property: no 5xx, no page slower than a second. Reports what was sent, refused and asked, the
   slowest page, the server's resident memory at the end, and every failure.
2. SIGKILL: `--kill-rounds` rounds of testkit.crash.kill_during_ingest on a database of its own (two
   writers posting 200-event batches, the server killed at a random moment, restarted): batches and
   events acknowledged, lost, found in part, restart times.
3. OTLP SIGKILL: `--otlp-rounds` rounds of testkit.otlp_crash.kill_during_otlp_ingest (two exporters
   posting OTLP/JSON requests of 100 spans, 5 of them bad: a time outside 2000-2100 or an attribute
   nested 40 arrays deep; the server reading them in `--otlp-workers` processes, killed at a random
   moment, restarted): requests and spans acknowledged, bad spans refused, lost, found in part, 5xx
   answers, answers refusing the wrong spans, and the server's resident memory (with its workers').
4. Held logs: `--held-logs` `/v1/logs` requests of 30 records of 1 MiB for spans never sent: records
   held and refused (in the answers' partial successes), and the server's resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx2 as httpx
from hypothesis import HealthCheck, given, settings

from bench.bench_live import machine
from testkit.crash import kill_during_ingest
from testkit.fuzz import BATCHES, TEXT, WINDOW, Probe, pages_after
from testkit.otlp_crash import kill_during_otlp_ingest
from testkit.served import serving


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def fuzz(workdir: Path, cases: int) -> None:
    sent: Counter[str] = Counter()
    probe = Probe()
    with (
        serving(workdir / "fuzz.duckdb", log=workdir / "fuzz.log") as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):

        @settings(max_examples=cases, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(batch=BATCHES, window=WINDOW, query=TEXT)
        def case(batch: list[Any], window: Any, query: str) -> None:
            if sent["batches"] % 2 == 0:
                answer = client.post("api/v1/traces", content=json.dumps(batch).encode())
                refused = answer.json().get("rejectedTotal", 0) if answer.status_code == 422 else 0
            else:
                lines = "".join(json.dumps(value) + "\n" for value in batch).encode()
                answer = client.post(
                    "upload", files={"file": (f"fuzz-{sent['batches']}.jsonl", lines)}, data={"bad_lines": "skip"}
                )
                refused = answer.text.count("skipped:")
            sent["batches"] += 1
            sent["events"] += len(batch)
            sent["refused"] += refused
            sent[f"answer {answer.status_code}"] += 1
            if answer.status_code >= 500:
                probe.failures.append(f"{answer.status_code} on a batch: {answer.text[-300:]}")
            for path in pages_after(batch, window, query):
                began = time.perf_counter()
                try:
                    status = client.get(path.lstrip("/"), timeout=10).status_code
                except httpx.TimeoutException:
                    status = 0
                probe.check(path, status or 599, time.perf_counter() - began)

        began = time.monotonic()
        case()
        took = time.monotonic() - began
        memory = rss_mb(server.process.pid)
    print(
        f"Fuzz: {sent['batches']:,} batches, {sent['events']:,} events ({sent['refused']:,} refused as bad), "
        f"answers {dict(sorted((k, v) for k, v in sent.items() if k.startswith('answer')))}; "
        f"{probe.pages:,} pages asked, slowest {probe.slowest * 1000:.0f} ms; "
        f"{len(probe.failures)} failures; server RSS at the end {memory:.0f} MB; {took:.0f} s"
    )
    for failure in probe.failures[:20]:
        print(f"  FAILURE {failure}")


def crash(workdir: Path, rounds: int) -> None:
    began = time.monotonic()
    report = kill_during_ingest(workdir / "crash.duckdb", workdir / "crash.log", rounds=rounds)
    restarts = sorted(report.restarts)
    print(
        f"SIGKILL: {report.rounds} rounds in {time.monotonic() - began:.0f} s, {report.batches_sent:,} batches sent, "
        f"{report.acknowledged_batches:,} acknowledged ({report.acknowledged_events:,} events): "
        f"{len(report.lost)} lost, {len(report.partial)} found in part, {len(report.pages_down)} with `/` down; "
        f"restart to first answer {restarts[0]:.2f}-{restarts[-1]:.2f} s"
    )
    for problem in [*report.lost, *report.partial, *report.pages_down][:20]:
        print(f"  FAILURE {problem}")


def otlp_crash(workdir: Path, rounds: int, workers: int) -> None:
    began = time.monotonic()
    report = kill_during_otlp_ingest(workdir / "otlp.duckdb", workdir / "otlp.log", rounds=rounds, workers=workers)
    restarts = sorted(report.restarts)
    memory = sorted(report.rss_mb) or [0.0]
    print(
        f"OTLP SIGKILL ({workers} workers): {report.rounds} rounds in {time.monotonic() - began:.0f} s, "
        f"{report.batches_sent:,} requests sent, {report.acknowledged_batches:,} acknowledged "
        f"({report.acknowledged_spans:,} spans stored, {report.refused_spans:,} bad spans refused): "
        f"{len(report.lost)} lost, {len(report.partial)} found in part, {len(report.server_errors)} 5xx, "
        f"{len(report.wrong_answers)} wrong answers, {len(report.pages_down)} with `/` down; "
        f"server RSS {memory[0]:.0f}-{memory[-1]:.0f} MB over {len(report.rss_mb)} samples; "
        f"restart to first answer {restarts[0]:.2f}-{restarts[-1]:.2f} s"
    )
    for problem in [*report.lost, *report.partial, *report.server_errors, *report.wrong_answers][:20]:
        print(f"  FAILURE {problem}")


def held_logs(workdir: Path, requests: int) -> None:
    """`/v1/logs` requests of 30 records of 1 MiB each for spans never sent: what the server holds is
    capped (count and bytes), the rest refused in the answers; its memory stays bounded."""
    refused = taken = 0
    statuses: Counter[int] = Counter()
    with (
        serving(workdir / "logs.duckdb", log=workdir / "logs.log") as server,
        httpx.Client(base_url=server.url, timeout=120) as client,
    ):
        before = rss_mb(server.process.pid)
        peak = before
        big = "x" * (1 << 20)
        for n in range(requests):
            records = [
                {
                    "traceId": f"{n + 1:032x}",
                    "spanId": f"{i + 1:016x}",
                    "timeUnixNano": "1790000000000000000",
                    "eventName": "app.log",
                    "body": {"stringValue": big},
                }
                for i in range(30)
            ]
            body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}).encode()
            answer = client.post("v1/logs", content=body, headers={"content-type": "application/json"})
            statuses[answer.status_code] += 1
            rejected = answer.json().get("partialSuccess", {}).get("rejectedLogRecords", 0)
            refused += rejected
            taken += 30 - rejected
            peak = max(peak, rss_mb(server.process.pid))
        after = rss_mb(server.process.pid)
    print(
        f"Held logs: {requests} requests of 30 x 1 MiB records, answers {dict(statuses)}: {taken:,} records held, "
        f"{refused:,} refused in the answers; server RSS {before:.0f} MB before, {peak:.0f} MB at most, "
        f"{after:.0f} MB after"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=300, help="fuzzed batches (default 300)")
    parser.add_argument("--kill-rounds", type=int, default=10, help="SIGKILL rounds (default 10)")
    parser.add_argument("--otlp-rounds", type=int, default=10, help="OTLP SIGKILL rounds (default 10)")
    parser.add_argument("--otlp-workers", type=int, default=1, help="the server's OTLP reader processes (default 1)")
    parser.add_argument("--held-logs", type=int, default=60, help="/v1/logs requests of 30 MiB (default 60)")
    parser.add_argument("--workdir", type=Path, help="where the databases go (default: a temporary folder)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"Machine: {machine()}; {date.today().isoformat()}; load average {os.getloadavg()[0]:.1f}")
    if args.cases:
        fuzz(workdir, args.cases)
    if args.kill_rounds:
        crash(workdir, args.kill_rounds)
    if args.otlp_rounds:
        otlp_crash(workdir, args.otlp_rounds, args.otlp_workers)
    if args.held_logs:
        held_logs(workdir, args.held_logs)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
