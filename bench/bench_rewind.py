"""Benchmark of Rewind on a big run, end to end, through a real `devtool serve` process.

    python bench/bench_rewind.py [--events 1000000] [--seed 7] [--spans 3] [--workdir DIR]

1. Generates a realistic trace (`bench/gen_trace.py`) of `--events` events, or reuses it from
   `--workdir`, and loads it into a store there (once).
2. Builds the run's rewind index (`devtool.actions.frame_indexer.build_index`: what `devtool serve`
   does in the background for a run of 50,000 events or more once it has stopped growing), and
   reports how long that took; an index already fresh in the store is reused, with its recorded time.
3. Starts `devtool serve` on that store and, for `--spans` worker agent spans nearest the middle of
   the run (each a cut no rewind has made before), and both anchors, times what a user waits for:
   `POST /runs/<id>/rewind` (restore at the cut, store the snapshot, 303) and then
   `GET /snapshots/<id>` (its page), wall time on the client, with the server's own time from its
   `Server-Timing` header. The target: the two together <= 1 s for a span in the middle of 1M events.
4. Then, in this process, one more cut split into its parts (CPU time): reading the open frames and
   their events and the short walk (`restore_from_index`), hashing and storing the snapshot's new nodes, and
   the page's reads; and, for comparison, the same cut restored without the index (every event up
   to the cut read, parsed and walked, as a run that is not indexed yet is rewound).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench_store import machine
from bench.gen_trace import generate
from bench.server import child_env


def prepared(workdir: Path, events: int, seed: int) -> tuple[Path, str]:
    """The store with the generated trace loaded (made once per size and seed), and the trace id."""
    trace = workdir / f"trace-{events}-{seed}.jsonl"
    info_path = trace.with_suffix(".json")
    if not (trace.exists() and info_path.exists()):
        print(f"generating {events:,} events ...", file=sys.stderr)
        generated = generate(trace, events=events, seed=seed)
        info_path.write_text(json.dumps({"trace_id": generated.trace_id}))
    trace_id = json.loads(info_path.read_text())["trace_id"]
    db = workdir / f"rewind-{events}-{seed}.duckdb"
    if not db.exists():
        print("loading it ...", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "devtool", "load", "--db", str(db), str(trace)], check=True, env=child_env()
        )
    return db, trace_id


def middle_spans(db: Path, trace_id: str, count: int) -> list[str]:
    """Worker agent spans nearest the middle of the run (by start), none of them rewound before."""
    from devtool.store import Store

    store = Store(db)
    try:
        rows = store.query(
            """
            WITH workers AS (
                SELECT span_id, start_ts, row_number() OVER (ORDER BY start_ts) AS n, count(*) OVER () AS total
                FROM spans WHERE trace_id = ? AND kind = 'agent' AND agent_id = 'worker' AND end_ts IS NOT NULL
            )
            SELECT span_id FROM workers
            WHERE span_id NOT IN (SELECT span_id FROM rewind.snapshots WHERE span_id IS NOT NULL)
            ORDER BY abs(n - total / 2), n LIMIT ?
            """,
            [trace_id, count],
        )
    finally:
        store.close()
    return [row[0] for row in rows]


class Server:
    def __init__(self, db: Path, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devtool", "serve", "--port", "0", "--db", str(db), *options],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=child_env(),
        )
        assert self.process.stdout is not None
        first = self.process.stdout.readline()
        if not first.startswith("DevTool at "):
            raise SystemExit(f"devtool serve did not start: {first}")
        url = urlsplit(first.split(" at ", 1)[1].strip())
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 80

    def request(self, method: str, path: str, body: dict[str, str] | None = None) -> tuple[int, dict[str, str], float]:
        connection = http.client.HTTPConnection(self.host, self.port, timeout=600)
        headers = {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {}
        began = time.perf_counter()
        connection.request(method, path, body=urlencode(body) if body is not None else None, headers=headers)
        response = connection.getresponse()
        response.read()
        took = time.perf_counter() - began
        connection.close()
        if response.status >= 400:
            raise SystemExit(f"{method} {path} answered {response.status}")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, took

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def server_ms(headers: dict[str, str]) -> float:
    return float(headers.get("server-timing", "app;dur=0").split("dur=", 1)[1].split(",", 1)[0])


def end_to_end(db: Path, trace_id: str, spans: list[str]) -> list[dict[str, Any]]:
    server = Server(db)
    rows = []
    try:
        for span in spans:
            for anchor in ("before", "after"):
                status, headers, post = server.request(
                    "POST", f"/runs/{trace_id}/rewind", {"span_id": span, "anchor": anchor}
                )
                assert status == 303, status
                page_status, page_headers, page = server.request("GET", headers["location"])
                assert page_status == 200
                rows.append(
                    {
                        "span": span,
                        "anchor": anchor,
                        "post": post,
                        "page": page,
                        "total": post + page,
                        "server": (server_ms(headers) + server_ms(page_headers)) / 1000,
                    }
                )
                print(f"  {anchor:6} {span}: rewind {post:.3f} s + page {page:.3f} s", file=sys.stderr)
        # The same cut again (a double click, a teammate): restored again, stored once.
        _, headers, again = server.request("POST", f"/runs/{trace_id}/rewind", {"span_id": spans[0], "anchor": "after"})
        rows.append(
            {
                "span": spans[0],
                "anchor": "after (again)",
                "post": again,
                "page": 0.0,
                "total": again,
                "server": server_ms(headers) / 1000,
            }
        )
    finally:
        server.close()
    return rows


def parts(db: Path, trace_id: str, span: str) -> dict[str, float]:
    """The rewind of `span` (after) split into its parts, CPU seconds of this process."""
    import gc

    from devtool.actions.run_rewind import restore_from_index
    from devtool.core.debugger import restore_snapshot
    from devtool.core.restore import IGNORED_TYPES, UNREAD_FIELDS
    from devtool.store import Store, get_snapshot
    from devtool.store.queries import Cut, run_events
    from devtool.store.snapshots import frame_page, save_tree, snapshot_counts

    store = Store(db)
    times: dict[str, float] = {}

    def timed(name: str, call: Any) -> Any:
        began = time.process_time()
        result = call()
        times[name] = time.process_time() - began
        return result

    try:
        tree = timed(
            "open frames and their events read, short walk", lambda: restore_from_index(store, trace_id, span, "after")
        )
        assert tree is not None, "the cut was not made from the index"
        times["nodes made (open frames)"] = len(tree.nodes)
        snapshot_id = timed("hash and store the new nodes", lambda: save_tree(store, tree.top, tree.nodes))
        stored = get_snapshot(store, snapshot_id)
        timed(
            "the page's reads (counts, 100 frames)",
            lambda: (snapshot_counts(store, stored), frame_page(store, stored, offset=0, limit=100)),
        )
        gc.disable()
        cut = Cut(span, "after")
        events = timed(
            "without the index: the cut's events read and parsed",
            lambda: run_events(store, trace_id, cut=cut, skip_types=IGNORED_TYPES, drop_fields=UNREAD_FIELDS),
        )
        times["events in the cut"] = len(events)
        walked = timed("without the index: restore_snapshot", lambda: restore_snapshot(events, span_id=span))
        assert walked == stored.snapshot, "the index and restore_snapshot disagree"
    finally:
        gc.enable()
        store.close()
    return times


def indexed(db: Path, trace_id: str) -> tuple[float, int, bool]:
    """The run's rewind index, built unless fresh: (seconds it took, frames, built now)."""
    from devtool.actions.frame_indexer import build_index
    from devtool.store import Store
    from devtool.store.frame_index_tables import index_state

    store = Store(db)
    try:
        state = index_state(store, trace_id)
        built = state is None or not state.fresh
        if built:
            print("building the rewind index ...", file=sys.stderr)
            state = build_index(store, trace_id)
        if state is None or not state.indexed:
            raise SystemExit(f"the run was not indexed: {state}")
        return state.seconds, state.frames, built
    finally:
        store.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--spans", type=int, default=3)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the trace and the store here")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench-rewind-"))
    workdir.mkdir(parents=True, exist_ok=True)
    db, trace_id = prepared(workdir, args.events, args.seed)
    index_seconds, index_frames, built = indexed(db, trace_id)
    spans = middle_spans(db, trace_id, args.spans + 1)
    print(f"rewinding {len(spans) - 1} spans near the middle of {args.events:,} events ...", file=sys.stderr)
    rows = end_to_end(db, trace_id, spans[:-1])
    split = parts(db, trace_id, spans[-1])
    load = os.getloadavg()

    print(f"\nmachine: {machine()}; load average {load[0]:.1f} at the end")
    print(f"events: {args.events:,} (seed {args.seed}); spans: worker agent spans nearest the middle")
    when = "built now" if built else "built before, recorded time"
    print(f"rewind index: {index_frames:,} frames in {index_seconds:.1f} s ({when})\n")
    print("| cut | rewind (POST → 303) | snapshot page (GET) | end to end | server time |")
    print("|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['anchor']} {row['span']} | {row['post']:.3f} s | {row['page']:.3f} s | "
            f"**{row['total']:.3f} s** | {row['server']:.3f} s |"
        )
    fresh = [row["total"] for row in rows if "again" not in row["anchor"]]
    median, worst = statistics.median(fresh), max(fresh)
    print(f"\nend to end, median of {len(fresh)}: {median:.3f} s, worst {worst:.3f} s (target ≤ 1 s)")
    print("\n| part (one more span, after, in-process) | CPU time |")
    print("|---|---|")
    for name, value in split.items():
        shown = f"{value:,.0f}" if name in ("events in the cut", "nodes made (open frames)") else f"{value:.3f} s"
        print(f"| {name} | {shown} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
