"""The DevTool web app: Starlette views over the store, server-rendered with htmx."""

from __future__ import annotations

# The `id` path convertor must exist before any view module builds its routes.
from devtool.web import paths  # noqa: F401
from devtool.web.app import create_app

__all__ = ["create_app"]
