"""The DevTool web app: Starlette, server-rendered with htmx. HTTP only, in rooms by kind of code:

- `routes/`: the endpoints, one module per URL family; `pages/`: what each page shows (no HTTP);
  `live/`: live intake (ingest, `--follow`) and its fan-out over SSE.
- `app.py` (`create_app`), `state.py` (`state(request)`), the middleware (`auth`, `paths`,
  `response_headers`), and `templating`, `filters`, `links`, `forms`, `errors`, `assets`, `settings`.
- `otlp_read.py`: an OTLP body read (decoded, mapped, gated), all that the OTLP reader's workers
  import; `otlp_workers.py`: those processes, which `devtool serve` spawns first.

What changes state (rewind, fork, replay) is `devtool.actions`; the web layer only calls it.

`create_app` is imported on first use, not with the package: a process that imports one module of it
(a spawned OTLP worker, `otlp_read.py`; the command line's `hosts`) does not import the whole app.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from devtool.web.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from devtool.web.app import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
