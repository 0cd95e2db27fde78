"""Arize Phoenix (`phoenix serve`, SQLite under its working folder) as the peers bench sees it.

Visible: the projects list of its GraphQL API (what its UI's home page reads) counts every trace and
every span of the workload (`traceCount`, `recordCount`). One trace: the project's
`trace(traceId) { numSpans }` has all its spans. Opening a trace: the trace view's query, the span
tree's first page of 1,000 spans (the UI pages the rest). Search: the spans table's filter
condition, `'word' in attributes[['gen_ai', 'output', 'messages']]` (Phoenix keeps attributes nested
by their dots; its `output.value`, which it fills from `gen_ai.*` for other shapes, stays empty
here), every page of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.peers import process, web

NAME = "phoenix"
TITLE = "Phoenix"
BIN = Path()  # the venv's bin folder, set by the runner
HEADERS: dict[str, str] = {}


def start(data: Path) -> process.Running:
    port = process.free_port()
    env = {
        "PHOENIX_PORT": str(port),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_GRPC_PORT": str(process.free_port()),  # not 4317: another engineer's may hold it
        "PHOENIX_WORKING_DIR": str(data),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    return process.start([str(BIN / "phoenix"), "serve"], f"http://127.0.0.1:{port}", "/", data, env)


def _query(running: process.Running, query: str, **variables: Any) -> Any:
    answer = web.post_json(f"{running.url}/graphql", {"query": query, "variables": variables})
    if answer.get("errors"):
        raise RuntimeError(f"Phoenix GraphQL: {answer['errors']}")
    return answer["data"]


def _projects(running: process.Running, fields: str, **variables: Any) -> list[dict[str, Any]]:
    head = "query(" + ", ".join(f"${k}: {t}" for k, (t, _) in variables.items()) + ")" if variables else "query"
    data = _query(
        running,
        f"{head} {{ projects {{ edges {{ node {{ id {fields} }} }} }} }}",
        **{k: v for k, (_, v) in variables.items()},
    )
    return [edge["node"] for edge in data["projects"]["edges"]]


def visible(running: process.Running, traces: int, spans: int) -> bool:
    nodes = _projects(running, "traceCount recordCount")
    return bool(sum(n["traceCount"] for n in nodes) >= traces and sum(n["recordCount"] for n in nodes) >= spans)


def complete(running: process.Running, traces: int, spans: int) -> bool:
    """Nothing more to check once visible: its counts are of spans already."""
    return True


def trace_visible(running: process.Running, trace_id: str, spans: int) -> bool:
    nodes = _projects(running, "trace(traceId: $t) { numSpans }", t=("ID!", trace_id))
    return any((n["trace"] or {}).get("numSpans") == spans for n in nodes)


def open_trace(running: process.Running, trace_id: str) -> int:
    """The span tree's first page, as the trace view asks it; the spans it answered."""
    fields = (
        "trace(traceId: $t) { numSpans spans(first: 1000) { edges { node { id name spanKind statusCode"
        " startTime latencyMs parentId tokenCountTotal context { spanId } } } } }"
    )
    nodes = _projects(running, fields, t=("ID!", trace_id))
    return sum(len(n["trace"]["spans"]["edges"]) for n in nodes if n["trace"])


def search(running: process.Running, word: str) -> int:
    condition = f"'{word}' in attributes[['gen_ai', 'output', 'messages']]"
    found: set[str] = set()
    for node in _projects(running, "name"):
        after = None
        while True:
            data = _query(
                running,
                "query($id: ID!, $c: String, $after: String) { node(id: $id) { ... on Project {"
                " spans(first: 1000, after: $after, filterCondition: $c) { pageInfo { hasNextPage endCursor }"
                " edges { node { context { traceId } } } } } } }",
                id=node["id"],
                c=condition,
                after=after,
            )
            spans = data["node"]["spans"]
            found.update(edge["node"]["context"]["traceId"] for edge in spans["edges"])
            if not spans["pageInfo"]["hasNextPage"]:
                break
            after = spans["pageInfo"]["endCursor"]
    return len(found)
