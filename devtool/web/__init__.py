"""The DevTool web app: Starlette views over the store, server-rendered with htmx."""

from __future__ import annotations

from devtool.web.app import create_app

__all__ = ["create_app"]
