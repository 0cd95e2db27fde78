"""Find the cause, in a real Chromium against `devtool demo`: the failed run opens on the failure that ended
it with the chain to it, `n`/`p` step through failures, and a word of a model's answer is found from the
runs search down to the field that holds it, marked."""

from __future__ import annotations

import json
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from devtool.store.search import BLOCK
from e2e.conftest import Server, ServerFactory, Shoot
from e2e.demo_server import demo_traces, running_demo
from tests.conftest import Trace

SHOTS = Path("/work/wt/shots/h39a")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, str]]]:
    """`devtool demo`, and its runs' trace ids by file."""
    home = tmp_path_factory.mktemp("demo-home")
    with running_demo(home) as server:
        yield server, demo_traces(home)


def _json(url: str) -> object:
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


def _keep(shoot: Shoot, page: Page, name: str, shots: Path) -> None:
    """Screenshots at both sizes, kept where the team looks at them too."""
    shoot(page, name)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for taken in shots.glob(f"{name}-*.png"):
        shutil.copy(taken, SHOTS / taken.name)


def test_the_failed_run_opens_on_the_fallbacks_refused_answer_with_the_chain(
    page: Page, demo: tuple[Server, dict[str, str]], shoot: Shoot, screenshot_path: object
) -> None:
    server, traces = demo
    cause = _json(f"{server.url}runs/{traces['release-check']}/cause")
    assert isinstance(cause, dict)
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}runs/{traces['release-check']}")

    crumbs = page.locator("#cause .chain a")
    expect(crumbs).to_have_text(["runWith", "release-checker", "generation 0", "fallback", "generation 0", "turn 2"])
    assert [crumbs.nth(i).get_attribute("data-span") for i in range(crumbs.count())] == cause["chain"]
    expect(page.locator("#cause-error")).to_contain_text("PromptError")
    expect(page.locator("#cause-error")).to_contain_text("$.healthy must be boolean")
    # The page opens on the cause: fallback's last turn, a failed attempt with its validation error.
    expect(page.locator("#selection")).to_have_attribute("data-span", cause["spanId"])
    expect(page.locator("#detail-status")).to_have_text("failed attempt")
    expect(page.locator("#attempt-note")).to_contain_text("$.healthy must be boolean")
    expect(page.locator("#tree .row.selected .name")).to_have_text("turn 2")
    # The probe tool failed too, but was handled: marked so, not the cause.
    probe = page.locator("#tree .row", has=page.locator(".name", has_text="probe"))
    expect(probe.locator(".badge.handled")).to_have_count(1)
    # The refused turns are failed attempts in the tree and failed on the timeline.
    expect(page.locator("#tree .badge", has_text="failed attempt")).to_have_count(3)
    expect(page.locator(f"#bars rect[data-span='{cause['spanId']}'].attempt")).to_have_count(1)
    _keep(shoot, page, "cause", screenshot_path("x").parent)  # type: ignore[operator]


def test_n_and_p_step_through_where_failures_began(page: Page, demo: tuple[Server, dict[str, str]]) -> None:
    server, traces = demo
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}runs/{traces['release-check']}")
    errors = (page.locator("#cause").get_attribute("data-errors") or "").split()
    assert len(errors) == 5  # the prober, its probe tool, fallback's three refused turns
    selection = page.locator("#selection")
    expect(selection).to_have_attribute("data-span", errors[-1])
    page.keyboard.press("p")
    expect(selection).to_have_attribute("data-span", errors[-2])
    page.keyboard.press("p")
    expect(selection).to_have_attribute("data-span", errors[-3])
    page.keyboard.press("n")
    expect(selection).to_have_attribute("data-span", errors[-2])
    for back in (3, 4, 5, 5):  # the first error is the last: `p` there stays
        page.keyboard.press("p")
        expect(selection).to_have_attribute("data-span", errors[-back])
    # The first: where the prober raised (its generation); the prober's failure was caught by its caller.
    expect(page.locator("#detail .kind").first).to_have_text("generation")
    expect(page.locator("#detail .error-message").first).to_contain_text("probe inconclusive")
    page.keyboard.press("n")
    expect(selection).to_have_attribute("data-span", errors[1])
    expect(page.locator("#handled-note")).to_contain_text("handled")
    # Errors only: what did not fail is hidden in the tree.
    page.locator("#errors-only").check()
    expect(page.locator("#tree .row.s-completed").first).to_be_hidden()
    expect(page.locator("#tree .row.s-failed").first).to_be_visible()


