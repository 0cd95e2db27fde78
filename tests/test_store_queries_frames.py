"""The frame tree: what a person thinks in, a page at a time, with counts for what is not loaded."""

from __future__ import annotations

import pytest

from devtool.store import NotFoundError, Store, append_events, load_file
from devtool.store.queries import FrameNode, frame_tree
from tests.conftest import CORPUS, Trace


def outline(node: FrameNode) -> object:
    """(kind, name, children...) all the way down what was loaded."""
    if not node.children:
        return (node.kind, node.name)
    return (node.kind, node.name, [outline(child) for child in node.children])


def test_agent_generation_turn_tools_and_tool_results(store: Store) -> None:
    load_file(store, CORPUS / "rejelly" / "nested.trace.jsonl")
    tree = frame_tree(store, "dfc19ffa56c7ceafc8c61ea1cd2faea9", depth=10)
    assert tree.root_count == 1
    researcher = [
        ("generation", "generation 0", [
            ("turn", "turn 0"),
            ("tools:execute", "search", [("tool", "search")]),
            ("turn", "turn 1"),
        ]),
    ]  # fmt: skip
    assert outline(tree.nodes[0]) == (
        "runWith", "runWith", [
            ("agent", "orchestrator", [
                ("generation", "generation 0", [
                    ("agent", "researcher", researcher),
                    ("agent", "researcher", researcher),
                    ("agent", "writer", [
                        ("generation", "generation 0", [("turn", "turn 0")]),
                        ("generation", "generation 1", [
                            ("turn", "turn 0"),
                            ("tools:execute", "word_count", [("tool", "word_count")]),
                            ("turn", "turn 1"),
                        ]),
                    ]),
                    ("turn", "turn 0"),
                ]),
            ]),
        ],
    )  # fmt: skip
    tool = tree.nodes[0].children[0].children[0].children[0].children[0].children[1].children[0]
    assert (tool.call_id, tool.content_hash, tool.cache, tool.status) == (
        "call_s_rust",
        "1a4f5c256dbe85",
        False,
        "completed",
    )
    turn = tree.nodes[0].children[0].children[0].children[0].children[0].children[0]
    assert turn.content_hash == "ef4367f661e06"


def test_call_ids_and_failed_tool_results(store: Store) -> None:
    t = Trace()
    agent = t.start("agent", agentId="worker", callId="root/agent:worker:0")
    tools = t.start("tools:execute", agent, callId="root/agent:worker:0")
    results = [
        {"callId": "root/agent:worker:0/tool:search:0", "toolName": "search", "success": True, "duration": 4},
        {"callId": "root/agent:worker:0/tool:search:1", "toolName": "search", "success": False,
         "error": {"name": "ToolError", "message": "timeout"}},
    ]  # fmt: skip
    t.end(tools, success=False, toolResults=results)
    t.end(agent)
    append_events(store, t.events)
    (root,) = frame_tree(store, t.trace_id).nodes
    assert root.call_id == "root/agent:worker:0"
    (batch,) = root.children
    assert [(r.call_id, r.status, r.error) for r in batch.children] == [
        ("root/agent:worker:0/tool:search:0", "completed", None),
        ("root/agent:worker:0/tool:search:1", "failed", "timeout"),
    ]
    assert batch.children[0].duration_ms == 4


@pytest.fixture
def wide(store: Store) -> tuple[Trace, str, list[str]]:
    """One orchestrator generation with 120 workers, each with a turn."""
    t = Trace()
    agent = t.start("agent", agentId="orchestrator")
    generation = t.start("generation", agent)
    workers = []
    for index in range(120):
        worker = t.start("agent", generation, agentId="worker", callId=f"root/agent:worker:{index}")
        t.end(t.start("turn", worker))
        t.end(worker)
        workers.append(worker)
    t.end(generation)
    t.end(agent)
    append_events(store, t.events)
    return t, generation, workers


def test_a_large_branch_comes_a_page_at_a_time(store: Store, wide: tuple[Trace, str, list[str]]) -> None:
    t, generation, workers = wide
    (root,) = frame_tree(store, t.trace_id, depth=2, page_size=50).nodes
    (gen,) = root.children
    assert gen.child_count == 120
    assert [w.span_id for w in gen.children] == workers[:50]
    assert gen.more == 70
    assert all(w.collapsed and w.child_count == 1 for w in gen.children)  # below the depth asked for
    (page,) = frame_tree(store, t.trace_id, span_id=generation, depth=1, page_size=50, offset=100).nodes
    assert page.children_offset == 100
    assert [w.span_id for w in page.children] == workers[100:]
    assert page.more == 0


def test_the_node_budget_bounds_the_answer(store: Store, wide: tuple[Trace, str, list[str]]) -> None:
    t, _, _ = wide
    (root,) = frame_tree(store, t.trace_id, depth=10, page_size=1000, max_nodes=60).nodes

    def count(node: FrameNode) -> int:
        return 1 + sum(count(child) for child in node.children)

    assert count(root) == 60
    gen = root.children[0]
    assert gen.child_count == 120
    assert len(gen.children) == 58
    assert gen.more == 62


def test_unknown_runs_and_spans(store: Store, wide: tuple[Trace, str, list[str]]) -> None:
    with pytest.raises(NotFoundError, match="no run 'nope'"):
        frame_tree(store, "nope")
    with pytest.raises(NotFoundError, match="no span 'nope'"):
        frame_tree(store, wide[0].trace_id, span_id="nope")


def test_sibling_agents_of_one_id_carry_their_call_index_and_props(store: Store) -> None:
    t = Trace()
    root = t.start("agent", agentId="lead", callId="root/agent:lead:0", props={"question": "which language?"})
    generation = t.start("generation", root, generationId=0)
    topics = ["rust", "go", "a topic long enough to be cut short in the tree"]
    for index, topic in enumerate(topics):
        call_id = f"root/agent:lead:0/agent:researcher:{index}"
        researcher = t.start("agent", generation, agentId="researcher", callId=call_id, props={"topic": topic, "n": 2})
        t.end(researcher)
    writer = t.start("agent", generation, agentId="writer", callId="root/agent:lead:0/agent:writer:0", props={})
    t.end(writer)
    t.end(generation)
    t.end(root)
    append_events(store, t.events)
    (lead,) = frame_tree(store, t.trace_id, depth=3).nodes
    children = lead.children[0].children
    assert lead.twin is False
    assert lead.props is None  # an agent of its own id needs no telling apart
    researchers = [child for child in children if child.agent_id == "researcher"]
    assert [node.call_index for node in researchers] == [0, 1, 2]
    assert all(node.twin for node in researchers)
    assert [node.props for node in researchers][:2] == ['topic="rust", n=2', 'topic="go", n=2']
    assert researchers[2].props is not None
    assert researchers[2].props.startswith('topic="a topic long enough')
    assert "…" in researchers[2].props
    (writer_node,) = [child for child in children if child.agent_id == "writer"]
    assert (writer_node.twin, writer_node.props) == (False, None)
