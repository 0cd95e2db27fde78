"""`devtool serve`: run the DevTool on a local port, or render one page with `--get`."""

from __future__ import annotations

import argparse
import dataclasses
import errno
import functools
import ipaddress
import os
import secrets
import signal
import socket
import sys
import threading
import webbrowser
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devtool.cli.errors import CliError
from devtool.cli.lake import add_lake_options, attach
from devtool.cli.load import add_load_options, load_files
from devtool.cli.options import add_db_option, open_store
from devtool.cli.server_file import announced

if TYPE_CHECKING:
    from devtool.web.otlp_workers import Workers

DEFAULT_PORT = 8484
# A server stays up for hours beside the user's other programs, and DuckDB's cache grows to whatever
# limit it has. At 640 MiB a server building a ten-million-event run's rewind index peaks under 1 GiB
# with its children (~1.35 GiB at a load's 1 GiB), its pages and live appends as fast; what it costs
# is a few percent more time for a big load through it (BENCHMARKS.md, issue 21).
MEMORY_LIMIT = "640MiB"
MAX_OTLP_WORKERS = 64


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("serve", help="start the DevTool web app")
    parser.add_argument("files", nargs="*", type=Path, metavar="FILES", help="trace or journal files to load first")
    add_db_option(parser, memory_limit=MEMORY_LIMIT)
    add_load_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)")
    parser.add_argument("--open", action="store_true", help="open the DevTool in a browser")
    parser.add_argument("--get", metavar="PATH", help="render PATH in-process, print it and exit (no socket)")
    parser.add_argument(
        "--follow",
        action="append",
        type=Path,
        default=[],
        metavar="PATH.jsonl",
        help="tail a trace file an agent is writing, streaming its events live (repeatable)",
    )
    parser.add_argument(
        "--otlp-workers",
        type=int,
        default=1,
        metavar="N",
        help="processes that read OTLP exports (POST /v1/traces), beside the server's (default 1; 0 reads "
        "them in the server's own threads)",
    )
    parser.add_argument(
        "--live-interval",
        type=float,
        metavar="SECONDS",
        help="at most one live message a page every SECONDS, and the spans of live events derived at most "
        "that often (default 0.1; a page of one finished run derives that run at once)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("DEVTOOL_TOKEN") or None,
        help="a team token every request must carry; needed to serve on any address but loopback "
        "(default: $DEVTOOL_TOKEN, which keeps it out of `ps`)",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name requests may address this server by besides its own address (repeatable; for a "
        "container or proxy that reaches it as NAME); other names get 421, against DNS rebinding",
    )
    parser.add_argument(
        "--tls-cert", type=Path, metavar="CERT.pem", help="serve HTTPS with this certificate (PEM; with --tls-key)"
    )
    parser.add_argument("--tls-key", type=Path, metavar="KEY.pem", help="the certificate's private key (PEM)")
    add_lake_options(parser, serve=True)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port {args.port} is not a port number (0-65535)")
    if args.live_interval is not None and not 0 < args.live_interval <= 86400:
        raise CliError(f"--live-interval {args.live_interval:g} is not from 0 (excluded) to 86400 seconds")
    if not 0 <= args.otlp_workers <= MAX_OTLP_WORKERS:
        raise CliError(f"--otlp-workers {args.otlp_workers} is not from 0 to {MAX_OTLP_WORKERS}")
    if args.get is None and not _is_loopback(args.host) and not args.token:
        raise CliError(
            f"refusing to serve on {args.host} without a team token (only loopback, 127.0.0.1 or ::1, is "
            "served without one): the DevTool shows agent prompts and data and runs replays, so anyone who "
            "can reach that address could too. Make a token with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'` and start it as "
            f"`DEVTOOL_TOKEN=<token> devtool serve --host {args.host}` (or pass --token <token>); "
            "teammates sign in with the token, agents send it as `DEVTOOL_TOKEN` too"
        )
    token = args.token if args.get is None else None
    if token is not None:
        from devtool.web.auth import TokenTooShortError, check_token

        try:
            check_token(token)
        except TokenTooShortError as exc:
            raise CliError(str(exc)) from None
    from devtool.web.hosts import allowed_name

    try:
        allow_hosts = tuple(allowed_name(name) for name in args.allow_host)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    tls = _tls(args.tls_cert, args.tls_key)
    for path in args.follow:
        if path.exists() and not path.is_file():
            raise CliError(f"--follow {path}: not a file (a trace file an agent writes, one JSON event a line)")
    if args.lake_compact_every < 0:
        raise CliError(f"--lake-compact-every {args.lake_compact_every:g} is negative (0: never compact)")
    from devtool.web.otlp_workers import Workers

    # A page printed in-process (`--get`) reads no exports: it starts no worker. Spawned first, the
    # workers start (~0.4 s) beside the server's own start, not after it (`otlp_workers.py`).
    workers = 0 if args.get is not None else args.otlp_workers
    spawned = Workers(workers) if workers else None
    try:
        return _start(args, token=token, allow_hosts=allow_hosts, tls=tls, spawned=spawned)
    finally:
        if spawned is not None:
            spawned.close()  # the app's, once it ran (nothing left to do then)


def _start(
    args: argparse.Namespace,
    *,
    token: str | None,
    allow_hosts: tuple[str, ...],
    tls: tuple[str, str] | None,
    spawned: Workers | None,
) -> int:
    """Open the store, load the files given, and serve the app (or print its page: `--get`)."""
    store = open_store(args)
    try:
        lake = attach(store, args)
    except BaseException:
        store.close()
        raise
    if args.files:
        # Loaded before the server starts, reported on stderr: stdout's first line is the URL.
        totals = load_files(
            store, args.files, bad_lines=args.bad_lines, progress=args.progress, out=sys.stderr, command="serve"
        )
        print(totals.summary(), file=sys.stderr)
        if totals.failed:
            store.close()
            return 2
    from devtool.web import create_app
    from devtool.web.settings import Settings

    local_token = secrets.token_urlsafe(32)
    settings = Settings(
        follow=tuple(args.follow),
        token=token,
        local_token=local_token,
        otlp_workers=spawned.count if spawned is not None else 0,
        allow_hosts=allow_hosts,
    )
    if args.live_interval is not None:
        settings = dataclasses.replace(settings, live_interval=args.live_interval)
    app = create_app(store, settings, otlp_workers=spawned)
    worker = None
    if lake is not None and args.get is None:
        from devtool.store.lake import LakeWorker

        worker = LakeWorker(store, lake, compact_every=args.lake_compact_every)
        worker.start()
    try:
        if args.get is not None:
            return _print_page(app, args.get)
        sock = _bind(args.host, args.port)
        scheme = "https" if tls else "http"
        url = _url(sock, scheme)
        # Beside the database, for `devtool load` and `devtool export` while this server owns it
        # (written before the URL is printed: whoever waits for that line finds the file too).
        with announced(store.path, _local_url(sock, scheme), local_token):
            _serve(app, sock, tls, up=functools.partial(_say_up, url, team=token is not None, browse=args.open))
    finally:
        if worker is not None:
            worker.stop()
        store.close()
    return 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that say they are TCP. With it on, a
    # keep-alive response written in two parts (headers, body) waited ~40 ms for the browser's delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CliError(f"port {port} on {host} is already in use: pick another with --port") from exc
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
    return sock


def _tls(cert: Path | None, key: Path | None) -> tuple[str, str] | None:
    """The certificate and key files of `--tls-cert`/`--tls-key` (None: plain HTTP), both checked now."""
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise CliError("--tls-cert and --tls-key go together: the certificate (PEM) and its private key (PEM)")
    import ssl

    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        raise CliError(f"--tls-cert {cert} --tls-key {key}: cannot use them ({exc.strerror or exc})") from None
    return str(cert), str(key)


def _url(sock: socket.socket, scheme: str) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}/"


