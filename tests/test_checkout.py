"""Child processes in the tests run the code under test: this checkout's `devtool`, from any folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.checkout import CHECKOUT, child_env

WHERE = "import devtool, devtool.testing.plugin; print(devtool.__file__); print(devtool.testing.plugin.__file__)"


def test_a_child_in_another_folder_imports_this_checkout(tmp_path: Path) -> None:
    stripped = child_env({"PATH": "/usr/bin:/bin", "PYTHONPATH": "/nowhere"})
    for env in (child_env(), stripped):
        done = subprocess.run(
            [sys.executable, "-c", WHERE], capture_output=True, text=True, cwd=tmp_path, env=env, check=True
        )
        assert [Path(line).resolve().is_relative_to(CHECKOUT) for line in done.stdout.splitlines()] == [True, True]
    assert stripped["PYTHONPATH"] == f"{CHECKOUT}:/nowhere"
