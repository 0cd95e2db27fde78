"""The application state of one DevTool server: what `create_app` makes once and every request reads.

`state(request)` is the one way in (also from middleware, which sees the request before routing), so
a reader and mypy can follow `state(request).live.appender.append` to its method. Nothing here is a
module global: two apps in one process (tests do it) each have their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.requests import HTTPConnection

if TYPE_CHECKING:
    import jinja2
    from starlette.applications import Starlette

    from devtool.actions.replay_runner import Replays
    from devtool.store import Store
    from devtool.web.auth import Access
    from devtool.web.live import Live
    from devtool.web.settings import Settings


@dataclass(frozen=True)
class AppState:
    """Everything a request may need of its server, each made once by `create_app`."""

    store: Store
    settings: Settings
    live: Live  # live intake and fan-out: the appender, the broker, the file followers
    templates: jinja2.Environment
    access: Access  # who may do what: the team token and the per-server token
    replays: Replays  # the replay children this server started

    def attach(self, app: Starlette) -> None:
        app.state.devtool = self

    @classmethod
    def of(cls, app: Starlette) -> AppState:
        found = app.state.devtool
        assert isinstance(found, cls), "the app was not made by devtool.web.create_app"
        return found


def state(request: HTTPConnection) -> AppState:
    """The state of the app serving `request`."""
    return AppState.of(request.app)
