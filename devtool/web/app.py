"""`create_app`: the DevTool's Starlette app, built from a store, with no module-level state."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from devtool.store import Store
from devtool.web.assets import asset_dir
from devtool.web.templating import make_environment
from devtool.web.views import runs


def create_app(store: Store) -> Starlette:
    app = Starlette(
        routes=[
            Route("/", runs.runs_page, name="runs"),
            Mount("/static", app=StaticFiles(directory=asset_dir("static")), name="static"),
        ],
    )
    app.state.store = store
    app.state.templates = make_environment()
    return app
