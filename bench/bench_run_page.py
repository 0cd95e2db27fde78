"""The run page over a million-event run: first paint, zoom steps, selections, in a real browser too.

    python bench/bench_run_page.py [--events 1000000] [--repeat 5] [--workdir DIR] [--no-browser]

1. Generates (or reuses, from `--workdir`) a trace of `--events` events (`bench/gen_trace.py`, seed 7)
   and starts a real `devtool serve --db NEW TRACE`, which loads it.
2. Over HTTP, `--repeat` times each: the run page's first paint (the whole run), a zoom sequence
   into the middle of the run (each step a 4× narrower window of the timeline fragment, as the `]`
   key and the wheel ask), a pan, a span selection (the tree and detail a click asks for, and the
   whole workspace a link opens) and a page of a crowded tree node. Reports the server's own time
   (`Server-Timing`), median and worst, and how many elements each answer's timeline holds.
3. In real Chromium (Playwright): opens the page, zooms with the keyboard, and counts the elements
   the timeline holds after every step (the budget is 5,000).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import GeneratedTrace, generate
from bench.server import get, serve
from devtool.store import store_files

BUDGET_MS = 300
ELEMENT_BUDGET = 5000


def trace_in(workdir: Path, events: int) -> GeneratedTrace:
    path, info = workdir / f"trace-{events}.jsonl", workdir / f"trace-{events}.info.json"
    if path.exists() and info.exists():
        return GeneratedTrace(**{**json.loads(info.read_text()), "path": path})
    trace = generate(path, events=events, seed=7)
    info.write_text(json.dumps({k: v for k, v in trace.__dict__.items() if k != "path"}))
    return trace


def timeline_elements(html: str) -> int:
    """Elements inside the timeline (`#timeline` … the end of its bars' svg), as the browser counts them."""
    start = html.find('id="timeline"')
    section = html[start : html.find("</svg>\n  </div>\n</div>", start)]
    return len(re.findall(r"<(?!/)[a-zA-Z]", section))


def browser_pass(url: str, steps: int) -> list[tuple[str, float, int]]:
    from playwright.sync_api import sync_playwright

    args = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"]  # fmt: skip
    found = []
    with sync_playwright() as playwright:
        chromium = Path("/usr/bin/chromium")
        browser = playwright.chromium.launch(executable_path=str(chromium) if chromium.exists() else None, args=args)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        began = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("#bars rect.bar")
        found.append(("first paint", (time.perf_counter() - began) * 1000, page.locator("#timeline *").count()))
        for step in range(steps):
            before = page.locator("#timeline").get_attribute("data-end")
            began = time.perf_counter()
            page.keyboard.press("]")
            # A function, not an expression string: the page's Content-Security-Policy refuses eval.
            page.wait_for_function("before => document.querySelector('#timeline').dataset.end !== before", arg=before)
            found.append(
                (f"zoom {step + 1}", (time.perf_counter() - began) * 1000, page.locator("#timeline *").count())
            )
        browser.close()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="devtool-bench-run-page-"))
    workdir.mkdir(parents=True, exist_ok=True)
    trace = trace_in(workdir, args.events)
    db = workdir / "run-page.duckdb"
    for stale in store_files(db):
        stale.unlink(missing_ok=True)
    process, url, started = serve(db, [trace.path])
    run = f"{url}runs/{trace.trace_id}"
    try:
        _, raw = get(run)
        page = raw.decode()
        timeline = re.search(r'id="timeline" class="timeline" data-start="([0-9.]+)" data-end="([0-9.]+)"', page)
        assert timeline is not None
        start, end = float(timeline.group(1)), float(timeline.group(2))
        middle = (start + end) / 2
        spans = re.findall(r'data-span="([0-9a-f]{16})"', page)
        crowded = re.search(r'data-children="([^"]+)"', page)
        requests: list[tuple[str, str, bool]] = [("first paint (whole run)", run, False)]
        width = end - start
        for step in range(1, 7):
            width /= 4
            window = f"start={middle - width / 2:.3f}&end={middle + width / 2:.3f}"
            requests.append((f"zoom step {step} (1/{4**step} of the run)", f"{run}/timeline?{window}&w=1600", True))
        pan = f"start={middle:.3f}&end={middle + (end - start) / 16:.3f}"
        requests.append(("pan (1/16 of the run, moved half a window)", f"{run}/timeline?{pan}&w=1600", True))
        middle_span = spans[len(spans) // 2]
        requests.append(
            ("select a span (its tree and detail: what a click asks)", f"{run}/select?span={middle_span}", True)
        )
        requests.append(("a link with a span selected (the whole workspace)", f"{run}?span={middle_span}", True))
        if crowded:
            requests.append(
                ("a page of a crowded tree node", url.rstrip("/") + crowded.group(1).replace("&amp;", "&"), True)
            )
        print(
            f"# {args.events:,} events ({trace.bytes / 1e6:,.0f} MB); serve loaded it and answered in {started:.1f} s"
            f" · {platform.node()} · {dt.date.today()}"
        )
        print("| request | server time, median | worst | timeline elements | target |")
        print("|---|---|---|---|---|")
        for name, target, htmx in requests:
            times, body = [], ""
            for _ in range(args.repeat):
                took, raw = get(target, htmx=htmx)
                body = raw.decode()
                times.append(took)
            elements = timeline_elements(body) if 'id="timeline"' in body else "-"
            verdict = "met" if max(times) <= BUDGET_MS else "MISSED"
            median = statistics.median(times)
            print(f"| {name} | {median:.0f} ms | {max(times):.0f} ms | {elements} | ≤ {BUDGET_MS} ms: {verdict} |")
        if not args.no_browser:
            print()
            print("| in Chromium | wall time (page + server) | timeline elements in the DOM | target |")
            print("|---|---|---|---|")
            for name, took, count in browser_pass(run, steps=6):
                verdict = "met" if count <= ELEMENT_BUDGET else "MISSED"
                print(f"| {name} | {took:.0f} ms | {count} | ≤ {ELEMENT_BUDGET}: {verdict} |")
    finally:
        process.terminate()
        process.wait(timeout=30)


if __name__ == "__main__":
    main()
