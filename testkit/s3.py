"""A throw-away S3 for the lake's tests: moto's server (`moto_server`, the `moto[server]` package) as a
real child process on a free loopback port, spoken to over plain HTTP, its buckets in its memory."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FakeS3:
    """A running moto server: its endpoint (`http://127.0.0.1:PORT`)."""

    endpoint: str

    def make_bucket(self, bucket: str) -> None:
        request = urllib.request.Request(f"{self.endpoint}/{bucket}", method="PUT")
        with urllib.request.urlopen(request, timeout=30) as response:
            assert response.status == 200

    def keys(self, bucket: str, prefix: str) -> str:
        """The bucket's listing under `prefix` (ListObjectsV2's XML)."""
        with urllib.request.urlopen(f"{self.endpoint}/{bucket}?list-type=2&prefix={prefix}", timeout=30) as response:
            return str(response.read().decode())

    def env(self) -> dict[str, str]:
        """The environment a DevTool is given to use it, as a user gives AWS's tools theirs."""
        return {
            "AWS_ACCESS_KEY_ID": "devtool-test",
            "AWS_SECRET_ACCESS_KEY": "devtool-test-secret",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": self.endpoint,
        }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def fake_s3(log: Path) -> Iterator[FakeS3]:
    """A moto server, stopped when the block ends; its output goes to `log`."""
    program = shutil.which("moto_server", path=str(Path(sys.executable).parent))
    if program is None:
        raise RuntimeError("moto_server is not installed: pip install 'moto[server]' (the dev extra)")
    port = _free_port()
    with log.open("ab") as handle:
        process = subprocess.Popen([program, "-H", "127.0.0.1", "-p", str(port)], stdout=handle, stderr=handle)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{endpoint}/", timeout=2):
                    break
            except (urllib.error.URLError, OSError):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start: {log.read_text()[-2000:]}") from None
                time.sleep(0.1)
        yield FakeS3(endpoint)
    finally:
        process.terminate()
        process.wait(timeout=30)
