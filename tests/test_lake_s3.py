"""The lake's data on S3: two real `devtool serve` on one lake whose Parquet files go to
`s3://team-traces/devtool/` on a real S3 server (moto's, a child process on a loopback port), given
the endpoint and keys the way a user gives AWS's tools theirs (`AWS_*` variables): a run published by
one opens on the other, and its files are in the bucket."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest

from devtool.store.lake import LakeError, lake_config
from devtool.store.lake.s3 import s3_access
from testkit.checkout import child_env
from testkit.lake_runs import run_events, trace_id_of
from testkit.postgres import Lakes
from testkit.s3 import fake_s3
from testkit.served import start

from .test_lake_servers import LakeReader, http, wait_for

BUCKET, PREFIX = "team-traces", "devtool/"


def test_runs_published_to_s3_open_on_another_server(lakes: Lakes, tmp_path: Path) -> None:
    catalog, _ = lakes.new()
    data = f"s3://{BUCKET}/{PREFIX}"
    with fake_s3(tmp_path / "moto.log") as s3:
        s3.make_bucket(BUCKET)
        env = child_env({**os.environ, **s3.env()})
        lake = ("--lake", catalog, "--lake-data", data)
        servers = [start(tmp_path / "a.duckdb", *lake, "--lake-name", "A", log=tmp_path / "a.log", env=env)]
        reader = None
        try:
            servers.append(start(tmp_path / "c.duckdb", *lake, "--lake-name", "C", log=tmp_path / "c.log", env=env))
            theirs, mine = servers
            reader = LakeReader(catalog, s3_access(s3.env()))
            names = ["s3 one", "s3 two"]
            for name in names:
                status, body, _ = http(f"{theirs.url}api/v1/traces", body=orjson.dumps(run_events(name, 30)))
                assert status == 200, body
            listed = "SELECT count(*) FROM lake.runs"
            wait_for("A to publish both runs", lambda: reader.one(listed) == len(names))
            assert f"<Key>{PREFIX}".encode() in s3.keys(BUCKET, PREFIX).encode()
            assert ".parquet</Key>" in s3.keys(BUCKET, PREFIX)

            status, page, _ = http(f"{mine.url}runs/{trace_id_of('s3 two')}")
            assert status == 200, page[:500]
            assert b"step 29" in page
            assert b"<dd>62</dd>" in page
        finally:
            if reader is not None:
                reader.conn.close()
            for server in servers:
                server.stop()
    for name in ("a", "c"):
        assert "Traceback" not in (tmp_path / f"{name}.log").read_text(), name


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({"AWS_ENDPOINT_URL": "127.0.0.1:9000"}, "$AWS_ENDPOINT_URL '127.0.0.1:9000': give the S3 endpoint as"),
        ({"AWS_ENDPOINT_URL_S3": "ftp://x"}, "$AWS_ENDPOINT_URL_S3 'ftp://x'"),
        ({"AWS_ACCESS_KEY_ID": "k"}, "$AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY go together"),
    ],
)
def test_bad_s3_settings_are_refused_naming_the_variable(tmp_path: Path, environ: dict[str, str], said: str) -> None:
    with pytest.raises(LakeError, match=None) as refused:
        lake_config(str(tmp_path / "l.ducklake"), "s3://b/p/", "n", environ)
    assert said in str(refused.value)


def test_s3_settings_from_the_environment() -> None:
    config = lake_config("postgres:dbname=x", "s3://b/p", "n", {"AWS_ENDPOINT_URL": "https://minio.internal:9000"})
    assert config.data == "s3://b/p/"
    assert config.s3 is not None
    assert (config.s3.endpoint, config.s3.use_ssl, config.s3.key_id) == ("minio.internal:9000", True, None)
    assert lake_config("postgres:dbname=x", "s3://b/p", "n", {}).s3 is None
    secret = lake_config(
        "postgres:dbname=x", "s3://b/p", "n", {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "hush"}
    )
    assert "hush" not in repr(secret)
