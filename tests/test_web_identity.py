"""An event's identity across formats (issue 42): a run loaded native and as its own OTLP export, in
any order and through any door, holds its events, tokens and cost once; its own export, in any
format, adds nothing to it. Against `create_app` and real DuckDB files."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import orjson
import pytest

from devtool.store import Store, load_file
from devtool.store.queries import get_run
from devtool.web import create_app
from devtool.web.settings import Settings
from devtool.web.state import AppState
from tests.conftest import Trace


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def priced_run() -> Trace:
    """A run with a priced turn, a tool batch of two calls with a point inside it, and an instant."""
    t = Trace()
    root = t.start("agent", agentId="planner", props={"goal": "Lyon"})
    model = {"id": "gpt-4o-mini", "provider": "openai"}
    turn = t.start("turn", root, model=model, messages=[{"role": "user", "content": "a train to Lyon"}])
    t.end(
        turn,
        message={"role": "assistant", "content": "booking"},
        usage={"promptTokens": 1200, "completionTokens": 80},
        costs={"micro_usd": 228.0},
        success=True,
    )
    tools = t.start("tools:execute", root, toolNames=["find", "book"])
    t.point("sys:log", root, span=tools, message="inside the batch")
    results = [
        {"toolName": name, "input": {"to": "Lyon"}, "output": "ok", "success": True} for name in ("find", "book")
    ]
    t.end(tools, toolResults=results, success=True)
    t.point("budget:update", root, remaining=3)
    t.end(root, success=True, result="booked")
    return t


def written(path: Path, events: list[dict[str, Any]]) -> Path:
    # Spaced as a hand-written file is (not as the store's writer writes JSON): the text is the identity.
    path.write_text("".join(json.dumps(event) + "\n" for event in events))
    return path


def totals(store: Store, trace_id: str) -> tuple[int, int, int, float | None]:
    run = get_run(store, trace_id)
    stored = int(store.query("SELECT count(*) FROM events WHERE trace_id = ?", [trace_id])[0][0])
    return stored, run.prompt_tokens, run.completion_tokens, run.cost_micro_usd


class Door:
    """One store behind a live app: its pages, its exports and its doors."""

    def __init__(self, store: Store, client: httpx2.AsyncClient) -> None:
        self.store, self.client = store, client

    async def derived(self, trace_id: str) -> tuple[int, int, int, float | None]:
        assert (await self.client.get("/")).status_code == 200  # a page derives what ingest left pending
        return totals(self.store, trace_id)

    async def export(self, trace_id: str, name: str) -> bytes:
        answer = await self.client.get(f"/runs/{trace_id}/{name}")
        assert answer.status_code == 200
        return answer.content

    async def post_otlp(self, lines: bytes) -> None:
        for line in lines.splitlines():
            answer = await self.client.post("/v1/traces", content=line, headers={"content-type": "application/json"})
            assert (answer.status_code, answer.json()) == (200, {})


@pytest.fixture(params=[0, 1], ids=["read-in-the-server", "read-in-a-worker"])
async def doors(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    opened: list[tuple[Store, httpx2.AsyncClient, Any]] = []

    async def open_door(name: str) -> Door:
        store = Store(tmp_path / f"{name}.duckdb")
        app = create_app(store, Settings(otlp_workers=request.param, otlp_small_body=0))
        client = httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool")
        opened.append((store, client, AppState.of(app).live.otlp_reader))
        return Door(store, client)

    yield open_door
    for store, client, reader in opened:
        await client.aclose()
        reader.close()
        store.close()


@pytest.mark.anyio
async def test_a_runs_own_exports_loaded_back_in_any_format_add_nothing(doors: Any, tmp_path: Path) -> None:
    t = priced_run()
    first = await doors("first")
    load_file(first.store, written(tmp_path / "run.jsonl", t.events))
    alone = await first.derived(t.trace_id)
    assert alone == (len(t.events), 1200, 80, 228.0)
    otlp = await first.export(t.trace_id, "export.otlp.jsonl")
    native = await first.export(t.trace_id, "export.jsonl.gz")
    await first.post_otlp(otlp)  # the OTLP export, posted as an exporter would
    (tmp_path / "run.otlp.jsonl").write_bytes(otlp)
    assert load_file(first.store, tmp_path / "run.otlp.jsonl").events == 0  # and loaded as a file
    (tmp_path / "export.jsonl").write_bytes(gzip.decompress(native))
    load_file(first.store, tmp_path / "export.jsonl")  # the very file: known by its digest too
    assert await first.derived(t.trace_id) == alone
    # The native export is the events' texts as they were loaded.
    assert gzip.decompress(native) == (tmp_path / "run.jsonl").read_bytes()

    # OTLP first (posted), native after: the same run, once.
    second = await doors("second")
    await second.post_otlp(otlp)
    otlp_only = await second.derived(t.trace_id)
    assert otlp_only == (len(t.events) - 1, 1200, 80, 228.0)  # all but the point inside the tool batch
    assert load_file(second.store, tmp_path / "run.jsonl").events == 1
    assert await second.derived(t.trace_id) == alone

    # OTLP first (a file), native after (posted to the live door as the same texts would not be:
    # the live door writes its own text, so the native export file stands for it here).
    third = await doors("third")
    load_file(third.store, tmp_path / "run.otlp.jsonl")
    load_file(third.store, tmp_path / "export.jsonl")
    assert await third.derived(t.trace_id) == alone
    # Exported again from there, its OTLP export is the same as the first store's.
    assert await third.export(t.trace_id, "export.otlp.jsonl") == otlp


@pytest.mark.anyio
async def test_a_span_carrying_events_of_another_trace_is_refused(doors: Any) -> None:
    t = priced_run()
    door = await doors("one")
    other = orjson.dumps({**t.events[0], "trace": {**t.events[0]["trace"], "traceId": "f" * 32}}).decode()
    span = {
        "traceId": t.trace_id,
        "spanId": "a" * 16,
        "name": "forged",
        "startTimeUnixNano": "1790000000000000000",
        "endTimeUnixNano": "1790000000001000000",
        "attributes": [{"key": "devtool.events", "value": {"stringValue": orjson.dumps([other]).decode()}}],
    }
    good = {**span, "spanId": "b" * 16, "attributes": []}
    document = {"resourceSpans": [{"scopeSpans": [{"spans": [span, good]}]}]}
    answer = await door.client.post(
        "/v1/traces", content=orjson.dumps(document), headers={"content-type": "application/json"}
    )
    partial = answer.json()["partialSuccess"]
    assert partial["rejectedSpans"] == 1
    assert "devtool.events holds an event of another trace than its span's" in partial["errorMessage"]
