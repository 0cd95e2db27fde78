"""How to start a live run into this DevTool: the three ways, as lines a person copies (the runs page's hint).

Shell lines are built with `shlex`, so the URL (whatever host the page was asked on) is quoted as a
shell would need it; the Python line takes it as a string literal.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

DEMO_ENTRYPOINT = "devtool.demo.research:main"  # the bundled demo agent: runs with nothing installed


@dataclass(frozen=True)
class LiveHint:
    run: str  # a shell line: the demo agent, streamed here
    record: str  # Python: a block of the user's own agent, streamed here
    otlp: str  # a shell line: where an OpenTelemetry exporter sends its spans


def live_hint(base_url: str) -> LiveHint:
    """The lines for a DevTool served at `base_url` (no trailing slash)."""
    return LiveHint(
        run=shlex.join(["devtool", "run", DEMO_ENTRYPOINT, "--to", base_url]),
        record=f"with devtool.record({'my-agent'!r}, to={base_url!r}):",
        otlp=f"export OTEL_EXPORTER_OTLP_ENDPOINT={shlex.quote(base_url)}",
    )
