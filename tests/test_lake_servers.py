"""Three real `devtool serve` child processes on one lake (a real PostgreSQL cluster, a shared data
folder): A and B publish 100 runs between them while A is killed (SIGKILL) mid-publish and started
again; every run they acknowledged ends in the lake exactly once; C opens a run A published and a
snapshot B made; `devtool publish` of a run the lake holds adds nothing."""

from __future__ import annotations

import gzip
import time
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb
import orjson

from devtool.store.extensions import load_extension
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes
from testkit.served import Served, start

from .conftest import CORPUS, DevtoolRunner

RUNS = 100
SPANS = 60  # 122 events a run


def http(url: str, form: dict[str, str] | None = None, body: bytes | None = None) -> tuple[int, bytes, Any]:
    """One request, redirects not followed: status, body, headers."""
    data = body if form is None else urllib.parse.urlencode(form).encode()
    headers = {"Content-Type": "application/json"} if body is not None else {}

    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any) -> None:
            return None

    try:
        request = urllib.request.Request(url, data=data, headers=headers)
        with urllib.request.build_opener(Keep).open(request, timeout=60) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers


def lake_rows(catalog: str, sql: str) -> list[tuple[Any, ...]]:
    """Rows of `sql` on the lake, read by this test on a connection of its own (read only)."""
    with closing(duckdb.connect()) as conn:
        load_extension(conn, "ducklake")
        load_extension(conn, "postgres")
        conn.execute(f"ATTACH 'ducklake:{catalog}' AS lake (READ_ONLY)")
        return conn.execute(sql).fetchall()


def wait_for(what: str, check: Any, timeout: float = 240) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def serve(db: Path, catalog: str, data: Path, name: str, *files: str) -> Served:
    args = ("--lake", catalog, "--lake-data", str(data), "--lake-name", name, *files)
    return start(db, *args, log=db.parent / f"{name}.log")


def post_runs(server: Served, names: list[str]) -> list[str]:
    """Post each run as one batch; the runs the server acknowledged (every event accepted)."""
    acknowledged = []
    for name in names:
        events = run_events(name, SPANS)
        status, body, _ = http(f"{server.url}api/v1/traces", body=orjson.dumps(events))
        assert status == 200, body
        assert orjson.loads(body)["accepted"] == len(events)
        acknowledged.append(trace_id_of(name))
    return acknowledged


def test_three_servers_share_one_lake(lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner) -> None:
    catalog, data = lakes.new()
    servers: dict[str, Served] = {}
    try:
        servers["a"] = serve(tmp_path / "a.duckdb", catalog, data, "A")
        servers["b"] = serve(tmp_path / "b.duckdb", catalog, data, "B", str(CORPUS / "nested.trace.jsonl"))
        servers["c"] = serve(tmp_path / "c.duckdb", catalog, data, "C")
        names = [f"run {n}" for n in range(RUNS)]
        acknowledged = post_runs(servers["a"], names[: RUNS // 2]) + post_runs(servers["b"], names[RUNS // 2 :])

        # A is killed while it publishes (some of its runs in the lake, not all), then started again.
        by_a = "SELECT count(*) FROM lake.runs WHERE published_by = 'A'"
        wait_for("A to be publishing", lambda: 0 < lake_rows(catalog, by_a)[0][0] < RUNS // 2 - 5, timeout=120)
        servers["a"].kill()
        killed_at = lake_rows(catalog, by_a)[0][0]
        assert killed_at < RUNS // 2
        servers["a"] = serve(tmp_path / "a.duckdb", catalog, data, "A")

        wanted = set(acknowledged)
        listed = "SELECT trace_id FROM lake.runs"
        wait_for("every run in the lake", lambda: wanted <= {row[0] for row in lake_rows(catalog, listed)})
        per_run = lake_rows(
            catalog,
            """
            SELECT r.trace_id, r.n, e.events, e.keys FROM (SELECT trace_id, count(*) AS n FROM lake.runs GROUP BY 1) r
            JOIN (SELECT trace_id, count(*) AS events, count(DISTINCT event_key) AS keys FROM lake.events GROUP BY 1) e
            USING (trace_id)
            """,
        )
        counted = {trace: (n, events, keys) for trace, n, events, keys in per_run}
        for trace in acknowledged:
            assert counted[trace] == (1, 2 * SPANS + 2, 2 * SPANS + 2), trace

        # A run A published opens on C, which never held it (listed first as a lake run).
        from_a = acknowledged[0]
        status, page, _ = http(f"{servers['c'].url}runs/{from_a}")
        assert status == 200, page[:500]
        assert b"step 59" in page or b"run 0" in page
        status, listing, _ = http(f"{servers['c'].url}?q=run+7")
        assert status == 200
        assert trace_id_of("run 7")[:8].encode() in listing

        # A snapshot B made opens on C from its link.
        nested = orjson.loads((CORPUS / "nested.trace.jsonl").read_text().splitlines()[0])["trace"]["traceId"]
        turn = next(
            line["trace"]["spanId"]
            for line in map(orjson.loads, (CORPUS / "nested.trace.jsonl").read_text().splitlines())
            if line["type"] == "turn:start"
        )
        status, _, headers = http(f"{servers['b'].url}runs/{nested}/rewind", {"span_id": turn, "anchor": "after"})
        assert status == 303
        snapshot = headers["location"]
        snapshot_id = snapshot.rsplit("/", 1)[1]
        wait_for(
            "B to publish its snapshot",
            lambda: lake_rows(catalog, f"SELECT 1 FROM lake.snapshots WHERE snapshot_id = '{snapshot_id}'"),
        )
        status, on_b, _ = http(f"{servers['b'].url}snapshots/{snapshot_id}.json")
        status_c, on_c, _ = http(f"{servers['c'].url}snapshots/{snapshot_id}.json")
        assert (status, status_c) == (200, 200)
        assert orjson.loads(on_c) == orjson.loads(on_b)

        # `devtool publish` of a run already in the lake (C's export of A's run, loaded elsewhere) adds nothing.
        status, exported, _ = http(f"{servers['c'].url}runs/{from_a}/export.jsonl.gz")
        assert status == 200
        (tmp_path / "again.jsonl").write_bytes(gzip.decompress(exported))
        elsewhere = str(tmp_path / "d.duckdb")
        assert devtool("load", str(tmp_path / "again.jsonl"), "--db", elsewhere).returncode == 0
        before = lake_rows(catalog, "SELECT count(*) FROM lake.events")
        done = devtool("publish", from_a, "--db", elsewhere, "--lake", catalog, "--lake-data", str(data))
        assert done.returncode == 0, done.stderr
        assert f"{from_a}: already in the lake, nothing added" in done.stdout
        assert lake_rows(catalog, "SELECT count(*) FROM lake.events") == before
        assert lake_rows(catalog, f"SELECT count(*) FROM lake.runs WHERE trace_id = '{from_a}'") == [(1,)]
    finally:
        for server in servers.values():
            server.stop()
    for name in ("A", "B", "C"):
        assert "Traceback" not in (tmp_path / f"{name}.log").read_text(), name
