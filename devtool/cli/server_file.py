"""The file beside a database that says which `devtool serve` owns it, so the command line can work
through that server instead of failing on DuckDB's lock (one process writes a file).

`devtool serve --db X` writes `X.server.json` once it listens: its URL, its process id, the database
it owns and the local token (random for each start) that opens its command-line endpoints
(`devtool.web.routes.local`). The file is created readable and writable by its user only, and
removed when the server stops. `devtool load` and `devtool export` read it (`running_server`), and
use the server only when the file is the user's own and private, its process is alive, and the
server answers with the local token for that very database; a file left by a server that was
killed is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import stat
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUFFIX = ".server.json"


@dataclass(frozen=True)
class RunningServer:
    url: str  # ends with /
    token: str

    def request(self, path: str, body: Any = None) -> urllib.request.Request:
        """A request to `path` (no leading /) of this server, carrying the local token."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": f"Bearer {self.token}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        method = "POST" if data else "GET"
        return urllib.request.Request(self.url + path, data=data, headers=headers, method=method)  # noqa: S310 - http only

    def open(self, path: str, body: Any = None, timeout: float | None = None) -> Any:
        """`urlopen` of `request(path, body)`. A server on TLS (`--tls-cert`) is reached on loopback by
        the URL its own file gives, which its certificate need not name: this file, private to the
        user and naming a live process, is what says it is the right server, and the local token in
        it is only ever sent to that loopback URL."""
        request = self.request(path, body)
        return urllib.request.urlopen(request, timeout=timeout, context=self.tls())  # noqa: S310 - the file's URL

    def tls(self) -> ssl.SSLContext | None:
        """For a server on TLS, a context that takes its certificate (see `open`); None on plain HTTP."""
        if not self.url.startswith("https:"):
            return None
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context

    def json_of(self, path: str, *, not_found: str | Exception | None = None) -> Any:
        """The JSON answer of `GET path`, or a `CliError` with the server's own `{"error"}` message
        (for a 404, `not_found` when given: that error, or a `CliError` saying that)."""
        from devtool.cli.errors import CliError

        request = self.request(path)
        request.add_header("Accept", "application/json")
        try:
            with urllib.request.urlopen(request, context=self.tls()) as response:  # noqa: S310 - the file's URL
                return json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code == 404 and not_found:
                raise (not_found if isinstance(not_found, Exception) else CliError(not_found)) from None
            try:
                message = json.load(exc).get("error")
            except (ValueError, AttributeError):
                message = None
            raise CliError(message or f"the DevTool at {self.url} answered {exc.code} to /{path}") from None
        except OSError as exc:
            raise CliError(f"the DevTool at {self.url} stopped answering: {getattr(exc, 'reason', exc)}") from None


def server_file(db: Path) -> Path:
    return db.with_name(db.name + SUFFIX)


@contextlib.contextmanager
def announced(db: Path, url: str, token: str) -> Iterator[None]:
    """`db`'s server file while the block runs (a warning on stderr when it cannot be written)."""
    path = server_file(db)
    content = json.dumps({"url": url, "token": token, "pid": os.getpid(), "db": str(db.resolve())}).encode()
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(content)
        os.replace(temporary, path)
    except OSError as exc:
        print(
            f"devtool serve: cannot write {path} ({exc.strerror or exc}): `devtool load` and `devtool export` "
            "on this database will not find this server",
            file=sys.stderr,
        )
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            if _read(path).get("pid") == os.getpid():
                path.unlink()


def running_server(db: Path) -> RunningServer | None:
    """The server that owns `db`, if one is running and answers for it; else None."""
    path = server_file(db)
    try:
        info = path.stat()
    except OSError:
        return None
    # Written by this user for this user only: anything else is not a file `devtool serve` made here.
    if info.st_uid != os.getuid() or stat.S_IMODE(info.st_mode) & 0o077:
        return None
    found = _read(path)
    url, token, pid = found.get("url"), found.get("token"), found.get("pid")
    if not (isinstance(url, str) and url.startswith("http://") and isinstance(token, str)):
        return None
    if not (isinstance(pid, int) and _alive(pid)):
        return None
    server = RunningServer(url if url.endswith("/") else url + "/", token)
    try:
        with server.open("api/v1/server", timeout=5) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or answer.get("db") != str(db.resolve()):
        return None
    return server


def _read(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
