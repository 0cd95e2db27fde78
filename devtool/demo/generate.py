"""Write the demo data: agent traces (JSONL) and the billing-ops process journal, into a folder."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtool.core import CoreError, JsonlSink, run_with
from devtool.core.jsonvalue import JSON
from devtool.demo import billing, failing, research


@dataclass(frozen=True)
class DemoRun:
    """One agent run of the demo, recorded with its entrypoint so the DevTool can replay it."""

    name: str
    entrypoint: str
    props: dict[str, JSON]
    main: Callable[[dict[str, Any]], Awaitable[Any]]


RUNS = (
    # A little model latency, so parallel researchers overlap on the timeline as they would for real.
    DemoRun(
        "research",
        "devtool.demo.research:main",
        {"question": research.DEFAULT_QUESTION, "delay": 0.03},
        research.main,
    ),
    DemoRun(
        "research-go-python",
        "devtool.demo.research:main",
        {"question": "Go or Python for a webhook relay?", "delay": 0.02},
        research.main,
    ),
    DemoRun("release-check", "devtool.demo.failing:main", {"release": "2026.11.3"}, failing.main),
)


async def generate(folder: Path) -> list[Path]:
    """Record every demo run and the billing-ops incident into `folder` (which must be empty or new)."""
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise FileExistsError(f"{folder} is not empty: demo data goes into a new folder")
    paths = []
    for demo in RUNS:
        path = folder / f"{demo.name}.trace.jsonl"
        # The release check fails on purpose: its trace shows how.
        with JsonlSink(path) as sink, contextlib.suppress(CoreError):
            await run_with(
                lambda demo=demo: demo.main(demo.props),  # type: ignore[misc]
                sinks=[sink],
                metadata={"entrypoint": demo.entrypoint, "props": demo.props, "demo": demo.name},
            )
        paths.append(path)
    journal, traces = await billing.run_incident(folder)
    return [*paths, *traces, journal]
