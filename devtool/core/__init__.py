"""The core snapshot library: agents, prompts and tools that record and replay their runs.

Everything here runs inside `run_with`: each step becomes trace events (for sinks) and, with
snapshots on, a journal of input→output keyed by content hash, so `dump_snapshot()` can capture a
run and `run_with(fn, snapshot=...)` can replay it without calling the model or the tools again.
This package imports nothing of the web app.
"""

from __future__ import annotations

from devtool.core.agents import Agent, create_agent
from devtool.core.errors import (
    CoreError,
    ModelError,
    OutsideRunError,
    PromptError,
    RestoreError,
    SnapshotDisabledError,
    SnapshotError,
    ToolError,
    is_snapshot_disabled_error,
)
from devtool.core.events import EVENTS, TraceEvent
from devtool.core.frame import current_trace_id, memory
from devtool.core.http_sink import HttpSink
from devtool.core.model import Message, Model, ModelReply, ScriptedModel
from devtool.core.prompting import prompt
from devtool.core.replayable import is_replayable, replayable
from devtool.core.run import run_with
from devtool.core.sinks import JsonlSink, MemorySink
from devtool.core.snapshot import AgentSnapshot
from devtool.core.tools import Tool, ToolCall, create_tool

__all__ = [
    "EVENTS",
    "Agent",
    "AgentSnapshot",
    "CoreError",
    "HttpSink",
    "JsonlSink",
    "MemorySink",
    "Message",
    "Model",
    "ModelError",
    "ModelReply",
    "OutsideRunError",
    "PromptError",
    "RestoreError",
    "ScriptedModel",
    "SnapshotDisabledError",
    "SnapshotError",
    "Tool",
    "ToolCall",
    "ToolError",
    "TraceEvent",
    "create_agent",
    "create_tool",
    "current_trace_id",
    "is_replayable",
    "is_snapshot_disabled_error",
    "memory",
    "prompt",
    "replayable",
    "run_with",
]
