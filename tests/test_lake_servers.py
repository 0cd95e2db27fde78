"""Three real `devtool serve` child processes on one lake (a real PostgreSQL cluster, a shared data
folder): A and B publish 100 runs between them while A is killed (SIGKILL) mid-publish and started
again; every run they acknowledged ends in the lake exactly once; C opens a run A published and a
snapshot B made; `devtool publish` of a run the lake holds adds nothing."""

from __future__ import annotations

import gzip
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import orjson

from devtool.store.extensions import load_extension
from devtool.store.lake import HEAD
from devtool.store.lake.s3 import S3Access, make_secret
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


class LakeReader:
    """This test's own read-only view of the lake (a DuckDB connection of its own, kept open)."""

    def __init__(self, catalog: str, s3: S3Access | None = None) -> None:
        self.conn = duckdb.connect()
        load_extension(self.conn, "ducklake")
        load_extension(self.conn, "postgres")
        if s3 is not None:  # the lake's data on S3, given the way a DevTool is
            load_extension(self.conn, "httpfs")
            make_secret(self.conn, s3)
        self.conn.execute(f"ATTACH 'ducklake:{catalog}' AS lake (READ_ONLY)")

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        return self.conn.execute(sql).fetchall()

    def one(self, sql: str) -> Any:
        return self.rows(sql)[0][0]