def test_a_word_of_a_model_answer_is_found_from_the_runs_search_to_its_field(
    page: Page, demo: tuple[Server, dict[str, str]], shoot: Shoot, screenshot_path: object
) -> None:
    server, traces = demo
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}?q=looked")  # fallback's model answered "... the dashboard looked green"
    row = page.locator(f"tr.run-row[data-run-id='{traces['release-check']}']")
    hit = row.locator("a.run-hit")
    expect(hit.locator(".field")).to_have_text("message.content")
    expect(hit.locator("mark")).to_have_text("looked")
    _keep(shoot, page, "runs-search", screenshot_path("x").parent)  # type: ignore[operator]
    hit.click()
    page.wait_for_url("**span=*q=looked*")
    # The turn whose answer holds it is open, the word marked in its answer and in view.
    marked = page.locator("#detail mark.found").first
    expect(marked).to_have_text("looked")
    expect(marked).to_be_in_viewport()
    expect(page.locator("#detail .kind").first).to_have_text("turn")
    expect(page.locator("#span-search")).to_have_value("looked")
    # The find box lists every field that holds it, each with its snippet marked.
    fields = page.locator("#search-results .find-hits .field")
    expect(fields.first).to_have_text("message.content")
    expect(page.locator("#search-results .find-hits mark").first).to_have_text("looked")
    _keep(shoot, page, "find", screenshot_path("x").parent)  # type: ignore[operator]
    # Opening another hit selects its span with the word marked there.
    second = page.locator("#search-results .find-hits a.select").nth(1)
    span = second.get_attribute("data-span") or ""
    second.click()
    expect(page.locator("#selection")).to_have_attribute("data-span", span)
    expect(page.locator("#detail mark.found").first).to_have_text("looked")


def test_a_rare_text_at_the_end_of_a_long_run_is_found_and_opened(
    page: Page, serve: ServerFactory, tmp_path: Path, shoot: Shoot
) -> None:
    """Eight blocks of the same tool calls, then one that failed with its own words: the find box reads
    the block its words are in, lists that field, and opens its span with the text marked."""
    t = Trace()
    root = t.start("runWith", callId="root")
    lead = t.start("agent", root, agentId="lead", callId="root/agent:lead:0")
    for index in range(4 * BLOCK):
        t.span("tools:execute", lead, agentId="lead", callId=f"root/agent:lead:0/tool:step:{index}",
               toolResults=[{"toolName": "step", "input": {"n": index}, "output": "all quiet"}])  # fmt: skip
    late = t.start("tools:execute", lead, agentId="lead", callId="root/agent:lead:0/tool:probe:0")
    t.end(late, success=False, error={"name": "OSError", "message": "disk quota exceeded on /var/spool"})
    t.end(lead, success=True)
    t.end(root, success=True)
    server = serve(str(t.write(tmp_path / "long.jsonl")))
    found = _json(f"{server.url}runs/{t.trace_id}/find?q=quota%20exceeded")
    assert found == [
        {"spanId": late, "callId": "root/agent:lead:0/tool:probe:0", "field": "error.message",
         "snippet": "disk quota exceeded on /var/spool"}
    ]  # fmt: skip
    page.set_viewport_size({"width": 1600, "height": 1000})
    page.goto(f"{server.url}runs/{t.trace_id}")
    page.keyboard.press("/")
    page.keyboard.type("quota exceeded")
    hit = page.locator("#search-results .find-hits a.select")
    expect(hit).to_have_count(1)
    expect(hit.locator(".field")).to_have_text("error.message")
    expect(hit.locator("mark")).to_have_text("quota exceeded")
    hit.click()
    expect(page.locator("#selection")).to_have_attribute("data-span", late)
    marked = page.locator("#detail mark.found").first
    expect(marked).to_have_text("quota exceeded")
    expect(marked).to_be_in_viewport()
    shoot(page, "find-late")


def test_the_json_answers(demo: tuple[Server, dict[str, str]]) -> None:
    server, traces = demo
    found = _json(f"{server.url}runs/{traces['release-check']}/find?q=looked%20green")
    assert isinstance(found, list)
    assert found
    assert set(found[0]) == {"spanId", "callId", "field", "snippet"}
    assert found[0]["field"] == "message.content"
    assert "looked green" in found[0]["snippet"]
    assert _json(f"{server.url}runs/{traces['release-check']}/find?q=zzzq") == []
    request = urllib.request.Request(
        f"{server.url}runs/{traces['research']}/cause", headers={"Accept": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 404
    assert "did not fail" in json.loads(refused.value.read())["error"]
