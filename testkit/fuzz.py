"""The fuzz of what comes in and what the pages then answer: hostile TraceEvent batches (hypothesis
strategies) and every page a browser can ask of the runs they touch, for `tests/test_web_fuzz.py`
(minutes) and `bench/soak.py` (as long as you like).

A batch mixes good events with events a careless or hostile producer sends: times in other units
or out of any calendar, ids and types of the wrong kind, nesting past the limits, markup and control
characters in every text, spans that end before they start, end twice, or name a parent that never
was, huge token counts. The property: whatever was stored, every page answers 200 or 4xx, never 5xx,
within a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlencode

from hypothesis import strategies as st

T0 = 1_790_000_000_000.0
TRACES = [f"{n:032x}" for n in range(1, 6)] + ["team/run 1?x#y&z", "<b>run</b>"]
SPANS = [f"{n:016x}" for n in range(1, 40)]
KINDS = ["agent", "turn", "tools:execute", "generation", "runWith", "model:call", "custom:span", "promptAgent"]
POINTS = ["error", "sys:log", "budget:update", "snapshot:dump", "mystery:thing"]

TEXT = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            '<script>alert("x")</script>',
            '"><img src=x onerror=alert(1) class=pwned>',
            "</textarea><svg onload=alert(2)>",
            "\u202eevil\u202c",
            "a\x00b\x1bc",
            "{{ 7*7 }}",
            "${jndi:ldap://x}",
            "x" * 5000,
        ]
    ),
)
JSON_LEAF = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=10,
)


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"d": value}
    return value


NEAR_T0 = st.floats(min_value=T0 - 1000, max_value=T0 + 100_000)
# Mostly times of one run (so spans nest and overlap), else the units and extremes the gate names.
TIMESTAMP = st.one_of(
    NEAR_T0,
    NEAR_T0,
    NEAR_T0,
    st.sampled_from([T0 * 1e6, T0 / 1000, T0 * 1000, 1e300, -1e300, 0, 946_684_800_000, 4_102_444_799_999]),
    st.floats(min_value=9.4e11, max_value=4.2e12),
    JSON_LEAF,
)


@st.composite
def event(draw: st.DrawFn) -> Any:
    """One TraceEvent, good more often than not, else wrong in one or a few ways."""
    kind = draw(st.sampled_from(KINDS))
    suffix = draw(st.sampled_from([":start", ":end", ":end", ""]))
    type_: Any = draw(st.sampled_from([f"{kind}{suffix}", *POINTS])) if suffix else draw(st.sampled_from(POINTS))
    trace: dict[str, Any] = {
        "traceId": draw(st.sampled_from(TRACES)),
        "spanId": draw(st.sampled_from(SPANS)),
        "parentSpanId": draw(st.one_of(st.just(""), st.sampled_from(SPANS), st.none())),
    }
    value: dict[str, Any] = {
        "schemaVersion": 1,
        "type": type_,
        "timestamp": draw(TIMESTAMP),
        "agentId": draw(TEXT),
        "trace": trace,
    }
    extras = {
        "callId": TEXT,
        "name": TEXT,
        "props": JSON,
        "result": JSON,
        "memory": JSON,
        "error": st.one_of(TEXT, st.fixed_dictionaries({"message": TEXT, "stack": TEXT}), JSON),
        "success": st.one_of(st.booleans(), JSON_LEAF),
        "duration": JSON_LEAF,
        "usage": st.fixed_dictionaries({"promptTokens": JSON_LEAF, "completionTokens": JSON_LEAF}),
        "toolNames": st.one_of(st.lists(TEXT, max_size=3), JSON),
        "toolResults": st.lists(
            st.fixed_dictionaries({"callId": TEXT, "toolName": TEXT, "input": JSON, "output": JSON}), max_size=3
        ),
        "messages": st.lists(st.fixed_dictionaries({"role": TEXT, "content": TEXT}), max_size=3),
        "step": JSON_LEAF,
        "generationId": JSON_LEAF,
        "contentHash": TEXT,
        "cache": JSON_LEAF,
        "entrypoint": TEXT,
        "metadata": JSON,
    }
    for key in draw(st.lists(st.sampled_from(sorted(extras)), max_size=5, unique=True)):
        value[key] = draw(extras[key])
    # Now and then, a fault of the kind the event gate names.
    fault = draw(st.sampled_from(["none"] * 6 + ["type", "traceId", "spanId", "deep", "version", "trace", "drop"]))
    if fault == "type":
        value["type"] = draw(st.one_of(JSON, st.just("")))
    elif fault in ("traceId", "spanId"):
        trace[fault] = draw(st.one_of(JSON, st.just(""), st.just("i" * 300)))
    elif fault == "deep":
        value["props"] = nested(draw(st.integers(min_value=95, max_value=140)))
    elif fault == "version":
        value["schemaVersion"] = draw(JSON_LEAF)
    elif fault == "trace":
        value["trace"] = draw(JSON)
    elif fault == "drop":
        value.pop(draw(st.sampled_from(["type", "timestamp", "trace", "schemaVersion"])))
    return value


BATCHES = st.lists(event(), min_size=25, max_size=35)

WINDOW = st.one_of(
    st.none(),
    st.tuples(st.floats(min_value=T0 - 10, max_value=T0 + 1e5), st.floats(min_value=0, max_value=1e5)).map(
        lambda w: (w[0], w[0] + w[1])
    ),
    st.tuples(st.sampled_from([T0, 1e16, -1e300, 0.0]), st.sampled_from([0.0005, 0.001, 2.0, 1e12])).map(
        lambda w: (w[0], w[0] + w[1])
    ),
    st.tuples(TEXT, TEXT),
)


# What a test calls hung: a page that hostile input sends into unbounded work takes far longer, and an
# ordinary page on a loaded shared machine far less. How fast pages are is bench/soak.py's (its probe
# keeps `Probe`'s 1 s limit) and BENCHMARKS.md's, not the tests'.
HANG_SECONDS = 10.0


@dataclass
class Probe:
    """What the pages answered: how many, the slowest, and every one that broke the property."""

    pages: int = 0
    slowest: float = 0.0
    failures: list[str] = field(default_factory=list)

    def check(self, path: str, status: int, seconds: float, limit: float = 1.0) -> None:
        self.pages += 1
        self.slowest = max(self.slowest, seconds)
        if status >= 500 or seconds > limit:
            self.failures.append(f"{status} in {seconds:.2f} s: {path}")


def run_pages(trace_id: str, spans: list[str], window: Any = None, query: str = "a") -> list[str]:
    """Every page and fragment of a run a browser can ask for, each span selected in turn."""
    base = f"/runs/{quote(trace_id, safe='')}"
    shown = "" if window is None else "&" + urlencode({"start": window[0], "end": window[1]})
    pages = [base, f"{base}/timeline?w=1200{shown}", f"{base}?w=4000{shown}", f"{base}/header", f"{base}/tree"]
    pages += [f"{base}/actions", f"{base}/export.jsonl.gz", f"{base}/search?{urlencode({'q': query})}"]
    for span in spans:
        chosen = quote(span, safe="")
        pages += [f"{base}?span={chosen}", f"{base}/select?span={chosen}", f"{base}/tree/{chosen}/children?offset=0"]
    return pages


def pages_after(batch: list[Any], window: Any, query: str) -> list[str]:
    """The pages to ask once `batch` went in: the runs list, and every page of the runs it touched."""
    touched: dict[str, list[str]] = {}
    for value in batch:
        trace = value.get("trace") if isinstance(value, dict) else None
        if isinstance(trace, dict) and isinstance(trace.get("traceId"), str) and trace["traceId"] in TRACES:
            spans = touched.setdefault(trace["traceId"], [])
            if isinstance(trace.get("spanId"), str) and trace["spanId"] not in spans and len(spans) < 3:
                spans.append(trace["spanId"])
    pages = ["/", f"/?{urlencode({'q': query})}", "/?status=running"]
    for trace_id, spans in touched.items():
        pages += run_pages(trace_id, spans, window, query)
    return pages
