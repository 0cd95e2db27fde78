"""Imports point one way (DESIGN.md's layer table, as `MAY_IMPORT`); core, formats and journal skip the web
stack, actions and instrument skip it too, and the web layer's page builders speak no HTTP; the model SDKs are
imported only by the adapters (`devtool/core/providers/`) and the instrumentation (`devtool/instrument/`),
and only when a model of theirs is used or their instrumentation is asked for; `import devtool` is light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

WEB_STACK = {"duckdb", "starlette", "jinja2", "sse_starlette", "uvicorn", "httpx", "multipart"}
LAYERS = ["core", "formats", "journal", "instrument", "testing", "demo", "store", "actions", "web", "cli"]
# Which of our layers each layer may import (besides itself); DESIGN.md's "Layers" table says the same.
MAY_IMPORT: dict[str, set[str]] = {
    "core": set(),
    "formats": {"core"},
    "journal": {"core"},
    "instrument": {"core"},
    "testing": {"core", "instrument"},
    "demo": {"core", "journal"},
    "store": {"core", "journal", "formats"},
    "actions": {"core", "journal", "store"},
    "web": {"core", "journal", "formats", "store", "actions"},
    "cli": set(LAYERS) - {"cli"},
}
# Layers that import nothing of the web stack: what a user who only records agents installs, and
# the actions, which the web layer calls and which leave storage to the store.
NO_WEB_STACK = ("core", "formats", "journal", "actions", "instrument", "testing")
# Page-data builders: no HTTP, no templates.
PAGES_REFUSE = {"starlette", "jinja2", "sse_starlette"}
SDKS = {"openai", "anthropic"}
# Where an SDK may be imported (by name, when asked): the adapters and the instrumentation.
SDK_HOMES = (REPO / "devtool" / "core" / "providers", REPO / "devtool" / "instrument")


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
    if package.is_dir():
        return sorted(package.rglob("*.py"))
    module = REPO / "devtool" / f"{layer}.py"
    return [module] if module.exists() else []


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "devtool" and len(parts) > 1 and parts[1] in LAYERS else None


def test_the_table_names_every_layer_and_nothing_else() -> None:
    assert set(MAY_IMPORT) == set(LAYERS)
    present = {p.name for p in (REPO / "devtool").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert present <= set(LAYERS), f"a package that no layer names: {present - set(LAYERS)}"


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_only_the_layers_it_may(layer: str) -> None:
    allowed = MAY_IMPORT[layer] | {layer}
    offences = []
    for path in _layer_files(layer):
        for module in _imports(path):
            other = _layer_of(module)
            if other is not None and other not in allowed:
                offences.append(f"{path.relative_to(REPO)} imports {module}")
            if layer in NO_WEB_STACK and module.split(".")[0] in WEB_STACK:
                offences.append(f"{path.relative_to(REPO)} imports the web stack: {module}")
            if module.split(".")[0] in SDKS and not any(path.is_relative_to(home) for home in SDK_HOMES):
                offences.append(f"{path.relative_to(REPO)} imports a model SDK: {module}")
    assert offences == []


def test_page_builders_speak_no_http() -> None:
    offences = [
        f"{path.relative_to(REPO)} imports {module}"
        for path in sorted((REPO / "devtool" / "web" / "pages").rglob("*.py"))
        for module in _imports(path)
        if module.split(".")[0] in PAGES_REFUSE
        or module.startswith(("devtool.web.routes", "devtool.web.live", "devtool.web.templating"))
    ]
    assert offences == []


def test_importing_core_and_journal_loads_no_web_stack_and_no_model_sdk() -> None:
    banned = sorted(WEB_STACK | SDKS)
    probe = (
        "import sys, devtool.core, devtool.journal, devtool.core.providers, devtool.instrument;"
        f"print(sorted(m for m in {banned!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_devtool_is_light_and_its_decorators_come_when_used() -> None:
    probe = (
        "import sys, devtool; loaded = sorted(m for m in sys.modules if m.startswith('devtool.')"
        f" or m.split('.')[0] in {sorted(WEB_STACK | SDKS)!r}); print(loaded);"
        "print(devtool.record.__module__, devtool.tool.__module__, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["[]", "devtool.instrument.recording devtool.instrument.functions False"]


@pytest.mark.parametrize(
    "module", ["devtool.web.settings", "devtool.web.routes", "devtool.web.live", "devtool.web.otlp_read", "devtool.web"]
)
def test_a_web_module_imports_first_in_a_process(module: str) -> None:
    # `devtool.web`'s `__init__` imports no module of it (an OTLP worker imports `otlp_read` alone), so
    # none may count on another having been imported before it.
    subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=True)


def test_instrumenting_an_sdk_imports_that_sdk_only() -> None:
    probe = (
        "import sys, devtool.instrument; devtool.instrument.anthropic();"
        "print('anthropic' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]


def test_naming_a_model_imports_its_sdk_only() -> None:
    probe = (
        "import sys; from devtool.core import create_agent;"
        "create_agent('a', lambda p: p, model='anthropic:claude-haiku-4-5');"
        "print('anthropic' in sys.modules, 'openai' in sys.modules)"
    )
    env = {"ANTHROPIC_API_KEY": "unused", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["True", "False"]


def test_the_checks_catch_an_offence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import duckdb\nfrom devtool.web import create_app\nfrom devtool.web.routes import run\n")
    assert _imports(bad) == {"duckdb", "devtool.web", "devtool.web.routes"}
    assert _layer_of("devtool.web.routes") == "web"
    assert _layer_of("devtool.actions.fork") == "actions"
    assert _layer_of("devtool") is None
    assert "web" not in MAY_IMPORT["actions"]
