"""Figures the docs quote from the code, put in at every build (an MkDocs hook, `mkdocs.yml` `hooks:`).

A page writes `{{ lake_head }}` where it means the events a lake run's page waits for
(`devtool.store.lake.HEAD`), so the docs cannot fall behind the constant (they said 5,000 once it was 2,000).
"""

from __future__ import annotations

from typing import Any

from devtool.store.lake import HEAD

FIGURES = {"{{ lake_head }}": f"{HEAD:,}"}


def with_figures(markdown: str) -> str:
    """`markdown` with each figure's placeholder replaced by its value."""
    for placeholder, value in FIGURES.items():
        markdown = markdown.replace(placeholder, value)
    return markdown


def on_page_markdown(markdown: str, **_: Any) -> str:
    return with_figures(markdown)
