"""An OTLP JSON file loaded by `devtool load` holds what the same requests posted to `/v1/traces` hold.

The file is mapped in SQL (`otlp_sql.py`); a posted request is mapped in Python
(`formats/otlp_map.py`). The file is the bench's realistic one (`bench/gen_otlp.py`: the three
conventions, 512 spans a line): both stores must hold the same runs, spans and events, text for text.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx2
import orjson
import pytest

from bench.gen_otlp import generate
from devtool.store import Store
from devtool.store.load import load_file
from devtool.web import create_app
from devtool.web.settings import Settings
from devtool.web.state import AppState

SPANS = 3_000  # 6 lines


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def contents(store: Store) -> tuple[list[tuple[object, ...]], Counter[str], list[tuple[object, ...]]]:
    """The runs, the events' texts, and the spans of `store`."""
    runs = store.query(
        "SELECT trace_id, name, status, events, spans, prompt_tokens, completion_tokens FROM runs ORDER BY trace_id"
    )
    events = Counter(body for (body,) in store.query("SELECT body FROM events"))
    spans = store.query(
        "SELECT trace_id, span_id, parent_span_id, kind, name, status, error FROM spans ORDER BY trace_id, span_id"
    )
    return runs, events, spans


@pytest.mark.anyio
async def test_a_files_load_equals_its_requests_posted_live(tmp_path: Path) -> None:
    path = tmp_path / "spans.otlp.jsonl"
    generate(path, spans=SPANS, seed=3)
    loaded = Store(tmp_path / "loaded.duckdb")
    result = load_file(loaded, path)
    assert result.events == 2 * SPANS

    live = Store(tmp_path / "live.duckdb")
    app = create_app(live, Settings(otlp_workers=0))
    reader = AppState.of(app).live.otlp_reader
    try:
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://devtool") as client:
            for line in path.read_bytes().splitlines():
                answer = await client.post("/v1/traces", content=line, headers={"content-type": "application/json"})
                assert (answer.status_code, answer.json()) == (200, {})
            assert (await client.get("/")).status_code == 200  # the derive of what was posted
    finally:
        reader.close()

    runs, events, spans = contents(loaded)
    assert contents(live) == (runs, events, spans)
    assert sum(events.values()) == 2 * SPANS
    assert len(spans) == SPANS
    assert sum(int(str(run[4])) for run in runs) == result.spans
    names = {orjson.loads(body)["type"] for body in events}
    assert {"agent:start", "turn:end", "tools:execute:end"} <= names
    loaded.close()
    live.close()