def _local_url(sock: socket.socket, scheme: str) -> str:
    """How the command line on this machine reaches the server: by loopback when it listens on all
    addresses, else at the address it listens on."""
    host, port = sock.getsockname()[:2]
    if ipaddress.ip_address(host).is_unspecified:
        host = "127.0.0.1" if ":" not in host else "::1"
    shown = f"[{host}]" if ":" in host else host
    return f"{scheme}://{shown}:{port}/"


def _say_up(url: str, *, team: bool, browse: bool) -> None:
    """Say where the server is (stdout's first line, which scripts and the benchmarks wait for)."""
    print(f"DevTool at {url}", flush=True)
    if team:
        print("team token required: open the link and sign in with it", file=sys.stderr, flush=True)
    if browse:
        threading.Thread(target=webbrowser.open, args=[url], name="devtool-browser", daemon=True).start()


def _serve(app: Any, sock: socket.socket, tls: tuple[str, str] | None, *, up: Callable[[], None]) -> None:
    """Serve `app` on `sock` until told to stop, calling `up` once it answers at once: its start done
    (the app's lifespan: the OTLP worker ready, which `run` spawned before the rest of the start; the
    templates loaded; the indexer started). Said before that, a fresh server's first
    request waited out the rest of the start (a Rewind of 0.14 s took 1.07-1.24 s; BENCHMARKS.md).
    A start that fails says nothing: it exits with its error."""
    import uvicorn

    from devtool.web.collector import quiet_collector

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if not self.should_exit:
                up()

    # uvicorn shuts down on SIGTERM, then raises the signal again once it has, for the handler it found:
    # ending with SystemExit there lets the caller's cleanup run (its server file, the database's close)
    # where the default handler would kill the process on the spot.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    quiet_collector()

    cert, key = tls or (None, None)
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="on", ssl_certfile=cert, ssl_keyfile=key
    )
    Server(config).run(sockets=[sock])


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _print_page(app: Any, path: str) -> int:
    from devtool.web.inprocess import get

    status, body = get(app, path)
    sys.stdout.write(body.decode("utf-8", errors="replace"))
    if status >= 400:
        print(f"devtool serve: GET {path} answered {status}", file=sys.stderr)
        return 1
    return 0
