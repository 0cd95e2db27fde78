"""`devtool publish`, `devtool load --lake` and `devtool serve --lake` as real child processes on a
real lake (a PostgreSQL catalog, a data folder), and what they say about bad `--lake` values: one
line naming the option, exit code 2, never a traceback."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest

from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes

from .conftest import DevtoolRunner


def trace_file(folder: Path, name: str, spans: int) -> Path:
    path = folder / f"{name}.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(event) for event in run_events(name, spans)) + b"\n")
    return path


def test_publish_then_load_from_the_lake_on_another_database(
    lakes: Lakes, tmp_path: Path, devtool: DevtoolRunner
) -> None:
    catalog, data = lakes.new()
    lake = ("--lake", catalog, "--lake-data", str(data))
    mine, theirs = str(tmp_path / "mine.duckdb"), str(tmp_path / "theirs.duckdb")
    assert devtool("load", str(trace_file(tmp_path, "shared", 5)), "--db", mine).returncode == 0
    trace = trace_id_of("shared")

    first = devtool("publish", trace[:8], "--db", mine, *lake)
    assert first.returncode == 0, first.stderr
    assert f"{trace}: 12 events published" in first.stdout
    again = devtool("publish", "--all", trace, "--db", mine, *lake)
    assert again.returncode == 0, again.stderr
    assert f"{trace}: already in the lake, nothing added" in again.stdout

    loaded = devtool("load", "--lake", catalog, "--lake-data", str(data), trace, "--db", theirs)
    assert loaded.returncode == 0, loaded.stderr
    assert f"{trace}: 12 events, 6 spans from the lake" in loaded.stdout
    twice = devtool("load", "--lake", catalog, "--lake-data", str(data), trace, "--db", theirs)
    assert f"{trace}: in the store already, nothing added" in twice.stdout
    exported = devtool("export", trace, "--db", theirs)
    assert exported.returncode == 0, exported.stderr
    lines = gzip.decompress((tmp_path / f"{trace}.trace.jsonl.gz").read_bytes()).splitlines()
    assert lines == (tmp_path / "shared.jsonl").read_bytes().splitlines()

    missing = devtool("load", "--lake", catalog, "--lake-data", str(data), "0" * 32, "--db", theirs)
    assert missing.returncode == 2
    assert f"no run '{'0' * 32}' in the lake" in missing.stderr
    compacted = devtool("publish", "--compact", "--db", mine, *lake)
    assert compacted.returncode == 0, compacted.stderr
    assert "compacted:" in compacted.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--lake", "", "--lake-data", "DATA"], "--lake is empty"),
        (["--lake", "mysql:db=x", "--lake-data", "DATA"], "--lake 'mysql:db=x' is not a catalog this DevTool opens"),
        (["--lake", "postgres:", "--lake-data", "DATA"], "names no database"),
        (["--lake", "team.ducklake"], "--lake needs --lake-data"),
        (["--lake-data", "DATA"], "--lake-data needs --lake"),
        (["--lake", "team.ducklake", "--lake-data", "ftp://x/"], "--lake-data 'ftp://x/': not a folder"),
        (["--lake", "team.ducklake", "--lake-data", "FILE"], "is a file, not a folder"),
        (
            ["--lake", "postgres:host=/nonexistent port=1 dbname=x password=hunter2", "--lake-data", "DATA"],
            "cannot open the lake catalog 'postgres:host=/nonexistent port=1 dbname=x password=***'",
        ),
        (["--lake", "team.ducklake", "--lake-data", "DATA", "--lake-name", "a b"], "--lake-name 'a b'"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "publish"])
def test_bad_lake_values_are_one_line_and_exit_2(
    tmp_path: Path, devtool: DevtoolRunner, command: str, args: list[str], message: str
) -> None:
    (tmp_path / "FILE").write_text("not a folder")
    given = [arg.replace("DATA", str(tmp_path / "data")).replace("FILE", str(tmp_path / "FILE")) for arg in args]
    extra = ["--port", "0"] if command == "serve" else ["--all"]
    done = devtool(command, *given, *extra, "--db", str(tmp_path / "x.duckdb"), timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr.replace(str(tmp_path / "data"), "DATA").replace(str(tmp_path / "FILE"), "FILE")
    assert "Traceback" not in done.stderr
    assert "hunter2" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_a_copy_chunk_of_no_events_is_refused(tmp_path: Path, devtool: DevtoolRunner) -> None:
    lake = ["--lake", str(tmp_path / "team.ducklake"), "--lake-data", str(tmp_path / "data")]
    done = devtool("serve", *lake, "--lake-copy-chunk", "0", "--port", "0", "--db", str(tmp_path / "x.duckdb"))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stderr.strip() == "devtool serve: error: --lake-copy-chunk 0: give a number of events, 1 or more"
