"""Do small commits wait out the checkpoints of a big writer's table, in one DuckDB file or two?

    python bench/checkpoint_wait.py one|two [--nodes 250000] [--workdir DIR]

DuckDB alone, no devtool code: the shape of the store during a rewind index's build. A writer inserts
nodes as the index does (500 rows a commit of ~2.6 KB of JSON under a VARCHAR primary key) and
checkpoints once their file's WAL passes 4 MiB (`frame_index_tables.CHECKPOINT_WAL`); beside it, on
a cursor of its own, an appender commits 50 rows to an unkeyed table and updates a keyed row every
100 ms, as a live append does. `one`: the nodes' table is in the appender's file; `two`: in a second
file attached to the same connection, as the store's rewind file is. Prints one JSON line: the
checkpoints' times and the appends' latency.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import threading
import time
from pathlib import Path

import duckdb

WAL_LIMIT = 4 * 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", choices=["one", "two"])
    parser.add_argument("--nodes", type=int, default=250_000)
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="checkpoint-wait-"))
    main_file, nodes_file = workdir / "main.duckdb", workdir / "nodes.duckdb"
    for stale in (main_file, nodes_file):
        for path in (stale, stale.with_name(f"{stale.name}.wal")):
            path.unlink(missing_ok=True)
    conn = duckdb.connect(str(main_file), config={"memory_limit": "1GiB", "threads": "2"})
    conn.execute("CREATE TABLE events (id BIGINT, body VARCHAR)")
    conn.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, n BIGINT)")
    conn.execute("INSERT INTO runs VALUES (1, 0)")
    if args.files == "two":
        conn.execute(f"ATTACH '{nodes_file}' AS nodes_db")
        table, checkpoint, wal = "nodes_db.nodes", "CHECKPOINT nodes_db", nodes_file.with_name("nodes.duckdb.wal")
    else:
        table, checkpoint, wal = "nodes", "CHECKPOINT", main_file.with_name("main.duckdb.wal")
    conn.execute(f"CREATE TABLE {table} (node_id VARCHAR PRIMARY KEY, body JSON USING COMPRESSION uncompressed)")

    stop, appends = threading.Event(), []

    def append() -> None:
        cursor, first = conn.cursor(), 0
        while not stop.is_set():
            began = time.perf_counter()
            cursor.execute("BEGIN")
            cursor.executemany("INSERT INTO events VALUES (?, ?)", [(first + n, "x" * 700) for n in range(50)])
            cursor.execute("UPDATE runs SET n = n + 50 WHERE id = 1")
            cursor.execute("COMMIT")
            appends.append(time.perf_counter() - began)
            first += 50
            time.sleep(0.1)

    appender = threading.Thread(target=append, daemon=True)
    appender.start()
    writer, body, written, checkpoints, refused = conn.cursor(), '{"x": "' + "a" * 2600 + '"}', 0, [], 0
    began = time.perf_counter()
    while written < args.nodes:
        rows = [(hashlib.sha256(str(written + n).encode()).hexdigest(), body) for n in range(500)]
        writer.execute("BEGIN")
        writer.executemany(f"INSERT INTO {table} VALUES (?, ?)", rows)
        writer.execute("COMMIT")
        written += len(rows)
        if wal.exists() and wal.stat().st_size >= WAL_LIMIT:
            started = time.perf_counter()
            try:
                writer.execute(checkpoint)
                checkpoints.append(time.perf_counter() - started)
            except duckdb.TransactionException:  # an append's writes in flight, as `Store.checkpoint` skips
                refused += 1
    stop.set()
    appender.join()
    appends.sort()

    def ms(seconds: float) -> float:
        return round(seconds * 1000, 1)

    print(
        json.dumps(
            {
                "files": args.files,
                "nodes": written,
                "seconds": round(time.perf_counter() - began, 1),
                "checkpoints": len(checkpoints),
                "refused": refused,
                "checkpoint max ms": ms(max(checkpoints)),
                "appends": len(appends),
                **{f"append p{p} ms": ms(appends[int(p / 100 * (len(appends) - 1))]) for p in (50, 95, 99)},
                "append max ms": ms(appends[-1]),
            }
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
