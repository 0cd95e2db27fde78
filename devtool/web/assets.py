"""Where `static/` and `templates/` are: beside the package in a checkout, inside it in a wheel.

The wheel force-includes both folders as `devtool/_assets/...`; a checkout (or an editable
install) keeps them at the repository root. This module is the one place that knows both.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


class AssetsNotFoundError(RuntimeError):
    """The install is broken: neither the wheel's nor the checkout's folder exists."""


def asset_dir(name: str) -> Path:
    """The directory `static` or `templates`, wherever this install keeps it."""
    for candidate in (_PACKAGE / "_assets" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise AssetsNotFoundError(f"devtool's {name}/ folder is missing from {_PACKAGE}: reinstall devtool")


def vendored(stem: str) -> str:
    """The file name of a vendored script (`htmx` → `htmx-2.0.11.min.js`), versions in names."""
    matches = sorted((asset_dir("static") / "vendor").glob(f"{stem}-[0-9]*.min.js"))
    if len(matches) != 1:
        raise AssetsNotFoundError(f"expected one vendored {stem} script, found {len(matches)}")
    return matches[0].name
