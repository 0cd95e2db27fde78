"""The compare of two runs' stored call fingerprints alone, at the call count of big runs.

    python bench/bench_compare_prints.py [--calls 2790298] [--repeat 7]

What a compare of two printed runs reads is their `call_prints` and `print_buckets` rows only, so
its time depends on how many calls the runs have, not on their events. This writes two runs of
`--calls` calls each straight into a new store's fingerprint tables (2,790,298: the calls of
`bench/gen_trace.py`'s ten-million-event run; run B the same calls with one output changed) and
times `actions.compare`'s query for the pair (`_compared`, not the kept answer): the first on a
newly opened store, then `--repeat` more. A stand-in for `bench_compare.py --events 10000000`, whose
two loads take most of an hour on a busy machine; it leaves out the load and the HTTP request.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devtool.actions import compare
from devtool.store import Store, call_prints

A, B = "a" * 32, "b" * 32

_FILL = f"""
INSERT INTO call_prints
SELECT trace, {call_prints.BUCKET_OF}, call_id, n AS pos, n AS event_id, -1, -1, hash(n, 1), h_out, hash(n, 3), 0, 1
FROM (SELECT trace, 'root/agent:orchestrator:0/agent:worker:' || n || '/prompt:worker:0' AS call_id, n,
             CASE WHEN trace = '{B}' AND n = $changed THEN hash(n, 0) ELSE hash(n, 2) END AS h_out
      FROM range($calls) r(n), (VALUES ('{A}'), ('{B}')) t(trace))
ORDER BY trace, 2
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=2_790_298)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    path = Path(tempfile.mkdtemp(prefix="devtool-bench-prints-")) / "prints.duckdb"
    store = Store(path)
    with store.transaction() as conn:
        conn.execute(_FILL, {"calls": args.calls, "changed": args.calls // 2})
        call_prints.digest(conn, "true")
        conn.execute(f"INSERT INTO printed_runs VALUES ('{A}'), ('{B}')")
        for trace in (A, B):  # a run row each, as a load leaves (compare asks for their versions)
            conn.execute(
                "INSERT INTO runs (trace_id, name, started_ts, ended_ts, status, events, spans, agents, failed, "
                "running, prompt_tokens, completion_tokens, agent_ids, first_event_id, last_event_id) "
                "VALUES (?, 'r', 0, 1, 'completed', 1, 1, 1, 0, 0, 0, 0, '', 1, 1)",
                [trace],
            )
    store.close()
    store = Store(path)  # opened anew: nothing of the tables in DuckDB's memory yet
    times = []
    for _ in range(args.repeat + 1):
        began = time.perf_counter()
        answer = compare._compared.__wrapped__(store, A, B)
        times.append((time.perf_counter() - began) * 1000)
        assert (answer.differing, answer.total) == (1, args.calls), answer
    store.close()
    print(f"# {args.calls:,} calls a run, 1 differing")
    print(f"| first | {times[0]:.0f} ms |")
    print(f"| again, p50 of {args.repeat} | {statistics.median(times[1:]):.0f} ms |")
    print(f"| again, worst | {max(times[1:]):.0f} ms |")


if __name__ == "__main__":
    main()
