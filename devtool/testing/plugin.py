"""The pytest plugin (entry point `pytest11`, name `devtool`): options, the marker, the fixture, the failure.

- `--devtool-record=once|none|new_episodes|all` (VCR's record modes; `once` by default) and
  `--devtool-url URL` (stream each cassette's run to a running DevTool; a failure ends with its link).
- `@pytest.mark.agent_cassette`: the test's body runs in its cassette's run.
- the `agent_cassette` fixture: the test's `AgentCassette`, for `with agent_cassette:` or `.run(fn)`.

A test's cassette is `__snapshots__/<module>/<test>.json` beside its file. A call a strict replay
refuses fails the test with the refusal's report alone (no traceback: the report says what changed).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest
from _pytest._code.code import ExceptionRepr

from devtool.testing.session import AgentCassette, Mode

MARKER = "agent_cassette"
CASSETTE = pytest.StashKey[AgentCassette]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("devtool", "DevTool agent cassettes")
    group.addoption(
        "--devtool-record",
        choices=[mode.value for mode in Mode],
        default=Mode.ONCE.value,
        help="once: record a missing cassette, else replay strictly (default); none: replay strictly, never "
        "call a model (CI); new_episodes: replay what matches, record what is new; all: record everything again",
    )
    group.addoption(
        "--devtool-url",
        default=None,
        metavar="URL",
        help="stream each cassette's run to the DevTool at URL; a failure ends with the link to its run",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}: run the test in its agent cassette (__snapshots__/<module>/<test>.json): "
        "its model and tool calls recorded, or replayed without calling anything",
    )


@pytest.fixture
def agent_cassette(request: pytest.FixtureRequest) -> AgentCassette:
    """The test's agent cassette: `with agent_cassette:` runs a block in its run (or `.run(fn, *args)`)."""
    return cassette_of(request.node)


def cassette_of(item: pytest.Item) -> AgentCassette:
    """The test's cassette (one per test, made on first use)."""
    found = item.stash.get(CASSETTE, None)
    if found is not None:
        return found
    config = item.config
    nodeid = item.nodeid
    test_file = Path(item.path)
    name = re.sub(r"[^\w.\[\]=-]+", "_", ".".join(nodeid.split("::")[1:]) or item.name)
    path = test_file.parent / "__snapshots__" / test_file.stem / f"{name}.json"
    made = AgentCassette(
        path,
        test=nodeid,
        mode=Mode(config.getoption("--devtool-record")),
        shown_path=_from(config.rootpath, path),
        command=_rerecord(config, nodeid),
        url=config.getoption("--devtool-url"),
    )
    item.stash[CASSETTE] = made
    return made


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    marked = item.get_closest_marker(MARKER) is not None
    try:
        if not marked:
            return (yield)
        with cassette_of(item):
            return (yield)
    except BaseException:
        refused = item.stash.get(CASSETTE, None)
        if refused is None or not refused.misses:
            raise
    # Here only when a strict replay refused a call: its report alone, raised outside the `except` (where
    # pytest would print the refusal's exception before it) and with no traceback (the report says it all).
    pytest.fail(refused.failure(), pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    used = item.stash.get(CASSETTE, None)
    link = used.link if used is not None else None
    # pytest's own way to add to a failure's text (its captured output goes there too), so it ends with the link.
    longrepr = report.longrepr
    if link is not None and report.failed and isinstance(longrepr, ExceptionRepr) and link not in str(longrepr):
        longrepr.addsection("devtool", f"the run: {link}")
    return report


def _rerecord(config: pytest.Config, nodeid: str) -> str:
    """The command that re-records this test only (from the project's root, where node ids start)."""
    command = shlex.join(["python", "-m", "pytest", nodeid, f"--devtool-record={Mode.NEW_EPISODES}"])
    if Path(config.invocation_params.dir).resolve() != config.rootpath.resolve():
        return f"cd {shlex.quote(str(config.rootpath))} && {command}"
    return command


def _from(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