def wait_for(what: str, check: Any, timeout: float = 240, pause: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(pause)
    return found


def serve(db: Path, catalog: str, data: Path, name: str, *files: str) -> Served:
    args = ("--lake", catalog, "--lake-data", str(data), "--lake-name", name, *files)
    return start(db, *args, log=db.parent / f"{name}.log")


def post_runs(server: Served, names: list[str], acknowledged: list[str]) -> None:
    """Post each run as one batch, as an agent's exporter does, adding to `acknowledged` the runs the
    server answered for (every event accepted); stop at the first that gets no answer (a killed server)."""
    for name in names:
        events = run_events(name, SPANS)
        try:
            status, body, _ = http(f"{server.url}api/v1/traces", body=orjson.dumps(events))
        except OSError:
            return
        assert status == 200, body
        assert orjson.loads(body)["accepted"] == len(events)
        acknowledged.append(trace_id_of(name))


def test_three_servers_share_one_lake(lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner) -> None:
    catalog, data = lakes.new()
    servers: dict[str, Served] = {}
    lake: LakeReader | None = None
    try:
        servers["a"] = serve(tmp_path / "a.duckdb", catalog, data, "A")
        servers["b"] = serve(tmp_path / "b.duckdb", catalog, data, "B")
        servers["c"] = serve(tmp_path / "c.duckdb", catalog, data, "C")
        lake = LakeReader(catalog)  # after A made the lake's tables
        names = [f"run {n}" for n in range(RUNS)]
        to_a, to_b = names[: RUNS // 2], names[RUNS // 2 :]
        on_a: list[str] = []
        on_b: list[str] = []
        posters = [
            threading.Thread(target=post_runs, args=(servers["a"], to_a, on_a)),
            threading.Thread(target=post_runs, args=(servers["b"], to_b, on_b)),
        ]
        for poster in posters:
            poster.start()

        # A is killed (SIGKILL) as soon as it has published, while runs still come in and wait to be
        # published, then started again; the agent sends again what got no answer.
        by_a = "SELECT count(*) FROM lake.runs WHERE published_by = 'A'"
        wait_for("A to publish", lambda: lake.one(by_a) > 0, pause=0.02)
        servers["a"].kill()
        for poster in posters:
            poster.join()
        assert lake.one(by_a) < len(on_a), "A had published every run it acknowledged: not killed mid-publish"
        servers["a"] = serve(tmp_path / "a.duckdb", catalog, data, "A")
        post_runs(servers["a"], [name for name in to_a if trace_id_of(name) not in on_a], on_a)
        acknowledged = on_a + on_b
        assert len(acknowledged) == RUNS
        # A real agent's run (the TypeScript library's), sent live to B: a snapshot is made of it below.
        nested = [orjson.loads(line) for line in (CORPUS / "rejelly" / "nested.trace.jsonl").read_text().splitlines()]
        status, body, _ = http(f"{servers['b'].url}api/v1/traces", body=orjson.dumps(nested))
        assert status == 200, body

        wanted = set(acknowledged)
        wait_for(
            "every run in the lake", lambda: wanted <= {row[0] for row in lake.rows("SELECT trace_id FROM lake.runs")}
        )
        per_run = lake.rows(
            """
            SELECT r.trace_id, r.n, e.events, e.keys FROM (SELECT trace_id, count(*) AS n FROM lake.runs GROUP BY 1) r
            JOIN (SELECT trace_id, count(*) AS events, count(DISTINCT event_key) AS keys FROM lake.events GROUP BY 1) e
            USING (trace_id)
            """
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
        turn = next(event["trace"]["spanId"] for event in nested if event["type"] == "turn:start")
        nested_trace = nested[0]["trace"]["traceId"]
        status, _, headers = http(f"{servers['b'].url}runs/{nested_trace}/rewind", {"span_id": turn, "anchor": "after"})
        assert status == 303
        snapshot = headers["location"]
        snapshot_id = snapshot.rsplit("/", 1)[1]
        wait_for(
            "B to publish its snapshot",
            lambda: lake.rows(f"SELECT 1 FROM lake.snapshots WHERE snapshot_id = '{snapshot_id}'"),
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
        before = lake.one("SELECT count(*) FROM lake.events")
        done = devtool("publish", from_a, "--db", elsewhere, "--lake", catalog, "--lake-data", str(data))
        assert done.returncode == 0, done.stderr
        assert f"{from_a}: already in the lake, nothing added" in done.stdout
        assert lake.one("SELECT count(*) FROM lake.events") == before
        assert lake.one(f"SELECT count(*) FROM lake.runs WHERE trace_id = '{from_a}'") == 1
    finally:
        for server in servers.values():
            server.stop()
        if lake is not None:
            lake.conn.close()
    for name in ("A", "B", "C"):
        assert "Traceback" not in (tmp_path / f"{name}.log").read_text(), name


def test_a_lake_runs_page_answers_before_its_events_are_all_here(
    lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner
) -> None:
    """A run bigger than the head a page waits for: the first answer (a link to its last step, which
    the head does not hold) is made from part of it, says how much, and the rest follows unasked."""
    catalog, data = lakes.new()
    spans = HEAD // 2 + 100
    events, trace = _published(devtool, tmp_path, catalog, data, "long run", spans)

    reader = serve(tmp_path / "reader.duckdb", catalog, data, "reader")
    try:
        last = events[-2]["trace"]["spanId"]
        status, page, headers = http(f"{reader.url}runs/{trace}?span={last}")
        assert status == 200, page[:500]
        here, total = (int(n) for n in headers["Lake-Copied"].split("/"))
        assert HEAD < here < total == len(events)
        assert b'id="lake-copying"' in page
        assert f"step {spans - 1}".encode() in page  # the linked span, copied first

        def whole() -> bytes | None:
            status, page, headers = http(f"{reader.url}runs/{trace}")
            return page if status == 200 and "Lake-Copied" not in headers else None

        page = wait_for("the rest of the run", whole)
        assert b'id="lake-copying"' not in page
        assert f"<dd>{len(events)}</dd>".encode() in page
    finally:
        reader.stop()
    assert "Traceback" not in (tmp_path / "reader.log").read_text()


def test_a_span_link_during_the_copy_goes_before_the_rest(lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner) -> None:
    """A run opened from the lake and being copied part by part: a link to its last step, which the copy
    has not reached, answers with that step (copied before the copy's next part), on a store that holds
    fewer events than the lake has before that step; the header says the run is being copied and the
    lake's status for it; the copy then goes on to the whole run."""
    catalog, data = lakes.new()
    spans, chunk = 3 * HEAD // 2, 250
    events, trace = _published(devtool, tmp_path, catalog, data, "long run, linked", spans)

    reader = start(
        tmp_path / "reader.duckdb",
        *("--lake", catalog, "--lake-data", str(data), "--lake-name", "reader", "--lake-copy-chunk", str(chunk)),
        log=tmp_path / "reader.log",
    )
    try:
        wait_for("the reader to list the run", lambda: trace.encode() in http(reader.url)[1])
        status, page, headers = http(f"{reader.url}runs/{trace}")  # its head; the rest is copied from now on
        assert status == 200, page[:500]
        assert headers["Lake-Copied"] == f"{HEAD}/{len(events)}"

        last = events[-2]["trace"]["spanId"]
        status, page, headers = http(f"{reader.url}runs/{trace}?span={last}")
        assert status == 200, page[:500]
        assert f"step {spans - 1}".encode() in page  # the linked span
        here, total = (int(n) for n in headers["Lake-Copied"].split("/"))
        # The copy goes in the lake's order, `chunk` events at a time, and the last step's events are the
        # run's last but one and two: fewer events here than the lake holds before them means the copy
        # had not reached them, and the link's own copy brought them (with its ancestors: the root).
        assert total == len(events)
        assert HEAD < here < len(events) - 3
        assert b'id="lake-copy-badge"' in page
        assert b'title="as the team\'s lake lists it">completed</span>' in page
        assert f"of {len(events):,}".encode() in page

        def whole() -> bytes | None:
            status, page, headers = http(f"{reader.url}runs/{trace}")
            return page if status == 200 and "Lake-Copied" not in headers else None

        page = wait_for("the rest of the run", whole)
        assert f"<dd>{len(events)}</dd>".encode() in page
        assert b'id="lake-copy-badge"' not in page
        header = http(f"{reader.url}runs/{trace}/header")[1]
        assert b">completed</span>" in header
        assert b"lake-copy-badge" not in header
    finally:
        reader.stop()
    assert "Traceback" not in (tmp_path / "reader.log").read_text()


def _published(
    devtool: DevtoolRunner, tmp_path: Path, catalog: str, data: Path, name: str, spans: int
) -> tuple[list[dict[str, Any]], str]:
    """A run of `spans` steps named `name`, loaded into a publisher's store and published to the lake:
    its events and trace id."""
    events = run_events(name, spans)
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(event) for event in events) + b"\n")
    publisher = str(tmp_path / "publisher.duckdb")
    assert devtool("load", str(path), "--db", publisher).returncode == 0
    trace = trace_id_of(name)
    done = devtool("publish", trace, "--db", publisher, "--lake", catalog, "--lake-data", str(data))
    assert done.returncode == 0, done.stderr
    return events, trace
