"""`devtool.actions.compare`: two recorded runs aligned by callId, their first divergence, word and key diffs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devtool.actions.compare import compare, details, memory_changes, narrow, summary_json, word_diff
from devtool.core import ScriptedModel, create_agent, create_tool, memory, prompt
from devtool.core.call_names import call_name
from devtool.store import NotFoundError, Store
from tests.web_runs import record


def program(fetched: str, *, style: str = "brief", extra: bool = False) -> Any:
    """A lead that runs a researcher (a tool, then a model answer built from it) and a writer."""
    fetch = create_tool("fetch_page", lambda url: {"text": fetched})

    async def researcher(props: Any) -> Any:
        page = await fetch(url=props["url"])
        memory()["seen"] = page["text"]
        return await prompt(f"Summarise: {page['text']}")

    async def writer(props: Any) -> Any:
        memory()["style"] = style
        return f"Report ({style}): {props['notes']}"

    async def lead(props: Any) -> Any:
        notes = await create_agent("researcher", researcher, model=echo())({"url": "https://example.org"})
        if extra:
            await create_agent("researcher", researcher, model=echo())({"url": "https://example.net"})
        return await create_agent("writer", writer)({"notes": notes})

    return lambda: create_agent("lead", lead)({})


def echo() -> ScriptedModel:
    return ScriptedModel(lambda messages: "The page says " + messages[-1]["content"].removeprefix("Summarise: "))


RESEARCHER = "root/agent:lead:0/agent:researcher:0"
TOOL = f"{RESEARCHER}/tool:fetch_page:0"


def test_the_same_program_twice_is_the_same(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("cats sleep all day"), name="a")
    b = record(store, tmp_path, program("cats sleep all day"), name="b")
    comparison = compare(store, a, b)
    assert comparison.same
    assert comparison.total >= 6  # root, lead, researcher, its tool and turn, writer
    assert summary_json(store, comparison) == {
        "a": a,
        "b": b,
        "firstDivergence": None,
        "differing": 0,
        "total": comparison.total,
        "downstream": [],
    }


def test_the_first_divergence_is_the_innermost_earliest_call_and_the_rest_is_downstream(
    store: Store, tmp_path: Path
) -> None:
    a = record(store, tmp_path, program("cats sleep all day"), name="a")
    b = record(store, tmp_path, program("cats hunt all night"), name="b")
    comparison = compare(store, a, b)
    first = comparison.first
    assert first is not None
    # The tool's output changed first; the researcher's turn, memory and answer, the writer and the
    # lead changed because of it: downstream.
    assert (first.call_id, first.field) == (TOOL, "output")
    assert first.name == "tool fetch_page in researcher #0"
    downstream = [d.call_id for d in comparison.differences[1:]]
    assert RESEARCHER in downstream
    assert "root/agent:lead:0" in downstream
    assert downstream.index(RESEARCHER) > 0  # its turn (inside it) comes before it
    answer = summary_json(store, comparison)["firstDivergence"]
    assert answer == {
        "callId": TOOL,
        "name": "tool fetch_page in researcher #0",
        "field": "output",
        "path": ".text",
        "a": {"text": "cats sleep all day"},
        "b": {"text": "cats hunt all night"},
    }
    words = details(store, comparison, first).fields[0].words
    assert [(p.op, p.text) for p in words] == [
        ("same", "cats "),
        ("del", "sleep"),
        ("ins", "hunt"),
        ("same", " all "),
        ("del", "day"),
        ("ins", "night"),
    ]
    researcher = next(d for d in comparison.differences if d.call_id == RESEARCHER)
    assert set(researcher.fields) == {"output", "memory"}
    (memory_diff,) = [f for f in details(store, comparison, researcher).fields if f.field == "memory"]
    assert [(k.key, k.change, k.before, k.after) for k in memory_diff.keys] == [
        ("seen", "changed", "cats sleep all day", "cats hunt all night")
    ]


def test_a_memory_edit_alone_differs_in_memory_and_downstream(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("x", style="brief"), name="a")
    b = record(store, tmp_path, program("x", style="detailed"), name="b")
    comparison = compare(store, a, b)
    first = comparison.first
    assert first is not None
    assert first.call_id == "root/agent:lead:0/agent:writer:0"
    assert first.fields == ("output", "memory")


def test_a_call_only_one_run_made_is_a_difference_of_presence(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("x"), name="a")
    b = record(store, tmp_path, program("x", extra=True), name="b")
    comparison = compare(store, a, b)
    only_b = [d for d in comparison.differences if d.fields == ("call",)]
    assert {d.call_id for d in only_b} >= {"root/agent:lead:0/agent:researcher:1"}
    assert all(d.a is None for d in only_b)
    assert comparison.calls is not None  # a small run: every call listed, each once
    call_ids = [call_id for call_id, _ in comparison.calls]
    assert len(call_ids) == len(set(call_ids)) == comparison.total
    assert set(call_ids) >= {d.call_id for d in comparison.differences}


def test_an_unknown_run_is_not_found(store: Store, tmp_path: Path) -> None:
    a = record(store, tmp_path, program("x"), name="a")
    with pytest.raises(NotFoundError):
        compare(store, a, "f" * 32)


def test_word_diff_narrow_and_memory_changes() -> None:
    assert [(p.op, p.text) for p in word_diff("a b c", "a x c")] == [
        ("same", "a "),
        ("del", "b"),
        ("ins", "x"),
        ("same", " c"),
    ]
    assert narrow({"role": "assistant", "content": "p"}, {"role": "assistant", "content": "q"}) == (
        ".content",
        "p",
        "q",
    )
    assert narrow([1, {"k": "a"}], [1, {"k": "b"}]) == ("[1].k", "a", "b")
    assert narrow({"a": 1, "b": 2}, {"a": 2, "b": 3}) == ("", {"a": 1, "b": 2}, {"a": 2, "b": 3})
    changes = memory_changes({"kept": 1, "gone": 2, "moved": 3}, {"kept": 1, "moved": 4, "new": 5})
    assert [(c.key, c.change) for c in changes] == [
        ("kept", "same"),
        ("moved", "changed"),
        ("new", "added"),
        ("gone", "removed"),
    ]


@pytest.mark.parametrize(
    ("call_id", "name"),
    [
        ("root", "the run"),
        ("root/agent:researcher:1", "researcher #1"),
        ("root/agent:lead:0/agent:researcher:1/tool:fetch_page:0", "tool fetch_page in researcher #1"),
        ("root/agent:lead:0/tool:search:2", "tool search #2 in lead #0"),
        ("root/agent:lead:0/prompt:gpt-4:0/turn:gpt-4:2", "turn #2 in lead #0"),
        ("root/agent:w:0/turn:openai:gpt-4.1:1", "turn #1 in w #0"),
        ("not a call id", "not a call id"),
    ],
)
def test_call_names(call_id: str, name: str) -> None:
    assert call_name(call_id) == name
