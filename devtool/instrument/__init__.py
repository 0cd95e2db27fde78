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
- `pydantic_ai()`, `openai_agents()`, `langchain()` (LangChain and LangGraph): that framework recorded
  whole, with no decorator: its agents as frames named by the framework's own names, its tool calls
  journaled (a replay returns their recorded output and does not run them): `frameworks/`.
- `install()`: every SDK and framework installed (`installed_sdks()`; a framework is instrumented when
  the program imports it, not imported here), and, when `DEVTOOL_URL` or `DEVTOOL_TRACE` is set, a run
  of the whole process from then to its exit, sent there (none inside a run, or in `devtool run`'s
  import of its module); a `record` called in it is a run of its own, not part of it.
- `record`, `agent`, `tool` (also `devtool.record`, `devtool.agent`, `devtool.tool`): a run around
  existing code, plain functions as agent frames and journaled tool calls (`recording.py`,
  `functions.py`).

Importing this package imports no SDK or framework: `openai()`, `pydantic_ai()`... import theirs.
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
    "installed",
    "installed_sdks",
    "langchain",
    "openai",
    "openai_agents",
    "pydantic_ai",
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


def pydantic_ai() -> bool:
    """Record Pydantic AI's agent runs (frames named by `Agent(name=)`) and tool calls (journaled).
    False if it was already instrumented; `SdkMissingError` if it is not installed."""
    _require("pydantic_ai", "pydantic-ai")
    from devtool.instrument.frameworks.pydantic_ai import instrument

    return instrument()


def openai_agents() -> bool:
    """Record the OpenAI Agents SDK's runs (frames named by `Agent.name`, handoffs inside) and function
    tool calls (journaled), as `pydantic_ai()` does."""
    _require("agents", "openai-agents")
    from devtool.instrument.frameworks.openai_agents import instrument

    return instrument()


def langchain() -> bool:
    """Record LangChain tool calls (journaled) and LangGraph graph runs (frames named by the graph's
    `name`), as `pydantic_ai()` does."""
    _require("langchain_core", "langchain-core")
    from devtool.instrument.frameworks.langchain import instrument

    return instrument()


FRAMEWORKS = (("pydantic_ai", pydantic_ai), ("agents", openai_agents), ("langchain_core", langchain))


def install() -> list[str]:
    """Instrument every SDK and framework that is installed (their names: a framework as the program
    imports it), and start the process's run when `DEVTOOL_URL` or `DEVTOOL_TRACE` says where to send it
    (not inside a run, nor as `devtool run` imports its entrypoint): a `record` in it is a run of its own."""
    done = installed()
    start_process_run()
    return done


def installed() -> list[str]:
    """Instrument every SDK and framework that is installed, and only that: their names (a framework is
    instrumented when the program imports it, here if it did already)."""
    from devtool.instrument.frameworks import when_imported

    done = installed_sdks()
    for module, wrap in FRAMEWORKS:
        if importlib.util.find_spec(module) is not None:
            when_imported(module, wrap)
            done.append(module)
    return done


def _require(module: str, package: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise SdkMissingError(f"{package} is not installed: pip install {package}")


def installed_sdks() -> list[str]:
    """Instrument every SDK that is installed, and only that: their names."""
    done = []
    for name, wrap in (("openai", openai), ("anthropic", anthropic)):
        if importlib.util.find_spec(name) is not None:
            wrap()
            done.append(name)
    return done
