"""The DuckDB file: its schema version and migrations, reopening, and a file another process holds."""

from __future__ import annotations

import gzip
from pathlib import Path

import duckdb
import pytest

from devtool.actions.frame_indexer import build_index
from devtool.actions.run_rewind import restore_from_index
from devtool.core.debugger import restore_snapshot
from devtool.store import (
    Store,
    StoreError,
    StoreLockedError,
    append_events,
    database,
    get_snapshot,
    load_file,
    save_snapshot,
    span_keys,
    span_search,
)
from devtool.store.frame_index_tables import index_state
from devtool.store.queries.cause import run_cause
from devtool.store.queries.find import find_in_run
from devtool.store.queries.navigation import generation_ends
from devtool.store.rewind_file import ALIAS as REWIND_ALIAS
from devtool.store.schema import MIGRATIONS
from devtool.store.snapshots import save_tree
from tests.conftest import Trace, held_open

FIXTURES = Path(__file__).parent / "fixtures"


def old_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: int, events: list[dict[str, object]]) -> Path:
    """A store at schema `version` holding `events`: appended by today's code to a new store, their
    rows copied into one made by the first `version` migrations (the columns it has)."""
    new = Store(tmp_path / "new.duckdb")
    append_events(new, events)
    new.close()
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:version])
    Store(path).close()
    monkeypatch.undo()
    with duckdb.connect(str(path)) as conn:
        conn.execute(f"ATTACH '{tmp_path / 'new.duckdb'}' AS new (READ_ONLY)")
        for table in ("sources", "events", "spans", "runs"):
            columns = ", ".join(
                row[0]
                for row in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'old' "
                    "AND table_name = ? ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            )
            conn.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM new.{table}")
    return path


def test_a_new_file_is_at_the_latest_schema_version(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    try:
        assert store.schema_version == len(MIGRATIONS)
        tables = {row[0] for row in store.query("SELECT table_name FROM information_schema.tables")}
        assert {"sources", "events", "spans", "runs", "journal_entries", "snapshots", "schema_version"} <= tables
    finally:
        store.close()


def test_reopening_keeps_everything_and_migrates_nothing_twice(tmp_path: Path) -> None:
    t = Trace()
    t.end(t.start("agent"))
    store = Store(tmp_path / "s.duckdb")
    append_events(store, t.events)
    store.close()
    again = Store(tmp_path / "s.duckdb")
    try:
        assert again.query("SELECT count(*) FROM events") == [(2,)]
        assert again.query("SELECT count(*) FROM schema_version") == [(len(MIGRATIONS),)]
    finally:
        again.close()


def test_a_later_migration_runs_once_on_an_older_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Store(tmp_path / "s.duckdb").close()
    monkeypatch.setattr(database, "MIGRATIONS", [*MIGRATIONS, "ALTER TABLE runs ADD COLUMN note VARCHAR"])
    for _ in range(2):
        store = Store(tmp_path / "s.duckdb")
        assert store.schema_version == len(MIGRATIONS) + 1
        store.close()
    reopened = Store(tmp_path / "s.duckdb")
    try:
        assert reopened.query("SELECT count(*) FROM information_schema.columns WHERE column_name = 'note'") == [(1,)]
    finally:
        reopened.close()


def test_migration_5_counts_a_stored_runs_spans_as_its_page_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A store written before migration 5 counted every span: instants, prompt loops, model calls.
    t = Trace()
    root = t.start("agent")
    loop = t.start("promptAgent", root)
    t.end(t.start("model:call", loop), success=False)
    t.end(loop)
    t.point("error", root, error={"message": "boom"})
    t.end(root, success=False)
    path = old_store(tmp_path, monkeypatch, 4, t.events)
    with duckdb.connect(str(path)) as conn:
        conn.execute("UPDATE runs SET spans = 4, failed = 3")
    reopened = Store(path)
    try:
        assert reopened.query("SELECT spans, failed FROM runs") == [(1, 1)]
    finally:
        reopened.close()


def test_a_file_from_a_newer_devtool_is_refused(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.duckdb")
    with store.writer() as conn:
        conn.execute("INSERT INTO schema_version VALUES (?)", [len(MIGRATIONS) + 5])
    store.close()
    with pytest.raises(StoreError, match=f"has schema version {len(MIGRATIONS) + 5}, newer than this devtool"):
        Store(tmp_path / "s.duckdb")


def test_new_files_are_in_the_storage_format_that_compresses_long_json(tmp_path: Path) -> None:
    # DuckDB 1.5's default format is 1.0's, which has no ZSTD for strings: events' bodies 5x larger.
    store = Store(tmp_path / "s.duckdb")
    try:
        versions = dict(store.query("SELECT database_name, tags['storage_version'] FROM duckdb_databases()"))
        assert versions["s"] == versions[REWIND_ALIAS] == "v1.5.0+"
    finally:
        store.close()


def test_a_file_duckdb_2_wrote_is_refused_with_what_to_do(tmp_path: Path) -> None:
    # An empty database DuckDB 2.0.1 wrote (what DevTool releases before the lake kept their runs in).
    path = tmp_path / "old.duckdb"
    path.write_bytes(gzip.decompress((FIXTURES / "duckdb-2.0.1.duckdb.gz").read_bytes()))
    written = path.read_bytes()
    with pytest.raises(StoreError, match=r"written by a newer DuckDB than this DevTool's 1\.5\.5 .*devtool export"):
        Store(path)
    assert path.read_bytes() == written  # refused before anything was written to it


def test_a_file_another_process_holds_says_which(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    with held_open(path) as pid, pytest.raises(StoreLockedError, match=f"is open in another process \\(pid {pid}\\)"):
        Store(path)


def test_a_transaction_that_raises_writes_nothing(store: Store) -> None:
    def write_then_fail() -> None:
        with store.transaction() as conn:
            conn.execute("INSERT INTO rewind.snapshots (snapshot_id, body) VALUES ('x', '{}')")
            raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        write_then_fail()
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(0,)]


def test_duckdb_is_held_to_a_memory_limit_and_told_where_to_spill(tmp_path: Path) -> None:
    """DuckDB's own default is most of the machine: a store asks for 1 GiB unless told otherwise."""
    default = Store(tmp_path / "a.duckdb")
    chosen = Store(tmp_path / "b.duckdb", memory_limit="256MiB")
    try:
        limit = "SELECT current_setting('memory_limit'), current_setting('temp_directory')"
        assert default.query(limit) == [("1.0 GiB", f"{tmp_path / 'a.duckdb'}.tmp")]
        assert chosen.query(limit)[0][0] == "256.0 MiB"
    finally:
        default.close()
        chosen.close()
    with pytest.raises(StoreError, match="Memory must have a number"):
        Store(tmp_path / "c.duckdb", memory_limit="lots")


def test_duckdb_gives_freed_memory_back_from_a_thread_of_its_own(store: Store) -> None:
    assert store.query("SELECT current_setting('allocator_background_threads')") == [(True,)]


def test_only_a_load_whose_bar_shows_it_has_duckdb_track_its_progress(tmp_path: Path) -> None:
    """Tracked, progress is polled on every statement (0.7% of an OTLP ingest's CPU): a store's
    connections (a server's: its live appends, its pages) leave it off, and a load whose bar shows it
    turns it on for its own statements only (`devtool load`'s bar: tests/test_cli_load.py)."""
    store = Store(tmp_path / "s.duckdb")
    trace = Trace()
    trace.end(trace.start("agent"))
    try:
        assert not tracked_writer(store)
        assert not tracked(store.reader())
        with store.showing_progress():
            assert tracked_writer(store)
        assert not tracked_writer(store)
        load_file(store, trace.write(tmp_path / "t.jsonl"), progress=lambda phase, done, total: None)
        assert not tracked_writer(store)
    finally:
        store.close()


def tracked(conn: duckdb.DuckDBPyConnection) -> bool:
    return bool(conn.execute("SELECT current_setting('enable_progress_bar')").fetchall()[0][0])


def tracked_writer(store: Store) -> bool:
    with store.writer() as conn:
        return tracked(conn)


def test_commits_leave_their_wal_until_the_stores_threshold_and_a_reopened_store_has_them(tmp_path: Path) -> None:
    # DuckDB would checkpoint at 16 MiB of WAL, inside whichever commit crossed it: under live
    # ingest, a commit of an append every second or two.
    store = Store(tmp_path / "s.duckdb")
    try:
        with store.transaction(derives=False) as conn:
            conn.execute("CREATE TABLE scratch (text VARCHAR)")
        for _ in range(24):
            with store.transaction(derives=False) as conn:
                conn.execute("INSERT INTO scratch SELECT repeat('x', 1024) || i FROM range(1024) r(i)")
        assert store.wal_bytes() > 20 * 2**20  # 24 commits of ~1 MiB, none checkpointed
    finally:
        store.close()
    reopened = Store(tmp_path / "s.duckdb")
    try:
        assert reopened.query("SELECT count(*), count(DISTINCT text) FROM scratch") == [(24 * 1024, 1024)]
    finally:
        reopened.close()


@pytest.mark.parametrize("rewind", [False, True], ids=["main file", "rewind file"])
def test_a_checkpoint_writes_what_is_committed_into_its_file_and_empties_that_wal(store: Store, rewind: bool) -> None:
    table = "rewind.rewind_runs" if rewind else "runs_copy"
    with store.transaction(derives=False) as conn:
        if not rewind:
            conn.execute("CREATE TABLE runs_copy AS SELECT * FROM rewind.rewind_runs LIMIT 0")
        conn.execute(f"INSERT INTO {table} SELECT 't' || range, 1, 1, true, NULL, 1, 1, 0.1, now() FROM range(2000)")
    other = store.wal_bytes(rewind=not rewind)
    assert store.wal_bytes(rewind=rewind) > 0
    store.checkpoint(rewind=rewind)
    assert store.wal_bytes(rewind=rewind) == 0
    assert store.wal_bytes(rewind=not rewind) == other  # the other file's WAL is its own
    assert store.query(f"SELECT count(*) FROM {table}") == [(2000,)]
    with store.beside() as conn:  # a transaction with writes in flight: no checkpoint, and no error
        conn.execute(f"INSERT INTO {table} VALUES ('u', 1, 1, true, NULL, 1, 1, 0.1, now())")
        store.checkpoint(rewind=rewind)
    assert store.query(f"SELECT count(*) FROM {table}") == [(2001,)]


def test_migration_6_gives_stored_events_their_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Trace()
    t.start("agent")
    reopened = Store(old_store(tmp_path, monkeypatch, 5, t.events))
    try:
        # An event stored before the migration is known by its key: sent again, it is not stored again.
        assert append_events(reopened, t.events) == [None]
        assert reopened.query("SELECT count(*) FROM events") == [(1,)]
    finally:
        reopened.close()


def test_migration_8_keeps_stored_snapshots_and_drops_indexes_made_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    agents = [run.start("agent", root, agentId="a", callId=f"root/agent:a:{n}") for n in range(3)]
    for n, agent in enumerate(agents):
        run.end(agent, success=True, result=n)
    run.end(root, success=True, result=None)
    document = restore_snapshot(run.events, span_id=agents[1], anchor="after")
    path = tmp_path / "old.duckdb"
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:7])
    old = Store(path)
    saved = save_snapshot(old, document)
    with old.transaction() as conn:  # an index as version 7 wrote it, in the main file: its rows have no usage
        conn.execute("INSERT INTO rewind_runs VALUES (?, 1, 7, true, NULL, 7, 4, 0.1, now())", [run.trace_id])
        conn.execute(
            "INSERT INTO rewind_frames VALUES (?, 1, 0, -1, 0, 'root', 0, 7, '', 'completed', NULL, [])", [run.trace_id]
        )
    old.close()
    monkeypatch.undo()
    store = Store(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        append_events(store, run.events)  # the run, derived as this version derives (into its runs columns)
        assert get_snapshot(store, saved).snapshot == document
        store.query("CHECKPOINT")
        compression = store.query(
            "SELECT DISTINCT compression FROM pragma_storage_info('rewind.snapshot_nodes') "
            "WHERE column_name = 'body' AND segment_type = 'JSON'"
        )
        assert compression == [("Uncompressed",)]
        assert index_state(store, run.trace_id) is None  # made again by the server, with the usage
        assert build_index(store, run.trace_id).indexed
        tree = restore_from_index(store, run.trace_id, agents[1], "after")
        assert tree is not None
        assert save_tree(store, tree.top, tree.nodes) == saved
    finally:
        store.close()


def test_migration_10_gives_runs_keyed_before_their_generation_ends_and_text_pieces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Trace()
    root = run.start("runWith", agentId="")
    for n in range(3):
        agent = run.start("agent", root, agentId="a", callId=f"root/agent:a:{n}")
        for g in range(n + 1):
            generation = run.start("generation", agent, agentId="a", name=f"generation {g}")
            run.end(generation, memory={"n": n, "g": g})
        run.end(agent, success=True, result=n)
    run.end(root, success=True, result=None)
    path = old_store(tmp_path, monkeypatch, 9, run.events)  # today's append writes tables version 9 has not
    monkeypatch.setattr(database, "MIGRATIONS", MIGRATIONS[:9])
    old = Store(path)
    call_ids = [f"root/agent:a:{n}" for n in range(3)]
    scanned = generation_ends(old, run.trace_id, call_ids)  # from the spans
    with old.transaction() as conn:  # keyed as version 9 keyed it (the rest of its keys are not read here)
        conn.execute(
            "INSERT INTO keyed_runs SELECT trace_id, nextval('keyed_run_ids'), started_ts, 1, last_event_id FROM runs"
        )
    old.close()
    monkeypatch.undo()
    store = Store(path)
    try:
        assert store.schema_version == len(MIGRATIONS)
        with store.reader() as cursor:
            keyed = span_keys.generation_ends(cursor, run.trace_id, call_ids)
            number = span_keys._run(cursor, run.trace_id)
            assert number is not None
            # The pieces of its searched text too: what is in a name or callId is not taken as absent.
            assert [
                span_search._absent(cursor, number, text) for text in ("agent:a:7", "generation 2", "zeppelin")
            ] == [
                False,
                False,
                True,
            ]
        assert keyed is not None
        assert [len(scanned[call_id]) for call_id in call_ids] == [1, 2, 3]
        assert len(keyed) == 6
        assert generation_ends(store, run.trace_id, call_ids) == scanned
    finally:
        store.close()


def test_migration_12_keeps_finding_text_in_runs_stored_before_and_keys_their_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events stored before migration 12 have no blocks of words: a find reads them as it did (all of
    them, if the run's words may hold the text); a run keyed before gets its failed spans kept."""
    run = Trace()
    root = run.start("runWith", callId="root")
    tool = run.start("tools:execute", root, callId="root/tool:probe:0")
    run.end(tool, success=False, error={"name": "OSError", "message": "disk quota exceeded"})
    run.end(root, success=False, error={"name": "OSError", "message": "disk quota exceeded"})
    path = old_store(tmp_path, monkeypatch, 11, run.events)
    with duckdb.connect(str(path)) as conn:
        conn.execute(f"ATTACH '{tmp_path / 'new.duckdb'}' AS new (READ_ONLY)")
        conn.execute("INSERT INTO search_terms SELECT * FROM new.search_terms")
        conn.execute(
            "INSERT INTO keyed_runs SELECT trace_id, nextval('keyed_run_ids'), started_ts, 1, last_event_id FROM runs"
        )
    store = Store(path)
    try:
        assert store.query("SELECT count(*) FROM search_blocks") == [(0,)]
        assert store.query("SELECT event_id > (SELECT max(event_id) FROM events) FROM search_blocks_since") == [(True,)]
        hits = find_in_run(store, run.trace_id, "Quota").hits
        assert {(hit.span_id, hit.field) for hit in hits} == {(tool, "error.message"), (root, "error.message")}
        assert find_in_run(store, run.trace_id, "zebra").hits == []
        assert store.query("SELECT span_id, name FROM span_failures ORDER BY start_ts") == [
            (root, "runWith"),
            (tool, "tools"),
        ]
        assert [step.span_id for step in run_cause(store, run.trace_id).chain] == [root, tool]
    finally:
        store.close()
