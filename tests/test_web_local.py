"""The command line's endpoints (`/api/v1/server`, `POST /api/v1/load`): the local token only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app
from devtool.web.settings import Settings
from tests.conftest import CORPUS

LOCAL = "local-token-for-the-command-line"
TEAM = "a-team-token-of-some-length"
NESTED = CORPUS / "rejelly" / "nested.trace.jsonl"


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store, Settings(token=TEAM, local_token=LOCAL))) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_server_says_which_database_it_owns_to_the_local_token_only(client: TestClient, store: Store) -> None:
    assert client.get("/api/v1/server", headers=bearer(LOCAL)).json()["db"] == str(store.path.resolve())
    assert client.get("/api/v1/server", headers=bearer(TEAM)).status_code == 403
    assert client.get("/api/v1/server").status_code == 401
    # The local token counts as signed in for the rest: an export, a page.
    assert client.get("/", headers=bearer(LOCAL)).status_code == 200


def test_files_load_by_path_with_the_same_results_as_devtool_load(client: TestClient, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": tru}\n')
    body = {"files": [str(NESTED), str(bad), str(tmp_path / "absent.jsonl")], "bad_lines": "reject"}
    answer = client.post("/api/v1/load", json=body, headers=bearer(LOCAL))
    assert answer.status_code == 200
    loaded, refused, absent = answer.json()["results"]
    assert (loaded["loaded"]["events"], loaded["loaded"]["spans"]) == (82, 21)
    assert loaded["loaded"]["traces"] == ["dfc19ffa56c7ceafc8c61ea1cd2faea9"]
    assert refused["bad_lines"] is True
    assert "line 1, column 10: not JSON" in refused["error"]
    assert "no such file" in absent["error"]


@pytest.mark.parametrize(
    ("body", "token", "status"),
    [
        ({"files": [str(NESTED)]}, TEAM, 403),  # a teammate cannot make the server read its files
        ({"files": ["relative.jsonl"]}, LOCAL, 400),
        ({"files": []}, LOCAL, 400),
        ({"files": [str(NESTED)], "bad_lines": "maybe"}, LOCAL, 400),
        ([str(NESTED)], LOCAL, 400),
    ],
)
def test_what_load_by_path_refuses(client: TestClient, store: Store, body: object, token: str, status: int) -> None:
    assert client.post("/api/v1/load", json=body, headers=bearer(token)).status_code == status
    assert store.query("SELECT count(*) FROM events") == [(0,)]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{files", "the body is not JSON"),
        (b"[]", "the body is not a JSON object"),
        (b'{"files": []}', "files: not a list of 1 to 1000 paths"),
        (b'{"files": ["/a.jsonl", "b.jsonl"]}', 'files[1]: "b.jsonl" is not an absolute path'),
        (b'{"files": ["/a.jsonl"], "bad_lines": "maybe"}', 'bad_lines: "maybe" is neither reject nor skip'),
    ],
)
def test_a_refused_load_by_path_says_what_is_wrong(client: TestClient, body: bytes, problem: str) -> None:
    answer = client.post("/api/v1/load", content=body, headers=bearer(LOCAL))
    assert answer.status_code == 400
    assert answer.json()["error"].startswith(problem)
