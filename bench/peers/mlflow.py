"""MLflow (`mlflow server`, SQLite) as the peers bench sees it: OTLP into its `/v1/traces`, the
experiment named by the `x-mlflow-experiment-id` header (the default experiment, 0).

Its OTLP handler stores a request's spans before it answers, and a trace's info carries no span count
for OTLP traces (no `mlflow.trace.sizeStats`), so: visible, its trace search
(`POST /api/3.0/mlflow/traces/search`, what its traces tab reads, 500 a page) lists every trace of
the workload in state OK; one trace, its trace info (`GET /api/3.0/mlflow/traces/tr-<id>`) is there
in state OK, and for the 10,000-span trace its spans (`GET /api/3.0/mlflow/traces/batchGet`) are all
there. Opening a trace: what its trace view fetches, the trace's spans
(`/ajax-api/3.0/mlflow/get-trace-artifact`). Search: its search box's full-text filter
(`trace.text ILIKE '%word%'`), every page."""

from __future__ import annotations

import urllib.error
from pathlib import Path
from typing import Any

from bench.peers import process, web

NAME = "mlflow"
TITLE = "MLflow"
BIN = Path()  # the venv's bin folder, set by the runner
EXPERIMENT = "0"  # the default experiment, in every fresh store
HEADERS = {"x-mlflow-experiment-id": EXPERIMENT}
SMALL = 6  # a probe's spans: stored with its one request


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


def visible(running: process.Running, traces: int, spans: int) -> bool:
    return sum(bool(info.get("state") == "OK") for info in _search(running)) >= traces


def complete(running: process.Running, traces: int, spans: int) -> bool:
    """Nothing more to check once visible: its OTLP handler stored every span before it answered."""
    return True


def trace_visible(running: process.Running, trace_id: str, spans: int) -> bool:
    try:
        info = web.get_json(f"{running.url}/api/3.0/mlflow/traces/tr-{trace_id}")["trace"]["trace_info"]
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return False
        raise
    if info.get("state") != "OK":
        return False
    if spans <= SMALL:
        return True
    found = web.get_json(f"{running.url}/api/3.0/mlflow/traces/batchGet?trace_ids=tr-{trace_id}")
    return sum(len(trace.get("spans", [])) for trace in found.get("traces", [])) >= spans


def open_trace(running: process.Running, trace_id: str) -> int:
    """The trace's spans, as its trace view fetches them; the bytes answered."""
    return len(web.get(f"{running.url}/ajax-api/3.0/mlflow/get-trace-artifact?request_id=tr-{trace_id}"))


def search(running: process.Running, word: str) -> int:
    return len(_search(running, f"trace.text ILIKE '%{word}%'"))
