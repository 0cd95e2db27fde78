"""The TypeScript library `@rejelly/core` 0.1.0, run by Node for the interop tests.

`vendor/rejelly-core/` is that library's build (Apache-2.0, its LICENSE beside it; it is not on the
npm registry); `package.json` installs it with its two dependencies into `node_modules/` here, which
`make node` (`scripts/ensure_node.py`) does before the tests. Each `*.mjs` here is one program that
reads JSON on stdin and writes JSON on stdout: `scenario.mjs` (a rejelly agent run, optionally
streamed to a review endpoint or replayed from a snapshot), `accepts.mjs` (does its `runWith` accept a
snapshot), `restore.mjs` (its `restoreSnapshot` over a trace, with the warnings it printed).

A machine without Node or without the installed packages makes `run` fail with what to do: the
interop tests never skip.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
INSTALLED = HERE / "node_modules" / "@rejelly" / "core" / "dist" / "index.js"


class NodeUnavailableError(RuntimeError):
    """Node or the installed packages are missing: `make node` installs them."""


def node() -> str:
    found = shutil.which("node")
    if found is None:
        raise NodeUnavailableError("node is not installed: run `make node` (Debian's nodejs, as root)")
    if not INSTALLED.exists():
        raise NodeUnavailableError(f"{INSTALLED} is missing: run `make node` (npm install in {HERE})")
    return found


def run(script: str, payload: Any, *, timeout: float = 60) -> dict[str, Any]:
    """Run `HERE/script` with `payload` as JSON on stdin; its stdout parsed. Fails loudly on a crash."""
    done = subprocess.run(
        [node(), str(HERE / script)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=HERE,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"node {script} exited {done.returncode}: {done.stderr.decode()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result
