"""Fixtures shared by the unit tests: factories over tmp_path, and the real `devtool` command."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"

DevtoolRunner = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def devtool(tmp_path: Path) -> DevtoolRunner:
    """Run `python -m devtool ARGS...` as a real child process, with a private data home."""

    def run(*args: str, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
        env = {"XDG_DATA_HOME": str(tmp_path / "data-home"), "PATH": "/usr/bin:/bin"}
        return subprocess.run(
            [sys.executable, "-m", "devtool", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=tmp_path,
            env=env,
            check=False,
            **kwargs,  # type: ignore[arg-type]
        )

    return run
