"""A run's pages while it is copied from the team's lake (issue 44's page truth), in-process: two real
stores on one DuckLake (a real PostgreSQL catalog, a data folder), the DevTool's app on the store that
holds the run's head. Every fragment a run page asks for says `copying` of a span whose end is not here
yet, none says `running`; a turn among them shows no answer being written."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from starlette.testclient import TestClient

from devtool.actions.run_rewind import rewind
from devtool.store import Store, append_events
from devtool.store.frame_index_tables import runs_to_index
from devtool.store.lake import (
    Lake,
    attach_lake,
    detach_lake,
    finish_open,
    lake_config,
    open_head,
    open_span,
    opening,
    publish_run,
    refresh_listing,
)
from devtool.web import create_app
from testkit.postgres import Lakes
from tests.web_runs import html, one

NESTED = Path(__file__).resolve().parent / "corpus" / "rejelly" / "nested.trace.jsonl"
# Its events up to a model call started in its first turn: the root, two agents, their generations, the
# prompt loop, the turn and the call all started, none ended.
HEAD = 9


@dataclass(frozen=True)
class Copying:
    """Run `trace` published from store `a` (it holds the whole run) and opened on store `b` up to its
    first `HEAD` events, the rest still to copy."""

    a: Store
    b: Store
    lake_b: Lake
    trace: str
    events: list[dict[str, Any]]


@contextmanager
def half_copied(lakes: Lakes, tmp_path: Path, *, listed: bool = True) -> Iterator[Copying]:
    """The nested run on two stores of one lake, B holding its head; `listed`: B has read the lake's runs
    list (else a page of B has only its part's figures)."""
    catalog, data = lakes.new()
    events = [orjson.loads(line) for line in NESTED.read_bytes().splitlines()]
    trace = events[0]["trace"]["traceId"]
    # A's file is `lake.duckdb`: DuckDB names a file's database after it, which the lake's must not clash with.
    a, b = Store(tmp_path / "lake.duckdb"), Store(tmp_path / "b.duckdb")
    try:
        lake_a = attach_lake(a, lake_config(catalog, str(data), "node-a"))
        lake_b = attach_lake(b, lake_config(catalog, str(data), "node-b"))
        append_events(a, events)
        publish_run(a, lake_a, trace)
        if listed:
            refresh_listing(b)
        assert open_head(b, lake_b, trace, head=HEAD) is not None
        yield Copying(a, b, lake_b, trace, events)
    finally:
        a.close()
        b.close()


def test_every_fragment_of_a_run_being_copied_says_copying_never_running(lakes: Lakes, tmp_path: Path) -> None:
    with half_copied(lakes, tmp_path) as run:
        trace, turn = run.trace, run.events[6]["trace"]["spanId"]
        assert run.events[6]["type"] == "turn:start"
        # The app on B, asked for the fragments only: the run page itself would copy the rest after it.
        with TestClient(create_app(run.b)) as client:
            selection = client.get(f"/runs/{trace}/select", params={"span": turn})
            tree = client.get(f"/runs/{trace}/tree", params={"span": turn})
            timeline = client.get(f"/runs/{trace}/timeline")
            search = client.get(f"/runs/{trace}/search", params={"q": "researcher"})
            answer = client.get(f"/runs/{trace}/spans/{turn}/answer")
            header = client.get(f"/runs/{trace}/header")
        fragments = {
            "selection": selection,
            "tree": tree,
            "timeline": timeline,
            "search": search,
            "answer": answer,
            "header": header,
        }
        for name, response in fragments.items():
            assert response.status_code == 200, (name, response.text[:300])
            assert "running" not in response.text, name
            assert "s-copying" in response.text or name == "header", name

        page = html(selection.text)
        assert one(page, "#detail-status").text() == "copying"
        assert "answering" not in selection.text
        assert "this turn's end, which holds the answer, has not come" in one(page, "#turn-answer").text()
        after = one(page, "#rewind-after")
        assert "disabled" in after.attributes
        assert after.attributes["title"] == "This span's end is not copied from the team's lake yet"
        # The turn and the five spans above it that the tree shows, each copying.
        copying = [node.text() for node in html(tree.text).css("#tree .row.s-copying .name")]
        assert copying == ["runWith", "orchestrator", "generation 0", "researcher", "generation 0", "turn 0"]
        assert html(timeline.text).css("#bars rect.s-copying")
        assert html(search.text).css(".hits .badge.s-copying")
        assert one(html(answer.text), "#detail-status").text() == "copying"
        title = one(html(header.text), ".status-badge")
        assert (title.text(), title.attributes["title"]) == ("completed", "as the team's lake lists it")
        assert one(html(header.text), "#lake-copy-badge").text().startswith("copying from the team's lake")


# A turn in the second agent whose end shares its millisecond with the model call inside it (started and
# ended there too): a cut after it holds the call, in the order it was recorded.
TURN = "629f2bc7b991eddc"
# A model call in the third agent's second generation, 63 events in.
LATE_CALL = "9e799b48c3e955ce"


def test_a_rewind_mid_copy_copies_its_prefix_first_and_makes_the_whole_runs_snapshot(
    lakes: Lakes, tmp_path: Path
) -> None:
    with half_copied(lakes, tmp_path) as run:
        a, b, lake_b, trace, events = run.a, run.b, run.lake_b, run.trace, run.events
        # Links to both spans came first: their lineages are here, the events before them are not.
        assert open_span(b, lake_b, trace, TURN)
        assert open_span(b, lake_b, trace, LATE_CALL)
        here = b.query("SELECT count(*) FROM events")[0][0]
        assert here < 64

        for span, anchor in ((TURN, "after"), (LATE_CALL, "before"), (TURN, "before")):
            assert rewind(b, trace, span, anchor) == rewind(a, trace, span, anchor), (span, anchor)
        # The events up to the last cut were copied (63 before the call's start, and the lineages'
        # after it); the rest is still to copy, by the copy that goes on.
        assert 64 <= b.query("SELECT count(*) FROM events")[0][0] < len(events)
        copying = opening(b, trace)
        assert copying is not None
        assert copying.total == len(events)
        assert runs_to_index(b, min_events=1) == {}  # no rewind index of a part of the run
        # It finishes without storing an event twice. Its events of one instant are stored here out of their
        # order (the links' first): a rewind still reads them in the lake's, and no index walks them.
        assert finish_open(b, lake_b, trace, chunk=20) is True
        assert b.query("SELECT count(*), count(DISTINCT event_key) FROM events")[0] == (len(events), len(events))
        assert runs_to_index(b, min_events=1) == {}
        assert trace in runs_to_index(a, min_events=1)
        for span in (TURN, LATE_CALL):
            assert rewind(b, trace, span, "after") == rewind(a, trace, span, "after"), span


def test_a_rewind_mid_copy_without_a_lake_to_copy_from_is_refused_409_saying_how_much_is_here(
    lakes: Lakes, tmp_path: Path
) -> None:
    with half_copied(lakes, tmp_path) as run:
        b, trace = run.b, run.trace
        detach_lake(b)  # a server started on B without its lake
        with TestClient(create_app(b)) as client:
            response = client.post(f"/runs/{trace}/rewind", data={"span_id": LATE_CALL, "anchor": "before"})
        assert response.status_code == 409, response.text[:300]
        said = one(html(response.text), "main").text()
        assert "still being copied from the team's lake (9 of its 82 events are here)" in said
        assert "no team lake is attached" in said
        assert b.query("SELECT count(*) FROM rewind.snapshots")[0][0] == 0


def facts(header: str) -> dict[str, str]:
    """The run header's figures, by name."""
    page = html(header)
    return {node.css_first("dt").text(): node.css_first("dd").text().strip() for node in page.css(".run-facts > div")}


def test_a_run_being_copied_shows_the_whole_runs_figures_from_the_lakes_list_and_its_part_so_far_before(
    lakes: Lakes, tmp_path: Path
) -> None:
    with half_copied(lakes, tmp_path, listed=False) as run:
        a, b, trace = run.a, run.b, run.trace
        with TestClient(create_app(a)) as client:
            whole = facts(client.get(f"/runs/{trace}/header").text)
        with TestClient(create_app(b)) as client:
            # The lake's list not read yet: the part's figures, each "so far"; none looks final.
            part = facts(client.get(f"/runs/{trace}/header").text)
            refresh_listing(b)
            listed = client.get(f"/runs/{trace}/header").text
        assert {name: value.endswith(" so far") for name, value in part.items()} == {
            **dict.fromkeys(whole, True),
            "started": False,
            "events": False,
        }
        assert part["agents"] == "2 so far"  # of the whole run's 4: two have started among the nine events here
        assert whole["agents"] == "4"
        assert part["duration"] != f"{whole['duration']} so far"
        assert part["events"] == "9 of 82"
        # Listed: the whole run's figures, as on the store that holds it, but for the events here.
        assert facts(listed) == {**whole, "events": "9 of 82"}
        assert "so far" not in listed
        assert one(html(listed), ".run-facts").attributes["title"] == "the whole run, as the team's lake lists it"
