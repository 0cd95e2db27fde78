"""MLflow (`mlflow server`, SQLite) as the peers bench sees it: OTLP into its `/v1/traces`, the
experiment named by the `x-mlflow-experiment-id` header (the default experiment, 0).

Visible: its trace search (`POST /api/3.0/mlflow/traces/search`, what its traces tab reads, 500 a
page) lists every trace of the workload, each with all its spans (the trace's
`mlflow.trace.sizeStats`). One trace: its trace info (`GET /api/3.0/mlflow/traces/tr-<id>`) says so.
Opening a trace: what its trace view fetches, the trace's spans (`/ajax-api/3.0/mlflow/get-trace-artifact`).
Search: its search box's full-text filter (`trace.text ILIKE '%word%'`), every page."""

from __future__ import annotations

import json
import urllib.error
from pathlib import Path
from typing import Any

from bench.peers import process, web

NAME = "mlflow"
TITLE = "MLflow"
BIN = Path()  # the venv's bin folder, set by the runner
EXPERIMENT = "0"  # the default experiment, in every fresh store
HEADERS = {"x-mlflow-experiment-id": EXPERIMENT}


def start(data: Path) -> process.Running:
    port = process.free_port()
    command = [
        str(BIN / "mlflow"), "server", "--host", "127.0.0.1", "--port", str(port),
        "--backend-store-uri", f"sqlite:///{data / 'mlflow.db'}", "--default-artifact-root", str(data / "artifacts"),
    ]  # fmt: skip
    return process.start(command, f"http://127.0.0.1:{port}", "/", data, {"MLFLOW_TRACKING_DIR": str(data)})


def _search(running: process.Running, filter_string: str = "") -> list[dict[str, Any]]:
    traces: list[dict[str, Any]] = []
    token = None
    while True:
        body: dict[str, Any] = {
            "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": EXPERIMENT}}],
            "filter": filter_string,
            "max_results": 500,
        }
        if token:
            body["page_token"] = token
        answer = web.post_json(f"{running.url}/api/3.0/mlflow/traces/search", body)
        traces.extend(answer.get("traces", []))
        token = answer.get("next_page_token")
        if not token:
            return traces


def _spans(info: dict[str, Any]) -> int | None:
    stats = info.get("trace_metadata", {}).get("mlflow.trace.sizeStats")
    return json.loads(stats).get("num_spans") if stats else None


def visible(running: process.Running, traces: int, spans: int) -> bool:
    found = _search(running)
    complete = [info for info in found if info.get("state") == "OK"]
    return len(complete) >= traces and sum(_spans(info) or 0 for info in complete) >= spans


def trace_visible(running: process.Running, trace_id: str, spans: int) -> bool:
    try:
        info = web.get_json(f"{running.url}/api/3.0/mlflow/traces/tr-{trace_id}")["trace"]["trace_info"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise
    return bool(info.get("state") == "OK" and _spans(info) == spans)


def open_trace(running: process.Running, trace_id: str) -> int:
    """The trace's spans, as its trace view fetches them; the bytes answered."""
    return len(web.get(f"{running.url}/ajax-api/3.0/mlflow/get-trace-artifact?request_id=tr-{trace_id}"))


def search(running: process.Running, word: str) -> int:
    return len(_search(running, f"trace.text ILIKE '%{word}%'"))
