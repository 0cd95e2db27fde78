"""The DevTool's endpoints, one module per URL family; `ROUTES` is all of them, in the order they are tried.

- `runs_list`: `/` (every run and process journal), `POST /upload`, `/live/runs`
- `run`: `/runs/<trace_id>` and everything under it (panes, rewind, actions, compare, export, live)
- `snapshots`: `/snapshots…` (pages, upload, fork, replay) and `/replays/<id>`
- `processes`: `/processes/<process_id>` and its rewind (and the old `/process-rewind`, redirected)
- `ingest`: `POST /api/v1/traces`
- `login`: `/login`

Endpoints speak HTTP only: what a page shows is built in `devtool.web.pages`, what changes state is
done by `devtool.actions`.
"""

from __future__ import annotations

from starlette.routing import BaseRoute

from devtool.web.routes import ingest, login, processes, run, runs_list, snapshots

ROUTES: list[BaseRoute] = [
    *login.routes,
    *runs_list.routes,
    *snapshots.routes,
    *processes.routes,
    *run.routes,
    *ingest.routes,
]
