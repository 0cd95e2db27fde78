"""The frame tree the run page shows: the first levels of a run, opened down to the selected span.

The store loads a tree a page at a time (`frame_tree`); this module asks for the top levels and,
when a span is selected, for the one page of children at each level that holds the next step of
the path to it, and grafts those pages in. The selected span is then in the tree, whatever page of
whatever branch it is on.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

from devtool.store import NotFoundError, Store
from devtool.store.queries import FrameNode, FrameTree, frame_tree
from devtool.store.queries.navigation import PathStep, frame_path

PAGE_SIZE = 50
OPEN_DEPTH = 3


def run_tree(store: Store, trace_id: str, selected: str | None = None) -> tuple[FrameTree, list[PathStep]]:
    """The tree of a run, opened `OPEN_DEPTH` levels and down to `selected`; and the path to it."""
    path: list[PathStep] = []
    if selected is not None:
        try:
            path = frame_path(store, trace_id, selected.split("#", 1)[0])
        except NotFoundError:
            path = []
    root_offset = path[0].index // PAGE_SIZE * PAGE_SIZE if path else 0
    tree = frame_tree(store, trace_id, depth=OPEN_DEPTH, page_size=PAGE_SIZE, offset=root_offset)
    nodes = tree.nodes
    for parent, child in itertools.pairwise(path):
        nodes = _graft(nodes, parent.span_id, child, store, trace_id)
    if selected and "#" in selected and path:
        nodes = _graft(nodes, path[-1].span_id, PathStep(selected, int(selected.rsplit("#", 1)[1])), store, trace_id)
    return replace(tree, nodes=nodes), path


def children_page(store: Store, trace_id: str, span_id: str, offset: int) -> FrameNode:
    """One span with a page of its children (each opened one level, to show what they hold)."""
    tree = frame_tree(store, trace_id, span_id=span_id, depth=2, page_size=PAGE_SIZE, offset=offset)
    return tree.nodes[0]


def _graft(
    nodes: tuple[FrameNode, ...], parent_id: str, child: PathStep, store: Store, trace_id: str
) -> tuple[FrameNode, ...]:
    """`nodes` with `parent_id`'s loaded children replaced by the page that holds `child`, if needed."""
    grafted = []
    for node in nodes:
        if node.span_id == parent_id:
            if not any(c.span_id == child.span_id for c in node.children):
                offset = child.index // PAGE_SIZE * PAGE_SIZE
                # Loaded on its own, the node cannot tell it has twins: it keeps what its siblings said.
                node = replace(children_page(store, trace_id, parent_id, offset), twin=node.twin, props=node.props)
        elif node.children:
            node = replace(node, children=_graft(node.children, parent_id, child, store, trace_id))
        grafted.append(node)
    return tuple(grafted)
