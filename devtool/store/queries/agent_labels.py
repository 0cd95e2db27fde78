"""What tells parallel agents apart on the timeline: each agent span's `#n` and its props, short.

Three `researcher` bars side by side say nothing; `researcher #1 · topic="rust"` does. `#n` is the
agent call's number among its parent's calls of that agent (its callId's last seq, as the frame
tree and `core.call_names` show it); the props are its start event's, summarised as the tree does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from devtool.store import list_param
from devtool.store.database import Store
from devtool.store.queries.events import event_fields
from devtool.store.queries.frames import props_summary

MAX_AGENTS = 400  # agent bars labelled in one drawing (a drawing holds at most a few thousand bars)


@dataclass(frozen=True, slots=True)
class AgentLabel:
    call_index: int | None
    props: str | None

    @property
    def text(self) -> str:
        """`#1 · topic="rust"`."""
        parts = [f"#{self.call_index}"] if self.call_index is not None else []
        return " · ".join([*parts, *([self.props] if self.props else [])])


def agent_labels(store: Store, trace_id: str, agents: Mapping[str, float]) -> dict[str, AgentLabel]:
    """The labels of agent spans of run `trace_id` (at most 400), by span id: `agents` maps each to its
    start (ms), as the timeline's bar of it says."""
    wanted = sorted(agents)[:MAX_AGENTS]
    if not wanted:
        return {}
    cursor = store.reader()
    # By start as well as by id: span ids are random, so the ids alone are a join that reads every span
    # of the run (DuckDB 1.5: 0.03-0.04 s of CPU at a million events); the starts bound the read to the
    # row groups that hold them (`spans` is in time order).
    rows = cursor.execute(
        "SELECT span_id, call_id, start_event_id FROM spans WHERE trace_id = $trace AND kind = 'agent' "
        f"AND start_ts IN (SELECT unnest({list_param.of('starts', 'DOUBLE')})) "
        f"AND span_id IN (SELECT unnest({list_param.of('spans')}))",
        {
            "trace": trace_id,
            "starts": list_param.values(agents[span] for span in wanted),
            "spans": list_param.values(wanted),
        },
    ).fetchall()
    props = event_fields(cursor, [r[2] for r in rows if r[2] is not None], "$.props")
    labels = {}
    for span_id, call_id, start_event_id in rows:
        seq = (call_id or "").rsplit(":", 1)[-1]
        summary = props_summary(props.get(start_event_id)) if start_event_id is not None else None
        labels[span_id] = AgentLabel(int(seq) if seq.isdigit() else None, summary)
    return labels
