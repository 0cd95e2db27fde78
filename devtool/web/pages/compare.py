"""The compare page's data: two runs' calls as one tree, opened on the first divergence.

The comparison itself is `devtool.actions.compare` (the JSON answer and `devtool diff` ask it too);
this arranges it for the page: the chosen call's differences (the first divergence unless `?call=`
names another), the differing calls downstream of it, and the tree of calls, where every frame on
the path to a difference is open and the rest folded. A small run shows every call; a big one its
differing calls and the frames above them, so the page stays small.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from devtool.actions.compare import Comparison, Details, Difference, compare, details
from devtool.core.call_names import agent_of, call_name
from devtool.store import Store
from devtool.store.call_prints import CACHED, LIVE

SHOWN_DIFFERENCES = 300
DOWNSTREAM_SHOWN = 40


@dataclass
class CallNode:
    """A call in the tree: its name, kind, the fields that differ (none: the same in both runs)."""

    call_id: str
    name: str
    kind: str
    fields: tuple[str, ...] = ()
    children: list[CallNode] = field(default_factory=list)
    served: tuple[int, int] = (0, 0)  # run B's model and tool calls in this frame: from the journal, and live
    open: bool = False  # on the path to a difference
    first: bool = False
    chosen: bool = False


@dataclass(frozen=True)
class CompareView:
    comparison: Comparison
    chosen: Details | None
    downstream: tuple[Difference, ...]
    downstream_more: int
    tree: CallNode
    whole: bool  # every call is in the tree (else only the differing ones and their frames)

    @property
    def first(self) -> Difference | None:
        return self.comparison.first


def compare_view(store: Store, a: str, b: str, call: str | None = None) -> CompareView:
    """Runs `a` and `b` (whole ids) compared, for the page; `call` picks the differing call to open."""
    comparison = compare(store, a, b)
    differences = comparison.differences
    chosen_difference = next((d for d in differences if d.call_id == call), None) if call else None
    chosen_difference = chosen_difference or comparison.first
    chosen = details(store, comparison, chosen_difference) if chosen_difference else None
    after = [d for d in differences if chosen_difference is not None and d.order > chosen_difference.order]
    whole = comparison.calls is not None
    every = comparison.calls or ()
    call_ids = [call_id for call_id, _ in every] if whole else [d.call_id for d in differences[:SHOWN_DIFFERENCES]]
    fields = {d.call_id: d.fields for d in differences}
    served = _served_by_frame(every)
    tree = _tree(call_ids, fields, comparison.first, chosen_difference, served)
    return CompareView(
        comparison,
        chosen,
        tuple(after[:DOWNSTREAM_SHOWN]),
        max(0, len(after) - DOWNSTREAM_SHOWN),
        tree,
        whole,
    )


def _tree(
    call_ids: list[str],
    fields: dict[str, tuple[str, ...]],
    first: Difference | None,
    chosen: Difference | None,
    served_by_frame: dict[str, tuple[int, int]],
) -> CallNode:
    root = CallNode("root", call_name("root"), "run", fields.get("root", ()))
    nodes = {"root": root}

    def node(call_id: str) -> CallNode:
        if call_id in nodes:
            return nodes[call_id]
        parent_id = call_id.rsplit("/", 1)[0] if "/" in call_id else "root"
        parent = node(parent_id)
        # In the tree a call sits under its agent: "turn #0", not "turn #0 in writer #0".
        name = call_name(call_id).removesuffix(f" in {call_name(agent_of(parent_id))}")
        made = CallNode(call_id, name, _kind(call_id), fields.get(call_id, ()))
        parent.children.append(made)
        nodes[call_id] = made
        return made

    for call_id in sorted(call_ids, key=_tree_order):
        node(call_id)
    for frame, served in served_by_frame.items():
        if frame in nodes:
            nodes[frame].served = served
    for call_id, found in nodes.items():
        found.first = first is not None and call_id == first.call_id
        found.chosen = chosen is not None and call_id == chosen.call_id
        if found.fields:
            _open_path(nodes, call_id)
    # The run and its top agents are open whatever differs: a tree folded to one line hides what was compared.
    for top in (root, *root.children):
        top.open = True
    return root


def _served_by_frame(calls: tuple[tuple[str, int], ...]) -> dict[str, tuple[int, int]]:
    """Per agent frame: run B's own model and tool calls in it served from the journal, and run live."""
    counts: dict[str, list[int]] = {}
    for call_id, served in calls:
        if served in (CACHED, LIVE):
            frame = agent_of(call_id.rsplit("/", 1)[0])
            counts.setdefault(frame, [0, 0])[0 if served == CACHED else 1] += 1
    return {frame: (cached, live) for frame, (cached, live) in counts.items()}


def _open_path(nodes: dict[str, CallNode], call_id: str) -> None:
    """Open every frame above `call_id` (and itself), so the difference is in view."""
    while True:
        nodes[call_id].open = True
        if "/" not in call_id:
            return
        call_id = call_id.rsplit("/", 1)[0]


def _tree_order(call_id: str) -> list[tuple[str, int]]:
    """`…/agent:worker:10` after `…/agent:worker:9`: each step's seq compared as a number."""
    steps = []
    for step in call_id.split("/"):
        head, _, seq = step.rpartition(":")
        steps.append((head, int(seq)) if seq.isdigit() else (step, -1))
    return steps


def _kind(call_id: str) -> str:
    return call_id.rsplit("/", 1)[-1].split(":", 1)[0]
