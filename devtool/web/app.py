"""`create_app`: the DevTool's Starlette app, built from a store and settings, with no module-level state.

Each view module owns its pages and exports `routes`; this module only puts them together.
Views that query the store are plain `def` functions: Starlette runs them in its thread pool, so a
DuckDB query never holds up the event loop (and the live streams on it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from devtool.store import Store
from devtool.web import auth, ingest, live
from devtool.web.assets import asset_dir
from devtool.web.auth import Access, AccessControl
from devtool.web.errors import EXCEPTION_HANDLERS
from devtool.web.live.settled import Settled
from devtool.web.paths import KeepEncodedSlashes
from devtool.web.replay import Replays
from devtool.web.rewind_indexer import RewindIndexer
from devtool.web.settings import Settings
from devtool.web.templating import make_environment
from devtool.web.timing import ServerTiming
from devtool.web.views import exports, process, process_rewind, replays, run, runs, snapshots, upload


def create_app(store: Store, settings: Settings | None = None) -> Starlette:
    routes: list[BaseRoute] = [
        *auth.routes,
        *runs.routes,
        *upload.routes,
        *snapshots.routes,
        *replays.routes,
        *exports.routes,
        *process_rewind.routes,
        *process.routes,
        *run.routes,
        *ingest.routes,
        *live.routes,
        Mount("/static", app=StaticFiles(directory=asset_dir("static")), name="static"),
    ]
    settings = settings or Settings()
    access = Access(settings.token)
    live_state = live.Live(store, settings)
    indexer = RewindIndexer(store, min_events=settings.rewind_index_events, interval=settings.rewind_index_interval)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with live_state.lifespan(app):
            indexer.start()
            try:
                yield
            finally:
                indexer.stop()

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(KeepEncodedSlashes),
            Middleware(ServerTiming),
            Middleware(AccessControl, access=access),
            Middleware(Settled, appender=live_state.appender),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
    )
    app.state.store = store
    app.state.settings = settings
    app.state.live = live_state
    app.state.templates = make_environment()
    app.state.templates.globals["csrf_token"] = access.csrf
    app.state.access = access
    app.state.replays = Replays(root=settings.replay_root or Path.cwd(), token=settings.token)
    return app
