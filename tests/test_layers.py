"""Imports point one way: core → journal → demo → store → web → cli; core and journal skip the web stack;
the model SDKs are imported only by the adapters, and only when a model of theirs is used."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

WEB_STACK = {"duckdb", "starlette", "jinja2", "sse_starlette", "uvicorn", "httpx", "multipart"}
SDKS = {"openai", "anthropic"}
ADAPTERS = REPO / "devtool" / "core" / "providers"
LAYERS = ["core", "journal", "demo", "store", "web", "cli"]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _layer_files(layer: str) -> list[Path]:
    package = REPO / "devtool" / layer
    return sorted(package.rglob("*.py")) if package.is_dir() else [REPO / "devtool" / f"{layer}.py"]


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_layers_below_it(layer: str) -> None:
    above = {f"devtool.{name}" for name in LAYERS[LAYERS.index(layer) + 1 :]}
    offences = []
    for path in _layer_files(layer):
        for module in _imports(path):
            top = module.split(".")[0]
            if any(module == a or module.startswith(a + ".") for a in above):
                offences.append(f"{path.relative_to(REPO)} imports {module}")
            if layer in ("core", "journal") and top in WEB_STACK:
                offences.append(f"{path.relative_to(REPO)} imports the web stack: {module}")
            if top in SDKS and not path.is_relative_to(ADAPTERS):
                offences.append(f"{path.relative_to(REPO)} imports a model SDK: {module}")
    assert offences == []


def test_importing_core_and_journal_loads_no_web_stack_and_no_model_sdk() -> None:
    banned = sorted(WEB_STACK | SDKS)
    probe = (
        "import sys, devtool.core, devtool.journal, devtool.core.providers;"
        f"print(sorted(m for m in {banned!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_naming_a_model_imports_its_sdk_only() -> None:
    probe = (
        "import sys; from devtool.core import create_agent;"
        "create_agent('a', lambda p: p, model='anthropic:claude-haiku-4-5');"
        "print('anthropic' in sys.modules, 'openai' in sys.modules)"
    )
    env = {"ANTHROPIC_API_KEY": "unused", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "False"]


def test_the_check_catches_an_offence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import duckdb\nfrom devtool.web import create_app\n")
    assert _imports(bad) == {"duckdb", "devtool.web"}
