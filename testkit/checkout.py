"""The environment of a child process that runs the code under test: this checkout's `devtool`.

A child started as `python -m devtool` (or a script that imports it) in a temporary folder finds
`devtool` where the venv's editable install points, which need not be the checkout the tests come
from (another worktree, an older one). With this checkout first on `PYTHONPATH`, it is always the
code the tests are testing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def child_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """`env` (default: this process's environment) with this checkout first on `PYTHONPATH`."""
    merged = dict(os.environ if env is None else env)
    paths = [str(CHECKOUT), *(p for p in merged.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(CHECKOUT))]
    merged["PYTHONPATH"] = os.pathsep.join(paths)
    return merged
