"""One writer and many readers at once: no "database is locked", and every read sees whole loads."""

from __future__ import annotations

import threading
from pathlib import Path

from devtool.store import Store, append_events, load_file
from devtool.store.queries import frame_tree, list_runs, timeline_window
from tests.conftest import Trace


def big_run(workers: int) -> Trace:
    t = Trace()
    root = t.start("agent", agentId="orchestrator")
    for _ in range(workers):
        worker = t.start("agent", root, agentId="worker")
        t.end(t.start("turn", worker, messages=[{"role": "user", "content": "x" * 200}]))
        t.end(worker)
    t.end(root)
    return t


def test_loads_and_queries_at_the_same_time(store: Store, tmp_path: Path) -> None:
    files = [big_run(500).write(tmp_path / f"run{i}.jsonl") for i in range(6)]
    live = big_run(300)
    done = threading.Event()
    errors: list[BaseException] = []
    reads = [0, 0, 0]

    def write() -> None:
        try:
            for index, path in enumerate(files):
                load_file(store, path)
                batch = live.events[index * 200 : (index + 1) * 200]
                if batch:
                    append_events(store, batch)
            append_events(store, live.events[1200:])
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    def read(slot: int) -> None:
        try:
            while not done.is_set() or reads[slot] < 5:
                # One statement, one snapshot: a loaded run's summary is committed with its events; a
                # live run's follows its events (a live append derives after it commits), never leads.
                mismatched = store.query(
                    "SELECT r.trace_id, r.events, (SELECT count(*) FROM events e WHERE e.trace_id = r.trace_id) "
                    "FROM runs r WHERE r.events <> (SELECT count(*) FROM events e WHERE e.trace_id = r.trace_id)"
                )
                assert all(trace_id == live.trace_id and summary < stored for trace_id, summary, stored in mismatched)
                for run in list_runs(store):
                    window = timeline_window(store, run.id, width_px=300)
                    assert len(window.bars) <= window.rows * 300
                    assert frame_tree(store, run.id, depth=2, page_size=20).root_count == 1
                reads[slot] += 1
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert all(count >= 5 for count in reads)
    runs = list_runs(store)
    assert len(runs) == 7
    assert sum(run.events for run in runs) == 6 * len(big_run(500).events) + len(live.events)
