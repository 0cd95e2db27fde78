"""A call's name for people, from its callId: `tool fetch_page in researcher #1`, not a path of ids.

A callId is `${parentCallId}/${kind}:${configId}:${seq}` (`Frame.next_call_id`), so it already says
what the call is and where: its last step names it, the nearest agent above it says where. `#n` is
the step's `seq`, the call's number among its parent's calls of that kind and config (the frame
tree shows the same `#n`), so the three parallel `researcher`s read `#0`, `#1`, `#2`.
"""

from __future__ import annotations

ROOT = "root"


def call_name(call_id: str) -> str:
    """`researcher #1`, `tool fetch_page in researcher #1`, `turn #0 in writer #0`, `the run`."""
    steps = [_step(part) for part in call_id.split("/")[1:]] if call_id.startswith(ROOT) else []
    if not steps or None in steps:
        return "the run" if call_id == ROOT else call_id
    kind, config, seq = steps[-1]  # type: ignore[misc]
    if kind == "agent":
        own = _agent(config, seq)
    elif kind == "turn":
        own = f"turn #{seq}"  # its config is the model, which the turn's detail shows
    else:
        own = f"{kind} {config}" + (f" #{seq}" if seq != "0" else "")
    agents = [_agent(c, s) for k, c, s in steps[:-1] if k == "agent"]  # type: ignore[misc]
    return f"{own} in {agents[-1]}" if kind != "agent" and agents else own


def agent_of(call_id: str) -> str:
    """The agent call (or the run) a call was made in, itself if it is one: `…/agent:r:0/prompt:m:0/turn:m:1`
    → `…/agent:r:0`."""
    while "/" in call_id and not call_id.rsplit("/", 1)[-1].startswith("agent:"):
        call_id = call_id.rsplit("/", 1)[0]
    return call_id


def _agent(config: str, seq: str) -> str:
    return f"{config} #{seq}"


def _step(part: str) -> tuple[str, str, str] | None:
    """`tool:fetch_page:0` → (`tool`, `fetch_page`, `0`); a config may hold `:` (`turn:openai:gpt-4:0`)."""
    kind, _, rest = part.partition(":")
    config, _, seq = rest.rpartition(":")
    return (kind, config, seq) if kind and config and seq.isdigit() else None
