"""The runs page: every run in the store, or an honest word that there is none yet."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from devtool.store.queries import list_runs
from devtool.web.templating import render


def runs_page(request: Request) -> HTMLResponse:
    runs = list_runs(request.app.state.store)
    return render(request, "runs.html", {"runs": runs}, fragment="_runs_table.html")


routes = [Route("/", runs_page, name="runs")]
