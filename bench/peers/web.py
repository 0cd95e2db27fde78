"""HTTP for the peers bench: GETs and JSON POSTs with the standard library, and the OTLP posting
connection (one kept-alive connection, as an exporter holds)."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit


def get(url: str, headers: dict[str, str] | None = None, timeout: float = 600) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as answer:
        return bytes(answer.read())


def get_json(url: str, timeout: float = 600) -> Any:
    return json.loads(get(url, timeout=timeout))


def post_json(url: str, body: Any, timeout: float = 600) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


class OutOfTime(Exception):
    """The round's budget for a figure ran out before the system under test took the work."""


class Exporter:
    """One kept-alive connection posting OTLP protobuf bodies to `url`/v1/traces; a 429/503 or a dropped
    connection (a server's worker restarting) is retried after a pause, as the SDK's exporter does
    (each retry counted). A server that keeps answering "busy" is waited for up to PATIENCE seconds a
    body: Phoenix holds ~50,000 spans pending and answers 503 for minutes while it drains them, and the
    figure is the time until every span is visible, so a body it refused is sent again, not dropped.
    Only DROPPED failed connections in a row, with no answer between them, give up. Past `deadline`
    (a `time.monotonic()`, the round's budget) it stops with OutOfTime: the figure is then "over the
    budget", a lower bound, not a failure."""

    DROPPED = 20
    PATIENCE = 1800.0

    def __init__(self, url: str, headers: dict[str, str], deadline: float = float("inf")) -> None:
        parts = urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=600)
        self.headers = {"Content-Type": "application/x-protobuf", **headers}
        self.retries = 0
        self.deadline = deadline

    def post(self, body: bytes) -> None:
        pause, dropped, until = 0.5, 0, time.monotonic() + self.PATIENCE
        while dropped < self.DROPPED and time.monotonic() < until:
            if time.monotonic() > self.deadline:
                raise OutOfTime(f"POST /v1/traces: not taken within the budget ({self.retries} retries)")
            try:
                self.connection.request("POST", "/v1/traces", body, self.headers)
                answer = self.connection.getresponse()
                text = answer.read()
            except (ConnectionError, http.client.HTTPException):
                self.connection.close()  # the next request opens a new one
                dropped += 1
                if dropped == 1:
                    continue  # a kept-alive connection the server closed while we paused: not a retry
            else:
                dropped = 0
                if answer.status == 200:
                    return
                if answer.status not in (429, 502, 503, 504):
                    raise RuntimeError(f"POST /v1/traces answered {answer.status}: {text[:300]!r}")
            self.retries += 1
            time.sleep(pause)
            pause = min(pause * 2, 8)
        raise RuntimeError(f"POST: not taken ({dropped} connections failed in a row; {self.retries} retries)")

    def close(self) -> None:
        self.connection.close()
