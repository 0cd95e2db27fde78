"""`create_app`: the DevTool's Starlette app, built from a store and settings, with no module-level state.

Each route module owns one URL family and exports `routes` (`devtool.web.routes`); this module puts
them together with the middleware and makes the app's state (`state.py`) once.
Endpoints that query the store are plain `def` functions: Starlette runs them in its thread pool, so
a DuckDB query never holds up the event loop (and the live streams on it).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

import anyio.to_thread
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from devtool.actions.frame_indexer import FrameIndexer
from devtool.actions.replay_runner import Replays
from devtool.store import Store
from devtool.web.assets import asset_dir
from devtool.web.auth import Access, AccessControl, Sessions
from devtool.web.errors import EXCEPTION_HANDLERS
from devtool.web.live import Live
from devtool.web.live.settled import Settled
from devtool.web.otlp_workers import Workers
from devtool.web.paths import KeepEncodedSlashes
from devtool.web.response_headers import ResponseHeaders
from devtool.web.routes import ROUTES
from devtool.web.settings import Settings
from devtool.web.state import AppState
from devtool.web.templating import load_all, make_environment


def create_app(store: Store, settings: Settings | None = None, *, otlp_workers: Workers | None = None) -> Starlette:
    """The app of `store`; `otlp_workers`: its `settings.otlp_workers` OTLP reader processes, spawned
    already (`otlp_workers.py`), which it then owns."""
    settings = settings or Settings()
    access = Access(
        settings.token,
        sessions=Sessions(settings.session_seconds),
        local=settings.local_token,
        hosts=frozenset(settings.allow_hosts),
    )
    live = Live(store, settings, spawned=otlp_workers)
    replays = Replays(root=settings.replay_root or Path.cwd(), token=settings.token)
    indexer = FrameIndexer(store, min_events=settings.rewind_index_events, interval=settings.rewind_index_interval)
    templates = make_environment()
    templates.globals["csrf_token"] = access.csrf
    templates.globals["team"] = access.token is not None

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with live.lifespan(app):
            # Before the server says it is up: the templates, and the first call into the thread pool that
            # sync endpoints run in (which imports anyio's worker machinery), not in a user's first page.
            await anyio.to_thread.run_sync(load_all, templates)
            indexer.start()
            try:
                yield
            finally:
                indexer.stop()
                replays.close()

    app = Starlette(
        routes=[*ROUTES, Mount("/static", app=StaticFiles(directory=asset_dir("static")), name="static")],
        lifespan=lifespan,
        middleware=[
            Middleware(ResponseHeaders),
            Middleware(KeepEncodedSlashes),
            Middleware(AccessControl, access=access),
            Middleware(Settled, appender=live.appender),
        ],
        exception_handlers=EXCEPTION_HANDLERS,
    )
    AppState(
        store=store,
        settings=settings,
        live=live,
        templates=templates,
        access=access,
        replays=replays,
    ).attach(app)
    return app
