"""The DevTool's endpoints, one module per URL family; `ROUTES` is all of them, in the order they are tried.

- `runs_list`: `/` (every run and process journal), `POST /upload`, `/live/runs`
- `run`: `/runs/<trace_id>` and everything under it (panes, rewind, actions, compare, export, live)
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

from devtool.web.routes import ingest, local, login, otlp, processes, run, run_why, runs_list, snapshots

ROUTES: list[BaseRoute] = [
    *login.routes,
    *runs_list.routes,
    *snapshots.routes,
    *processes.routes,
    *run.routes,
    *run_why.routes,
    *ingest.routes,
    *otlp.routes,
    *local.routes,
]
