"""The lines that replay a run by hand, shown when the DevTool will not run it itself: a Python script
and a shell command, both runnable exactly as shown.

The entrypoint and props come from a trace, which anyone can write, so neither is pasted in as text:
the entrypoint is used only if it is `module:function` of ASCII identifiers (`replay_runner.ENTRYPOINT`,
no keyword), else the lines name a placeholder (`your_agent:main`); the props become a Python literal
(`repr` of their JSON value, which Python reads back as the same value) and, on the shell line, one
argument quoted by `shlex.quote`, as is every other word of it.

The script calls the function as `devtool run` does: with the props if it takes an argument (an agent,
a `main(props)`), else with none; a run recorded with no props at all (a `@devtool.record` script's
`main()`, whose props are `null`) calls it with none and its shell line passes no `--props`.
"""

from __future__ import annotations

import keyword
import pprint
import shlex
from dataclasses import dataclass
from typing import Any

import orjson

from devtool.actions.replay_runner import ENTRYPOINT

PLACEHOLDER = "your_agent:main"


@dataclass(frozen=True)
class ByHand:
    """The lines shown: `python` (a script) and `shell` (one command line, every word quoted)."""

    entrypoint: str
    known: bool  # the entrypoint is the run's own, not the placeholder
    python: str
    shell: str


def by_hand(entrypoint: Any, props: Any, snapshot_url: str, base_url: str, name: str | None = None) -> ByHand:
    """The lines that replay the run recorded with `entrypoint` and `props` from the snapshot at
    `snapshot_url`, streaming into the DevTool at `base_url` (the shell line naming the replay as the
    recorded run, `name`, as the Replay button does)."""
    known = _usable(entrypoint)
    spec: str = entrypoint if known else PLACEHOLDER
    module, _, function = spec.partition(":")
    lines = [
        "import asyncio",
        *(["import inspect"] if props is not None else []),
        "import json",
        "import urllib.request",
        "",
        "from devtool.core import HttpSink, run_with",
        "",
        # Imported as `main`, so no name of the script's own can shadow it.
        f"from {module} import {function}{'' if function == 'main' else ' as main'}"
        + ("  # the function this run started with" if known else "  # yours: the function this run started with"),
        "",
        f"url = {snapshot_url!r}",
        "snapshot = json.load(urllib.request.urlopen(url))  # or the downloaded file",
    ]
    if props is None:
        call = "main"
    else:
        lines.append(f"props = {pprint.pformat(props, sort_dicts=False, width=100)}")
        # `devtool run`'s rule, so the script runs whatever the function's signature.
        lines.append("call = (lambda: main(props)) if inspect.signature(main).parameters else main")
        call = "call"
    lines += [
        "",
        f"sink = HttpSink({base_url + '/api/v1/traces'!r})  # streams the replay into this DevTool",
        # The snapshot named in the metadata, as `devtool run --snapshot` names it: the DevTool then
        # knows the run is a replay, of which run, and says which calls ran live.
        f'asyncio.run(run_with({call}, snapshot=snapshot, sinks=[sink], metadata={{"snapshot": url}}))',
        "sink.close()",
    ]
    words = ["devtool", "run", spec]
    if props is not None:
        words += ["--props", orjson.dumps(props).decode()]
    words += ["--snapshot", snapshot_url, "--to", base_url]
    if name and name != function.rpartition(".")[2]:  # `devtool run` names it after the function already
        words += ["--name", name]
    return ByHand(spec, known, "\n".join(lines), " ".join(shlex.quote(word) for word in words))


def _usable(entrypoint: Any) -> bool:
    """Whether the recorded entrypoint can be written into Python and a shell as it is."""
    if not isinstance(entrypoint, str) or not ENTRYPOINT.fullmatch(entrypoint):
        return False
    return not any(keyword.iskeyword(name) for name in entrypoint.replace(":", ".").split("."))
