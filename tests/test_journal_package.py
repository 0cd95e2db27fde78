"""`devtool.journal` imports only the standard library, orjson and `devtool.core` (and itself)."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from tests.conftest import REPO

ALLOWED = ("orjson", "devtool.core", "devtool.journal")


def outside_imports(paths: list[Path]) -> list[str]:
    found: list[str] = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                if name.split(".")[0] in sys.stdlib_module_names or name == "__future__":
                    continue
                if not any(name == allowed or name.startswith(allowed + ".") for allowed in ALLOWED):
                    found.append(f"{path.name}: {name}")
    return found


def test_the_journal_imports_only_the_standard_library_orjson_and_core() -> None:
    assert outside_imports(sorted((REPO / "devtool" / "journal").rglob("*.py"))) == []


def test_the_check_catches_anything_else(tmp_path: Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text(
        "import os, orjson\nfrom devtool.core.run import run_with\nfrom devtool.store import Store\nimport yaml\n"
    )
    assert outside_imports([module]) == ["bad.py: devtool.store", "bad.py: yaml"]
