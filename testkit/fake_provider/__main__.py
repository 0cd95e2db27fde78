"""`python -m testkit.fake_provider [--host H] [--port P] [--log FILE]`: serve the fake provider.

Its first line of output is `Fake provider at http://HOST:PORT` (with `--port 0`, a free port), once
it is listening; it serves until it is stopped (SIGTERM or Ctrl-C).
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

import uvicorn

from testkit.fake_provider.server import create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m testkit.fake_provider", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--log", type=Path, help="append one JSON line per provider request to this file")
    args = parser.parse_args(argv)
    # IPPROTO_TCP, not 0: asyncio turns Nagle off only on sockets that say they are TCP, and with it on, a
    # keep-alive answer written in two parts (headers, body) waits ~40 ms for the client's delayed ACK.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((args.host, args.port))
    listener.listen(128)
    host, port = listener.getsockname()[:2]
    config = uvicorn.Config(create_app(args.log), log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    print(f"Fake provider at http://{host}:{port}", flush=True)
    server.run(sockets=[listener])
    sys.exit(0)


if __name__ == "__main__":
    main()
