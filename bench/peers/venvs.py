"""The peers' own virtual environments under the bench's scratch folder, installed from PyPI on first
use and reused after (never our dependencies). A venv counts as installed once its `.installed`
marker is written, after pip succeeded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# What each peer installs; the bounds are the releases this harness was written against.
SPECS = {"phoenix": "arize-phoenix>=20,<21", "mlflow": "mlflow>=3.6,<4"}


def ensure(scratch: Path, name: str) -> Path:
    """The `bin` folder of peer `name`'s venv, installing it if it is not there yet."""
    venv = scratch / "venvs" / name
    marker = venv / ".installed"
    if not marker.exists():
        print(f"installing {SPECS[name]} into {venv} (once)", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        log = venv.parent / f"{name}.log"
        with log.open("w") as out:
            done = subprocess.run(
                [str(venv / "bin" / "python"), "-m", "pip", "install", SPECS[name]],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        if done.returncode != 0:
            raise RuntimeError(f"pip install {SPECS[name]} failed: see {log}")
        version = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "show", SPECS[name].split(">")[0]],
            capture_output=True,
            text=True,
        ).stdout
        marker.write_text(version)
    return venv / "bin"


def version(scratch: Path, name: str) -> str:
    for line in (scratch / "venvs" / name / ".installed").read_text().splitlines():
        if line.startswith("Version:"):
            return line.split(":", 1)[1].strip()
    return "?"
