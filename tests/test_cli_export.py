"""`devtool export` as a real process: a run and a snapshot that another DevTool loads as they were."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from devtool.core.debugger import restore_snapshot
from devtool.store import Store, get_snapshot, load_file, save_snapshot
from devtool.store.queries import run_events
from tests.conftest import CORPUS, DevtoolRunner, running_serve

TRACE = CORPUS / "rejelly" / "nested.trace.jsonl"


def stored_run(tmp_path: Path) -> tuple[Path, str, str]:
    """A store holding the nested trace and a snapshot of it; its path, the trace id, the snapshot id."""
    db = tmp_path / "mine.duckdb"
    store = Store(db)
    trace_id = load_file(store, TRACE).traces[0]
    snapshot_id = save_snapshot(store, restore_snapshot(run_events(store, trace_id)))
    store.close()
    return db, trace_id, snapshot_id


def test_an_exported_run_loads_into_another_devtool_event_for_event(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, _ = stored_run(tmp_path)
    done = devtool("export", trace_id, "--db", str(db))
    assert done.returncode == 0, done.stderr
    exported = tmp_path / f"{trace_id}.trace.jsonl.gz"
    assert f"wrote {exported.name}" in done.stderr
    lines = gzip.decompress(exported.read_bytes()).splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(line) for line in TRACE.read_text().splitlines()]
    theirs = tmp_path / "theirs.duckdb"
    loaded = devtool("load", str(exported), "--db", str(theirs))
    assert loaded.returncode == 0, loaded.stderr
    store = Store(theirs)
    try:
        assert run_events(store, trace_id) == [json.loads(line) for line in lines]
    finally:
        store.close()


def test_an_exported_snapshot_is_the_document_run_with_takes(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, _, snapshot_id = stored_run(tmp_path)
    out = tmp_path / "snap.json"
    done = devtool("export", "--snapshot", snapshot_id, "-o", str(out), "--db", str(db))
    assert done.returncode == 0, done.stderr
    store = Store(db)
    try:
        assert json.loads(out.read_text()) == get_snapshot(store, snapshot_id).snapshot
    finally:
        store.close()
    to_stdout = devtool("export", "--snapshot", snapshot_id, "-o", "-", "--db", str(db))
    assert to_stdout.stdout == out.read_text()


def test_what_export_refuses(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, _ = stored_run(tmp_path)
    missing = devtool("export", "no-such-run", "--db", str(db))
    assert missing.returncode == 2
    assert f"no run 'no-such-run' in {db}" in missing.stderr
    taken = tmp_path / "taken.gz"
    taken.write_bytes(b"keep me")
    refused = devtool("export", trace_id, "-o", str(taken), "--db", str(db))
    assert refused.returncode == 2
    assert "exists: choose another -o FILE, or pass --force" in refused.stderr
    assert taken.read_bytes() == b"keep me"
    forced = devtool("export", trace_id, "-o", str(taken), "--force", "--db", str(db))
    assert forced.returncode == 0
    assert gzip.decompress(taken.read_bytes()).count(b"\n") == len(TRACE.read_text().splitlines())
    both = devtool("export", trace_id, "--snapshot", "x", "--db", str(db))
    assert both.returncode == 2
    assert not list(tmp_path.glob(".taken.gz.*"))


def test_a_run_exports_as_otlp_that_another_devtool_loads(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, _ = stored_run(tmp_path)
    done = devtool("export", trace_id, "--format", "otlp", "--db", str(db))
    assert done.returncode == 0, done.stderr
    exported = tmp_path / f"{trace_id}.otlp.jsonl"
    first = json.loads(exported.read_text().splitlines()[0])
    names = {s["name"] for r in first["resourceSpans"] for ss in r["scopeSpans"] for s in ss["spans"]}
    assert any(name.startswith("invoke_agent ") for name in names)
    loaded = devtool("load", str(exported), "--db", str(tmp_path / "theirs.duckdb"))
    assert loaded.returncode == 0, loaded.stderr
    assert trace_id in loaded.stdout


def test_a_run_exports_for_perfetto_and_a_snapshot_has_no_format(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, snapshot_id = stored_run(tmp_path)
    done = devtool("export", trace_id, "--format", "perfetto", "-o", "-", "--db", str(db))
    assert done.returncode == 0, done.stderr
    slices = [e for e in json.loads(done.stdout)["traceEvents"] if e["ph"] == "X"]
    assert len(slices) > 10
    refused = devtool("export", "--snapshot", snapshot_id, "--format", "otlp", "--db", str(db))
    assert refused.returncode == 2
    assert "--format is for runs" in refused.stderr


def test_export_beside_a_running_devtool_reads_it_from_the_server(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, snapshot_id = stored_run(tmp_path)
    with running_serve(db) as server:
        url = server.url
        run = devtool("export", trace_id, "--db", str(db), "-o", "run.jsonl.gz")
        snapshot = devtool("export", "--snapshot", snapshot_id, "--db", str(db), "-o", "-")
        missing = devtool("export", "f" * 32, "--db", str(db), "-o", "missing.gz")
        perfetto = devtool("export", trace_id, "--format", "perfetto", "--db", str(db), "-o", "-")
    assert run.returncode == 0, run.stderr
    assert f"the DevTool at {url} has this database open: exporting through it" in run.stderr
    lines = gzip.decompress((tmp_path / "run.jsonl.gz").read_bytes()).splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(line) for line in TRACE.read_text().splitlines()]
    assert snapshot.returncode == 0, snapshot.stderr
    assert json.loads(snapshot.stdout)["provenance"]["traceId"] == trace_id
    assert missing.returncode == 2
    assert f"no run '{'f' * 32}' in {db} (asked the DevTool at {url}, which has it open)" in missing.stderr
    assert not (tmp_path / "missing.gz").exists()
    assert perfetto.returncode == 0, perfetto.stderr
    assert "exporting through it" in perfetto.stderr
    assert len([e for e in json.loads(perfetto.stdout)["traceEvents"] if e["ph"] == "X"]) > 10


def test_without_db_export_finds_the_demo_and_says_where_it_looked(devtool: DevtoolRunner, tmp_path: Path) -> None:
    home = tmp_path / "data-home" / "devtool"
    home.mkdir(parents=True)
    store = Store(home / "demo.duckdb")
    trace_id = load_file(store, TRACE).traces[0]
    store.close()
    found = devtool("export", trace_id, "-o", "found.jsonl.gz")
    assert found.returncode == 0, found.stderr
    assert gzip.decompress((tmp_path / "found.jsonl.gz").read_bytes()).count(b"\n") == len(
        TRACE.read_text().splitlines()
    )
    with running_serve(home / "demo.duckdb") as server:
        served = devtool("export", trace_id, "-o", "served.jsonl.gz")
        missing = devtool("export", "e" * 32)
    assert served.returncode == 0, served.stderr
    assert f"the DevTool at {server.url} has this database open" in served.stderr
    assert missing.returncode == 2
    assert f"no run '{'e' * 32}' in {home / 'devtool.duckdb'} (no such file) nor in {home / 'demo.duckdb'}" in (
        missing.stderr
    )
    assert "pass --db PATH" in missing.stderr


def test_a_jsonl_name_gets_plain_jsonl_and_a_gz_name_gzip(devtool: DevtoolRunner, tmp_path: Path) -> None:
    db, trace_id, _ = stored_run(tmp_path)
    plain = devtool("export", trace_id, "-o", "research.jsonl", "--db", str(db))
    assert plain.returncode == 0, plain.stderr
    assert "plain JSONL" in plain.stderr
    lines = (tmp_path / "research.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(line) for line in TRACE.read_text().splitlines()]
    zipped = devtool("export", trace_id, "-o", "research.jsonl.gz", "--db", str(db))
    assert zipped.returncode == 0, zipped.stderr
    assert gzip.decompress((tmp_path / "research.jsonl.gz").read_bytes()).decode().splitlines() == lines
