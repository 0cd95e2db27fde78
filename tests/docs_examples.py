"""The Markdown code examples the docs tests run: fenced blocks by language, and one run in a fresh process."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

DOCS = REPO / "docs"


def blocks(text: str, language: str) -> list[str]:
    """The fenced ```language blocks of a Markdown text, in order (indented ones too, dedented)."""
    found = re.findall(rf"^( *)```{language}\n(.*?)^\1```", text, re.S | re.M)
    return ["".join(line.removeprefix(indent) for line in code.splitlines(keepends=True)) for indent, code in found]


def page(name: str) -> str:
    return (DOCS / name).read_text()


def run_example(code: str, folder: Path, name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run one example as its own script in `folder`, as a reader who pasted it into `name` would."""
    script = folder / name
    script.write_text(code)
    return subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True, text=True, env=env)
