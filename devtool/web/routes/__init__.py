"""The DevTool's endpoints, one module per URL family; `ROUTES` is all of them, in the order they are tried.

- `runs_list`: `/` (every run and process journal), `POST /upload`, `/live/runs`
- `run`: `/runs/<trace_id>` and everything under it (panes, rewind, actions, export, live)
- `compare`: `/compare?a=&b=` (page and JSON), and `/runs/<trace_id>/compare` redirected there
- `run_ids`: `/api/v1/runs/<id or short prefix>` (JSON: the run's whole id)
- `counterfactual`: `POST /runs/<trace_id>/fork` (one call edited: "change the past")
- `playground`: `/runs/<trace_id>/spans/<span_id>/playground` (a turn asked again, edited)
- `run_why`: `/runs/<trace_id>/cause` and `/find` (why it failed, the text inside it)
- `snapshots`: `/snapshots…` (pages, upload, fork, replay) and `/replays/<id>`
- `processes`: `/processes/<process_id>` and its rewind (and the old `/process-rewind`, redirected)
- `ingest`: `POST /api/v1/traces`
- `otlp`: `POST /v1/traces`, `POST /v1/logs` (OTLP/HTTP)
- `local`: `/api/v1/server`, `POST /api/v1/load` (the command line beside a running server)
- `login`: `/login`

Endpoints speak HTTP only: what a page shows is built in `devtool.web.pages`, what changes state is
done by `devtool.actions`.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

# The `id` path convertor must exist before any route module builds its routes (this runs before any).
from devtool.web import paths  # noqa: F401
from devtool.web.routes import (
    compare,
    counterfactual,
    ingest,
    local,
    login,
    otlp,
    playground,
    processes,
    run,
    run_ids,
    run_why,
    runs_list,
    snapshots,
)

ROUTES: list[BaseRoute] = [
    *login.routes,
    *runs_list.routes,
    *snapshots.routes,
    *processes.routes,
    *compare.routes,
    *run.routes,
    *counterfactual.routes,
    *playground.routes,
    *run_why.routes,
    *ingest.routes,
    *otlp.routes,
    *local.routes,
    *run_ids.routes,
]
