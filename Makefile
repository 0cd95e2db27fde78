# The two commands of the README: `make demo` and `make test`. Both create .venv once and
# install what they need into it, so they work on a fresh machine.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
SOURCES := $(wildcard devtool tests e2e bench scripts examples testkit)

.PHONY: demo test setup chromium node postgres lint unit e2e bench docs

# A bare Debian has python3 without ensurepip (the python3-venv package): as root, install it.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV) || { rm -rf $(VENV) \
		&& { apt-get install -y python3-venv || { apt-get update && apt-get install -y python3-venv; }; } \
		&& python3 -m venv $(VENV); }
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(VENV)/bin/devtool demo

chromium: setup
	$(PY) scripts/ensure_chromium.py

# Node and @rejelly/core's packages, for the interop tests (never skipped: this fails loudly instead).
node: setup
	$(PY) scripts/ensure_node.py

# Debian's PostgreSQL, for the lake's tests (each starts a throw-away cluster of its own).
postgres: setup
	$(PY) scripts/ensure_postgres.py

lint: setup
	$(VENV)/bin/ruff check $(SOURCES)
	$(VENV)/bin/ruff format --check $(SOURCES)
	$(VENV)/bin/mypy

unit: setup node postgres
	$(PY) -m pytest tests

e2e: chromium node postgres
	$(PY) -m pytest e2e

test: setup chromium node postgres lint docs
	$(PY) -m pytest tests e2e

# The docs site (docs/, mkdocs.yml) into site/, strictly: a broken link or a missing page fails it. Its
# CLI page is written from devtool.cli's parsers at each build (scripts/gen_cli_docs.py), never stale.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
