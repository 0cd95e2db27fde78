"""Factories for the web tests: real agent runs recorded to JSONL and loaded into a store."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser as HTMLParser
from selectolax.lexbor import LexborNode as Node
from starlette.testclient import TestClient

from devtool.core import CoreError, JsonlSink, run_with
from devtool.store import Store, derive, load_file
from devtool.store.event_gate import VALID_SQL
from devtool.store.event_sql import insert_events_sql
from devtool.store.queries.navigation import search_spans


def record(
    store: Store,
    folder: Path,
    fn: Callable[[], Awaitable[Any]],
    *,
    name: str = "run",
    snapshot: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> str:
    """Run `fn` under `run_with` into `<folder>/<name>.jsonl`, load that file, return the trace id."""
    path = folder / f"{name}.jsonl"
    with JsonlSink(path) as sink, contextlib.suppress(CoreError):
        asyncio.run(run_with(fn, sinks=[sink], snapshot=snapshot, metadata=metadata))
    return load_file(store, path).traces[0]


def html(text: str) -> HTMLParser:
    return HTMLParser(text)


def one(tree: HTMLParser | Node, selector: str) -> Node:
    found = tree.css(selector)
    assert len(found) == 1, f"{selector!r} matched {len(found)} elements"
    return found[0]


def span_of(store: Store, trace_id: str, text: str, kind: str) -> str:
    """The first span of `kind` in the run whose text matches `text`."""
    hits = [hit for hit in search_spans(store, trace_id, text) if hit.kind == kind]
    assert hits, f"no {kind} matching {text!r}"
    return hits[0].span_id


def rewind(client: TestClient, trace_id: str, span_id: str, anchor: str) -> str:
    """Rewind the run at the span (`POST /runs/<id>/rewind`); the new snapshot's id."""
    response = client.post(f"/runs/{trace_id}/rewind", data={"span_id": span_id, "anchor": anchor})
    assert response.status_code == 303, response.text
    location = response.headers["location"]
    assert location.startswith("/snapshots/")
    return location.removeprefix("/snapshots/")


def store_unchecked(store: Store, events: list[dict[str, Any]]) -> None:
    """Store `events` as a store written before the event gate had its limits holds them (any time,
    any nesting), spans and runs derived as usual: what the pages must still show."""
    relation = "(SELECT $body::JSON AS body, 1 AS n)"
    with store.transaction() as conn:
        base = int(conn.execute("SELECT coalesce(max(event_id), 0) FROM events").fetchall()[0][0])
        for index, event in enumerate(events):
            sql = insert_events_sql(relation).replace(VALID_SQL, "true")
            conn.execute(sql, {"body": json.dumps(event), "source": 0, "base": base + index})
        derive.refresh(conn, base)
