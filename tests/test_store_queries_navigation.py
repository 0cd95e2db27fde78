"""Finding one's way in a run: the find box's hits and their order, and what a merged bar's click selects."""

from __future__ import annotations

from devtool.store import Store, append_events
from devtool.store.queries.navigation import first_span_in, search_spans, span_place
from tests.conftest import Trace

T0 = float(2**40)  # runs start in 2004, a time the event gate takes; times below are offsets from it


def research_trace() -> tuple[Trace, dict[str, str]]:
    """A lead, researchers (whose generations and turns match "search" by agent id), and tool calls."""
    t = Trace(start_ms=T0)
    spans: dict[str, str] = {}
    spans["lead"] = lead = t.start("agent", agentId="research-lead", at=T0)
    for index in range(3):
        researcher = t.start("agent", lead, agentId="researcher", at=T0 + 1.0 + index)
        generation = t.start("generation", researcher, agentId="researcher", generationId=0)
        t.end(t.start("turn", generation, agentId="researcher", step=0))
        spans[f"tool{index}"] = tools = t.start(
            "tools:execute", generation, agentId="researcher", toolNames=["web_search"]
        )
        t.end(tools)
        t.end(generation)
        t.end(researcher)
    spans["search"] = exact = t.start("tools:execute", lead, toolNames=["search"])
    t.end(exact)
    t.end(lead, at=T0 + 100.0)
    return t, spans


def test_hits_come_exact_name_first_then_prefixes_then_words_and_tools_before_turns(store: Store) -> None:
    t, spans = research_trace()
    append_events(store, t.events)
    hits = search_spans(store, t.trace_id, "search")
    assert hits[0].span_id == spans["search"]  # named exactly so
    assert [hit.span_id for hit in hits[1:4]] == [spans["tool0"], spans["tool1"], spans["tool2"]]  # web_search
    assert hits[4].name == "research-lead"  # holds "search" inside a word
    # Then what matched by agent id only ("researcher"): agents before generations and turns.
    rest = [hit.kind for hit in hits[5:]]
    assert rest == sorted(rest, key=lambda kind: {"tools:execute": 0, "agent": 1}.get(kind, 2))
    assert rest[:3] == ["agent"] * 3


def test_search_text_is_text_not_a_pattern(store: Store) -> None:
    t, _ = research_trace()
    append_events(store, t.events)
    assert search_spans(store, t.trace_id, "%") == []
    assert search_spans(store, t.trace_id, "web_") != []
    assert search_spans(store, t.trace_id, "(") == []


def test_a_merged_bar_selects_the_first_span_of_its_kind_and_row_in_its_time(store: Store) -> None:
    t, spans = research_trace()
    append_events(store, t.events)
    place = span_place(store, t.trace_id, spans["tool1"])
    assert place is not None
    assert (place.kind, place.depth) == ("tools:execute", 3)
    first = first_span_in(store, t.trace_id, place.depth, place.kind, T0, T0 + 100.0)
    assert first == spans["tool0"]
    assert first_span_in(store, t.trace_id, place.depth, "agent", T0, T0 + 100.0) is None
    assert span_place(store, t.trace_id, "nope") is None
