"""Who may use a DevTool: loopback protection against cross-site posts, the team token and its login,
and `devtool serve --host` refusing an open address without a token (real processes, real HTTP)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from httpx2 import Response
from starlette.testclient import TestClient

from devtool.store import Store, get_snapshot, load_file
from devtool.web import create_app
from devtool.web.auth import SESSION_COOKIE, Access, TokenTooShortError
from devtool.web.settings import Settings
from devtool.web.state import AppState
from testkit.served import Served
from tests.conftest import CORPUS, DevtoolRunner, Trace, running_serve
from tests.web_runs import html, one

TOKEN = "team-token-0123456789-abcdef"
TRACE = CORPUS / "rejelly" / "nested.trace.jsonl"
# A browser's DevTool on loopback: the Host it names and the Origin of the DevTool's own pages.
BASE = "http://127.0.0.1:8484"
SAME_ORIGIN = {"Origin": BASE, "Sec-Fetch-Site": "same-origin"}


@pytest.fixture
def trace_id(store: Store) -> str:
    return load_file(store, TRACE).traces[0]


@pytest.fixture
def open_client(store: Store) -> Iterator[TestClient]:
    """A DevTool on loopback, no team token (the default)."""
    with TestClient(create_app(store), base_url=BASE, follow_redirects=False) as client:
        yield client


@pytest.fixture
def team_client(store: Store) -> Iterator[TestClient]:
    """A DevTool with a team token, not signed in."""
    with TestClient(create_app(store, Settings(token=TOKEN)), base_url=BASE, follow_redirects=False) as client:
        yield client


def csrf_of(client: TestClient) -> str:
    return AppState.of(client.app).access.csrf  # type: ignore[arg-type]


def a_span(trace_id: str) -> str:
    for line in TRACE.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "agent:end":
            return str(event["trace"]["spanId"])
    raise AssertionError("no agent span")


def refusal(response: Response) -> str:
    return one(html(response.text), ".error-detail").text()


def batch() -> list[dict[str, object]]:
    t = Trace()
    t.end(t.start("agent", agentId="a"))
    return t.events


def test_a_team_token_must_be_long_enough() -> None:
    with pytest.raises(TokenTooShortError, match="use at least 16"):
        Access("short")


# Loopback, no team token.


def test_pages_carry_the_per_server_token(open_client: TestClient, trace_id: str) -> None:
    page = html(open_client.get(f"/runs/{trace_id}?span={a_span(trace_id)}").text)
    headers = json.loads(str(one(page, "body").attributes["hx-headers"]))
    assert headers == {"X-DevTool-CSRF": csrf_of(open_client)}
    assert one(page, "form.rewind-bar input[name=_csrf]").attributes["value"] == csrf_of(open_client)


@pytest.mark.parametrize(
    "origin",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "null"},
        {"Origin": "http://127.0.0.1:8484.evil.example"},
        {"Sec-Fetch-Site": "cross-site"},
    ],
)
def test_a_cross_site_post_is_refused(open_client: TestClient, trace_id: str, origin: dict[str, str]) -> None:
    form = {"span_id": a_span(trace_id), "anchor": "after", "_csrf": csrf_of(open_client)}
    response = open_client.post(f"/runs/{trace_id}/rewind", data=form, headers=origin)
    assert response.status_code == 403
    assert "must come from the DevTool's own pages" in refusal(response)
    ingest = open_client.post("/api/v1/traces", json=batch(), headers=origin)
    assert ingest.status_code == 403
    assert ingest.json()["error"].startswith("a request that changes something")


def test_a_same_origin_post_needs_the_page_token(open_client: TestClient, store: Store, trace_id: str) -> None:
    form = {"span_id": a_span(trace_id), "anchor": "after"}
    refused = open_client.post(f"/runs/{trace_id}/rewind", data=form, headers=SAME_ORIGIN)
    assert refused.status_code == 403
    assert "did not carry the DevTool's page token" in refusal(refused)
    wrong = open_client.post(f"/runs/{trace_id}/rewind", data={**form, "_csrf": "guess"}, headers=SAME_ORIGIN)
    assert wrong.status_code == 403
    assert store.query("SELECT count(*) FROM rewind.snapshots") == [(0,)]
    # As a form field the token is read from the body, and the app still gets the whole form.
    by_field = open_client.post(
        f"/runs/{trace_id}/rewind", data={**form, "_csrf": csrf_of(open_client)}, headers=SAME_ORIGIN
    )
    assert by_field.status_code == 303
    by_header = open_client.post(
        f"/runs/{trace_id}/rewind", data=form, headers={**SAME_ORIGIN, "X-DevTool-CSRF": csrf_of(open_client)}
    )
    assert by_header.headers["location"] == by_field.headers["location"]


def test_programs_on_this_machine_post_without_a_token(open_client: TestClient, store: Store) -> None:
    response = open_client.post("/api/v1/traces", json=batch())
    assert response.status_code == 200
    assert response.json()["accepted"] == 2


def test_a_page_opened_under_another_host_name_is_refused(open_client: TestClient) -> None:
    # A web page that rebinds its own name to 127.0.0.1 is same-origin with itself, not with us.
    rebound = open_client.get("/", headers={"Host": "evil.example:8484", "Sec-Fetch-Site": "same-origin"})
    assert rebound.status_code == 421
    assert "answers only requests addressed to its own address" in refusal(rebound)
    assert "not to 'evil.example:8484'" in refusal(rebound)
    for host in ("127.0.0.1:8484", "localhost:8484", "[::1]:8484"):
        assert open_client.get("/", headers={"Host": host, "Sec-Fetch-Site": "none"}).status_code == 200


# With a team token.


def test_without_the_token_a_page_gets_the_login_page(team_client: TestClient, trace_id: str) -> None:
    response = team_client.get(f"/runs/{trace_id}?span=abc")
    assert response.status_code == 401
    page = html(response.text)
    assert one(page, "input[name=next]").attributes["value"] == f"/runs/{trace_id}?span=abc"
    assert one(page, "input[name=token]").attributes["type"] == "password"
    assert TOKEN not in response.text
    htmx = team_client.get(f"/runs/{trace_id}", headers={"HX-Request": "true"})
    assert htmx.headers["HX-Redirect"].startswith("/login?next=")
    api = team_client.get(f"/snapshots/{'0' * 64}.json")
    assert api.status_code == 401
    assert team_client.get("/static/app.css").status_code == 200


def test_without_the_token_a_state_changing_request_gets_403(team_client: TestClient, trace_id: str) -> None:
    form = {"span_id": a_span(trace_id), "anchor": "after", "_csrf": csrf_of(team_client)}
    assert team_client.post(f"/runs/{trace_id}/rewind", data=form).status_code == 403
    ingest = team_client.post("/api/v1/traces", json=batch())
    assert ingest.status_code == 403
    assert "team token" in ingest.json()["error"]
    wrong = team_client.post("/api/v1/traces", json=batch(), headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403
    agent = team_client.post("/api/v1/traces", json=batch(), headers={"Authorization": f"Bearer {TOKEN}"})
    assert agent.status_code == 200
    # OTLP's endpoint is under the same rule: an exporter sends the token as a header
    # (OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer ...").
    for path in ("/v1/traces", "/v1/logs"):
        otlp = team_client.post(path, content=b"{}", headers={"Content-Type": "application/json"})
        assert otlp.status_code == 403
        assert "team token" in otlp.json()["error"]
        bearer = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        assert team_client.post(path, content=b"{}", headers=bearer).status_code == 200


def sign_in(client: TestClient, *, name: str = "Ana", next_page: str = "/") -> None:
    response = client.post("/login", data={"token": TOKEN, "name": name, "next": next_page}, headers=SAME_ORIGIN)
    assert response.status_code == 303
    assert response.headers["location"] == next_page


def test_signing_in_sets_a_cookie_and_links_work(team_client: TestClient, store: Store, trace_id: str) -> None:
    refused = team_client.post("/login", data={"token": "not-it", "next": "/"}, headers=SAME_ORIGIN)
    assert refused.status_code == 403
    assert "not this DevTool's team token" in one(html(refused.text), "#login-error").text()
    assert SESSION_COOKIE not in refused.cookies
    response = team_client.post(
        "/login", data={"token": TOKEN, "name": "Ana <b>", "next": f"/runs/{trace_id}"}, headers=SAME_ORIGIN
    )
    assert response.headers["location"] == f"/runs/{trace_id}"
    cookie = response.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert TOKEN not in cookie
    assert team_client.get(f"/runs/{trace_id}").status_code == 200
    assert team_client.get("/").status_code == 200
    # A state-changing request from the signed-in browser: page token and same origin too.
    form = {"span_id": a_span(trace_id), "anchor": "after"}
    assert team_client.post(f"/runs/{trace_id}/rewind", data=form, headers=SAME_ORIGIN).status_code == 403
    cross = {"Origin": "http://evil.example", "X-DevTool-CSRF": csrf_of(team_client)}
    assert team_client.post(f"/runs/{trace_id}/rewind", data=form, headers=cross).status_code == 403
    made = team_client.post(
        f"/runs/{trace_id}/rewind", data=form, headers={**SAME_ORIGIN, "X-DevTool-CSRF": csrf_of(team_client)}
    )
    assert made.status_code == 303
    snapshot_link = made.headers["location"]
    assert TOKEN not in snapshot_link
    assert team_client.get(snapshot_link).status_code == 200
    assert team_client.get(snapshot_link + ".json").status_code == 200
    assert get_snapshot(store, snapshot_link.removeprefix("/snapshots/")).info.created_by == "Ana b"


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "javascript:alert(1)", "\\\\evil"])
def test_login_never_sends_you_to_another_site(team_client: TestClient, target: str) -> None:
    response = team_client.post("/login", data={"token": TOKEN, "next": target}, headers=SAME_ORIGIN)
    assert response.headers["location"] == "/"
    assert team_client.get("/login", params={"next": target}).headers["location"] == "/"


# Real processes.


@pytest.fixture
def serve_with_token(tmp_path: Path) -> Iterator[Served]:
    env = {**os.environ, "DEVTOOL_TOKEN": TOKEN, "XDG_DATA_HOME": str(tmp_path / "home")}
    with running_serve(tmp_path / "s.db", "--host", "0.0.0.0", env=env) as server:
        assert server.url.startswith("http://0.0.0.0:"), server.url
        port = server.url.rsplit(":", 1)[1].strip().rstrip("/")
        yield replace(server, url=f"http://127.0.0.1:{port}")


def test_a_non_loopback_server_without_a_token_refuses_to_start(devtool: DevtoolRunner, tmp_path: Path) -> None:
    for host in ("0.0.0.0", "192.168.1.10", "::"):
        done = devtool("serve", "--host", host, "--port", "0", "--db", str(tmp_path / "s.db"))
        assert done.returncode == 2
        assert f"refusing to serve on {host} without a team token" in done.stderr
        assert "secrets.token_urlsafe(32)" in done.stderr
        assert "DEVTOOL_TOKEN=<token> devtool serve" in done.stderr
        assert done.stderr.count("\n") == 1
    short = devtool("serve", "--host", "0.0.0.0", "--token", "abc", "--db", str(tmp_path / "s.db"))
    assert short.returncode == 2
    assert "the team token is 3 characters long" in short.stderr


def test_a_served_devtool_with_a_token_takes_requests_and_agents_that_carry_it(
    serve_with_token: Served, devtool: DevtoolRunner, tmp_path: Path
) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(serve_with_token.url + "/", timeout=10)
    assert caught.value.code == 401
    assert b'name="token"' in caught.value.read()
    request = urllib.request.Request(serve_with_token.url + "/", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(request, timeout=10) as page:
        assert page.status == 200
    (tmp_path / "tiny_agent.py").write_text(
        "from devtool.core import create_agent, memory\n"
        "async def work(props):\n"
        "    memory()['n'] = props['n']\n"
        "    return props['n'] * 2\n"
        "main = create_agent('tiny', work)\n"
    )
    ran = devtool("run", "tiny_agent:main", "--props", '{"n": 21}', "--to", serve_with_token.url, "--token", TOKEN)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "42"
    assert "spooled" not in ran.stderr
    runs = urllib.request.Request(serve_with_token.url + "/?q=tiny", headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(runs, timeout=10) as page:
        assert b"tiny" in page.read()
    # A replay from a snapshot on that DevTool: fetched with the token too.
    snapshot = {
        "processId": "p",
        "timestamp": 1,
        "version": 1,
        "provenance": {"traceId": "t"},
        "root": {
            "callId": "root",
            "agentId": "",
            "memory": {},
            "journal": {"prompt": {}, "tool": {}},
            "children": {},
            "state": {"status": "completed"},
        },
    }
    upload = urllib.request.Request(
        serve_with_token.url + "/snapshots",
        data=json.dumps(snapshot).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(upload, timeout=10) as landed:  # the 303 to the snapshot's page, followed
        location = urlsplit(landed.url).path
    assert location.startswith("/snapshots/")
    replayed = devtool(
        "run",
        "tiny_agent:main",
        "--props",
        '{"n": 2}',
        "--snapshot",
        f"{serve_with_token.url}{location}.json",
        "--to",
        serve_with_token.url,
        "--token",
        TOKEN,
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout.strip() == "4"
    refused = devtool("run", "tiny_agent:main", "--props", '{"n": 1}', "--to", serve_with_token.url)
    assert refused.returncode == 0  # the agent never fails because the DevTool refused its events...
    assert "refused part of a batch: 403" in refused.stderr  # ...and says why they did not arrive


def signed_in(client: TestClient, name: str = "Ana") -> str:
    response = client.post("/login", data={"token": TOKEN, "name": name, "next": "/"}, headers=SAME_ORIGIN)
    assert response.status_code == 303
    return response.cookies[SESSION_COOKIE]


def with_session(client: TestClient, session: str) -> int:
    """The status of the runs page for a browser that brings `session` and nothing else."""
    client.cookies.clear()
    client.cookies.set(SESSION_COOKIE, session)
    return client.get("/").status_code


def test_a_session_is_new_at_each_sign_in_and_expires(store: Store) -> None:
    app = create_app(store, Settings(token=TOKEN, session_seconds=1.0))
    with TestClient(app, base_url=BASE, follow_redirects=False) as client:
        first, second = signed_in(client), signed_in(client)
        assert first != second
        response = client.post("/login", data={"token": TOKEN, "next": "/"}, headers=SAME_ORIGIN)
        assert "Max-Age=1;" in response.headers["set-cookie"]
        assert with_session(client, first) == 200
        time.sleep(1.2)
        assert with_session(client, first) == 401


def test_signing_out_ends_the_session(team_client: TestClient) -> None:
    session = signed_in(team_client)
    assert with_session(team_client, session) == 200
    refused = team_client.post("/logout", headers=SAME_ORIGIN)  # without the page token: not from a page
    assert refused.status_code == 403
    out = team_client.post("/logout", headers={**SAME_ORIGIN, "X-DevTool-CSRF": csrf_of(team_client)})
    assert out.status_code == 303
    assert out.headers["location"] == "/login"
    assert f'{SESSION_COOKIE}=""' in out.headers["set-cookie"]
    assert with_session(team_client, session) == 401


def test_a_session_ends_when_the_server_restarts(store: Store) -> None:
    with TestClient(create_app(store, Settings(token=TOKEN)), base_url=BASE, follow_redirects=False) as before:
        session = signed_in(before)
        assert with_session(before, session) == 200
    with TestClient(create_app(store, Settings(token=TOKEN)), base_url=BASE, follow_redirects=False) as after:
        assert with_session(after, session) == 401
