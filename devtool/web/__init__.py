"""The DevTool web app: Starlette, server-rendered with htmx. HTTP only, in rooms by kind of code:

- `routes/`: the endpoints, one module per URL family; `pages/`: what each page shows (no HTTP);
  `live/`: live intake (ingest, `--follow`) and its fan-out over SSE.
- `app.py` (`create_app`), `state.py` (`state(request)`), the middleware (`auth`, `paths`,
  `response_headers`), and `templating`, `filters`, `links`, `forms`, `errors`, `assets`, `settings`.

What changes state (rewind, fork, replay) is `devtool.actions`; the web layer only calls it.
"""

from __future__ import annotations

# The `id` path convertor must exist before any route module builds its routes.
from devtool.web import paths  # noqa: F401
from devtool.web.app import create_app

__all__ = ["create_app"]
