"""Time travel for agents written on the official SDKs and the frameworks built on them.

    import devtool.instrument
    devtool.instrument.install()            # or .openai() / .anthropic(): wrap the SDK clients
    with devtool.record("support-bot", to="http://127.0.0.1:8484"):
        run_my_agent()                       # unchanged: its requests are turns of one recorded run

- `openai()`, `anthropic()`: every client of that SDK (sync and async, streamed or not, the Chat
  Completions, Responses and Messages APIs, whatever helper or framework calls them) records each model
  request made in a recorded run as a turn, journaled under the content hash of its meaning; a run
  that replays a snapshot answers a journaled request from it, as the SDK's own objects and streams,
  with no request sent (`stainless.py`, `exchange.py`). Outside a recorded run nothing changes.
- `install()`: both (those installed: `installed_sdks()`), and, when `DEVTOOL_URL` or `DEVTOOL_TRACE`
  is set, a run of the whole process from then to its exit, sent there.
- `record`, `agent`, `tool` (also `devtool.record`, `devtool.agent`, `devtool.tool`): a run around
  existing code, plain functions as agent frames and journaled tool calls (`recording.py`,
  `functions.py`).

Importing this package imports no SDK: `openai()` and `anthropic()` import theirs.
"""

from __future__ import annotations

import importlib.util

from devtool.instrument.errors import EntrypointError, InstrumentError, SdkMissingError, StreamClosedError
from devtool.instrument.functions import agent, tool
from devtool.instrument.recording import record, start_process_run

__all__ = [
    "EntrypointError",
    "InstrumentError",
    "SdkMissingError",
    "StreamClosedError",
    "agent",
    "anthropic",
    "install",
    "installed_sdks",
    "openai",
    "record",
    "tool",
]


def openai() -> bool:
    """Record the `openai` SDK's Chat Completions and Responses requests made in recorded runs.
    False if it was already instrumented; `SdkMissingError` if it is not installed."""
    from devtool.instrument.chat_completions import ChatCompletions
    from devtool.instrument.responses import Responses
    from devtool.instrument.stainless import instrument

    return instrument("openai", (ChatCompletions(), Responses()))


def anthropic() -> bool:
    """Record the `anthropic` SDK's Messages requests made in recorded runs (as `openai()` does)."""
    from devtool.instrument.messages import Messages
    from devtool.instrument.stainless import instrument

    return instrument("anthropic", (Messages(),))


def install() -> list[str]:
    """Instrument every SDK that is installed (their names), and start the process's run when
    `DEVTOOL_URL` or `DEVTOOL_TRACE` says where to send it."""
    done = installed_sdks()
    start_process_run()
    return done


def installed_sdks() -> list[str]:
    """Instrument every SDK that is installed, and only that: their names."""
    done = []
    for name, wrap in (("openai", openai), ("anthropic", anthropic)):
        if importlib.util.find_spec(name) is not None:
            wrap()
            done.append(name)
    return done
