"""DNS rebinding: a DevTool without a team token answers only requests addressed to itself by `Host`,
browser headers or not (real `devtool serve` processes, raw HTTP)."""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest

from devtool.web.hosts import own_host, split_host
from tests.conftest import DevtoolRunner, Trace, running_serve

REBOUND = "evil.example"


def ask(url: str, method: str, path: str, host: str, body: bytes | None = None) -> http.client.HTTPResponse:
    """`method path` to the server at `url` with exactly the headers a fetch with no referrer sends:
    `Host` and nothing a browser would add (no Origin, Referer, Sec-Fetch-*, cookie)."""
    address, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(address, int(port), timeout=30)
    headers = {"Host": host}
    if body is not None:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_a_rebound_name_reads_nothing_and_writes_nothing(tmp_path: Path) -> None:
    t = Trace()
    t.span("agent", agentId="target")
    run = t.write(tmp_path / "run.jsonl")
    with running_serve(tmp_path / "s.duckdb", str(run)) as server:
        port = server.url.rstrip("/").rsplit(":", 1)[1]
        export = f"/runs/{t.trace_id}/export.otlp.jsonl"
        for path in ("/", export, f"/runs/{t.trace_id}", "/api/v1/server"):
            answer = ask(server.url, "GET", path, f"{REBOUND}:{port}")
            assert answer.status == 421, path
        posted = ask(server.url, "POST", "/api/v1/traces", f"{REBOUND}:{port}", b"[]")
        assert posted.status == 421
        # The same requests by the server's own names are answered.
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
            assert ask(server.url, "GET", export, host).status == 200, host
        # A loopback name on another port is another server's name.
        assert ask(server.url, "GET", export, f"localhost:{int(port) + 1}").status == 421
        assert ask(server.url, "GET", export, "localhost").status == 421


def test_allow_host_adds_a_name(tmp_path: Path) -> None:
    with running_serve(tmp_path / "s.duckdb", "--allow-host", "DevTool.Internal") as server:
        port = server.url.rstrip("/").rsplit(":", 1)[1]
        assert ask(server.url, "GET", "/", f"devtool.internal:{port}").status == 200
        assert ask(server.url, "GET", "/", "devtool.internal:80").status == 200  # a proxy's port
        assert ask(server.url, "GET", "/", f"{REBOUND}:{port}").status == 421


def test_a_bad_allow_host_is_one_line(devtool: DevtoolRunner, tmp_path: Path) -> None:
    done = devtool("serve", "--allow-host", "http://x.example/", "--db", str(tmp_path / "s.db"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "--allow-host 'http://x.example/'" in done.stderr


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("127.0.0.1:8484", True),
        ("[::1]:8484", True),
        ("localhost:8484", True),
        ("localhost", False),  # port 80
        ("127.0.0.2:8484", False),
        ("a.localhost:8484", False),
        ("evil.example:8484", False),
        ("localhost:8484@evil", False),
        ("", False),
        ("[::1]", False),
    ],
)
def test_own_host(host: str, expected: bool) -> None:
    assert own_host(host, ("127.0.0.1", 8484), "http", frozenset()) is expected


def test_split_host() -> None:
    assert split_host("[::1]:99", 80) == ("::1", 99)
    assert split_host("Example.COM", 443) == ("example.com", 443)
    assert split_host("x:abc", 80) == ("x", None)
