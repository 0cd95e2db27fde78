"""Team mode on a network: wrong team tokens back off per client (429, `Retry-After`), the store's
files are private to their user, and `devtool serve --tls-cert/--tls-key` serves HTTPS with `Secure`
cookies (real `devtool serve` processes, real HTTP and TLS)."""

from __future__ import annotations

import datetime
import http.client
import ipaddress
import os
import ssl
import stat
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from devtool.cli.server_file import server_file
from devtool.store.rewind_file import store_files
from devtool.web.backoff import Backoff
from testkit.checkout import child_env
from testkit.served import Served, serving
from tests.conftest import DevtoolRunner, Trace, running_serve

TOKEN = "team-token-0123456789-abcdef"


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Served]:
    env = {**os.environ, "DEVTOOL_TOKEN": TOKEN}
    with running_serve(tmp_path / "s.duckdb", env=env) as server:
        yield server


def ask(
    url: str, path: str, *, token: str | None = None, source: str = "127.0.0.1", form: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    """GET `path` (POST `form` as a urlencoded form) from the loopback address `source`, carrying
    `token` as a Bearer."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30, source_address=(source, 0))
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    body = None
    if form is not None:
        body = urllib.parse.urlencode(form)
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request("POST" if form is not None else "GET", path, body=body, headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_wrong_tokens_lock_out_their_client_not_others(team: Served) -> None:
    for _ in range(5):  # a teammate may mistype a few times
        assert ask(team.url, "/api/v1/server", token="wrong-token-000000000000").status == 401
    locked = ask(team.url, "/api/v1/server", token="wrong-token-000000000000")
    assert locked.status == 429
    wait = int(locked.headers["Retry-After"])
    assert 1 <= wait <= 60
    # Locked out: even the right token is not looked at, nor a sign-in.
    assert ask(team.url, "/", token=TOKEN).status == 429
    assert ask(team.url, "/login", form={"token": TOKEN, "next": "/"}).status == 429
    # Another client is not held up by the guesser.
    assert ask(team.url, "/", token=TOKEN, source="127.0.0.2").status == 200
    # The lockout ends (the backoff is the feature: this waits for it).
    time.sleep(wait + 0.2)
    assert ask(team.url, "/", token=TOKEN).status == 200


def test_wrong_sign_ins_lock_out_their_client(team: Served) -> None:
    for _ in range(5):
        assert ask(team.url, "/login", form={"token": "nope", "next": "/"}, source="127.0.0.3").status == 403
    locked = ask(team.url, "/login", form={"token": "nope", "next": "/"}, source="127.0.0.3")
    assert locked.status == 429
    assert int(locked.headers["Retry-After"]) >= 1
    assert ask(team.url, "/login", form={"token": TOKEN, "next": "/"}, source="127.0.0.3").status == 429
    assert ask(team.url, "/login", form={"token": TOKEN, "next": "/"}, source="127.0.0.4").status == 303


def test_the_lockout_doubles_and_is_bounded() -> None:
    backoff = Backoff(free=5, base=1.0, cap=60.0)
    delays = [backoff.failed("a") for _ in range(200)]
    assert delays[:5] == [0] * 5
    assert delays[5:12] == [1, 2, 4, 8, 16, 32, 60]
    assert max(delays) == 60
    assert backoff.wait("a") <= 60
    assert backoff.wait("b") == 0
    backoff.succeeded("a")
    assert backoff.wait("a") == 0


def test_store_files_are_private_to_their_user(tmp_path: Path) -> None:
    t = Trace()
    t.span("agent", agentId="x")
    run = t.write(tmp_path / "run.jsonl")
    db = tmp_path / "store" / "s.duckdb"
    files = (*store_files(db), server_file(db))
    seen: dict[str, int] = {}
    with serving(db, str(run), log=tmp_path / "serve.log") as server:
        assert ask(server.url, "/").status == 200
        seen |= {p.name: stat.S_IMODE(p.stat().st_mode) for p in files if p.exists()}
    seen |= {p.name: stat.S_IMODE(p.stat().st_mode) for p in files if p.exists()}
    assert {"s.duckdb", "s.duckdb.rewind", "s.duckdb.server.json"} <= set(seen), seen
    assert {name: oct(mode) for name, mode in seen.items() if mode & 0o077} == {}


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and localhost, and its key, as PEM files in `directory`."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "devtool test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_tls_serves_https_with_secure_cookies(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    trusting = ssl.create_default_context(cafile=str(cert))
    env = {**os.environ, "DEVTOOL_TOKEN": TOKEN}
    args = ("--tls-cert", str(cert), "--tls-key", str(key))
    with serving(tmp_path / "s.duckdb", *args, log=tmp_path / "serve.log", env=env, ssl_context=trusting) as server:
        assert server.url.startswith("https://127.0.0.1:"), server.url
        parts = urllib.parse.urlsplit(server.url)
        conn = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=30, context=trusting)
        conn.request(
            "POST",
            "/login",
            body=urllib.parse.urlencode({"token": TOKEN, "name": "ann", "next": "/"}),
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        signed_in = conn.getresponse()
        signed_in.read()
        assert signed_in.status == 303
        cookie = signed_in.headers["set-cookie"]
        assert "; secure" in cookie.lower()
        conn.request("GET", "/", headers={"Cookie": cookie.split(";", 1)[0]})
        page = conn.getresponse()
        assert page.status == 200
        assert b"No runs yet" in page.read()
        conn.close()
        # Plain HTTP on the TLS port gets no page.
        plain = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        plain.request("GET", "/", headers={"Authorization": f"Bearer {TOKEN}"})
        with pytest.raises((http.client.HTTPException, OSError)):
            plain.getresponse()


def test_tls_needs_both_files(devtool: DevtoolRunner, tmp_path: Path) -> None:
    cert, _ = self_signed(tmp_path)
    done = devtool("serve", "--tls-cert", str(cert), "--db", str(tmp_path / "s.db"))
    assert done.returncode == 2
    assert "--tls-cert and --tls-key go together" in done.stderr
    wrong = devtool("serve", "--tls-cert", str(cert), "--tls-key", str(cert), "--db", str(tmp_path / "s.db"))
    assert wrong.returncode == 2
    assert "cannot use them" in wrong.stderr
    assert wrong.stderr.strip().count("\n") == 0


CHILD = """
import os, subprocess, sys
from devtool.store.private_files import private_files, user_umask
os.umask(0o022)
private_files()
open(sys.argv[1], "w").close()
subprocess.run([sys.executable, "-c", "open(%r, 'w').close()" % sys.argv[2]], umask=user_umask(), check=True)
"""


def test_a_store_process_writes_private_files_and_its_children_the_users(tmp_path: Path) -> None:
    ours, agents = tmp_path / "store-side", tmp_path / "agent-side"
    subprocess.run([sys.executable, "-c", CHILD, str(ours), str(agents)], env=child_env(), check=True, timeout=60)
    assert stat.S_IMODE(ours.stat().st_mode) == 0o600
    assert stat.S_IMODE(agents.stat().st_mode) == 0o644  # a replayed agent's files keep the user's umask
