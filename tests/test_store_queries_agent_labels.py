"""Agent labels on the timeline: each agent bar a window draws gets its span's `#n` and props, found by
the bar's start and id, whether the window is drawn from a keyed run's tiles or from its spans."""

from __future__ import annotations

import pytest

from bench.gen_trace import GeneratedTrace, generate
from devtool.store import Store, load_file, span_keys_build
from devtool.store.queries import get_run, timeline_window
from devtool.store.queries.agent_labels import MAX_AGENTS, agent_labels
from devtool.store.queries.frames import props_summary


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> GeneratedTrace:
    return generate(tmp_path_factory.mktemp("big") / "run.jsonl", events=24_000, seed=4)


def test_every_agent_bar_of_a_window_gets_its_spans_label(store: Store, big: GeneratedTrace) -> None:
    load_file(store, big.path)
    assert span_keys_build.key_run(store, big.trace_id)  # the wide windows are drawn from its tiles
    run = get_run(store, big.trace_id)
    middle, width = run.started_ms + run.duration_ms / 2, run.duration_ms
    windows: list[tuple[float | None, float | None]] = [(None, None)]
    for _ in range(5):  # the tiles, the fine tiles, then the spans
        width /= 4
        windows.append((middle - width / 2, middle + width / 2))
    rows = store.query(
        "SELECT s.span_id, s.call_id, e.body->>'$.props' FROM spans s JOIN events e ON e.event_id = s.start_event_id "
        "WHERE s.trace_id = ? AND s.kind = 'agent'",
        [big.trace_id],
    )
    expected = {span: (int(call.rsplit(":", 1)[-1]), props_summary(props)) for span, call, props in rows}
    labelled = 0
    for start, end in windows:
        window = timeline_window(store, big.trace_id, start_ms=start, end_ms=end, width_px=1200, max_bars=3800)
        agents = {bar.span_id: bar.start_ms for bar in window.bars if bar.kind == "agent" and bar.span_id}
        labels = agent_labels(store, big.trace_id, agents)
        asked = sorted(agents)[:MAX_AGENTS]
        assert {span: (label.call_index, label.props) for span, label in labels.items()} == {
            span: expected[span] for span in asked
        }
        labelled += len(labels)
    assert labelled > 100
    assert agent_labels(store, big.trace_id, {}) == {}
