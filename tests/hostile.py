"""The hostile fixtures: a trace and a journal whose every text is markup or script, and how to tell
whether a page ran any of it.

`tests/fixtures/hostile.trace.jsonl` puts payloads in agent ids, span names, messages, tool inputs,
outputs and errors, memory keys and values, an unknown event type, and (in a second run) the trace
and span ids themselves. `tests/fixtures/hostile.journal.jsonl` puts them in the process id, entry
ids, entry data, context keys and values, and an unknown entry type; its invocation carries the first
run's trace id. Every injected element has the class `pwned`, every script calls `alert(`: a page
that shows these files as text has neither.
"""

from __future__ import annotations

from selectolax.lexbor import LexborHTMLParser, LexborNode

from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures"
TRACE = FIXTURES / "hostile.trace.jsonl"
JOURNAL = FIXTURES / "hostile.journal.jsonl"

TRACE_ID = "a11ce0000000000000000000000bad00"
EVIL_TRACE_ID = '"><svg onload=alert(10) class=pwned>'
PROCESS_ID = 'billing"><script class="pwned">alert(9)</script>'
AGENT_ID = '"><img src=x onerror="alert(1)" class="pwned">'
SCRIPT = '<script class="pwned">alert("script")</script>'
# A search no run matches: a run matches a query whose every word it has, and none says "zeppelin".
SCRIPT_NOWHERE = '<script class="pwned">zeppelin("script")</script>'
CLOSE = '</script><script class="pwned">alert(4)</script>'

# What a page would hold if any payload had become markup.
INJECTED = ".pwned, [onerror], [onload], [ontoggle], [onclick], iframe, base, a[href^='javascript']"


def injected(page: LexborHTMLParser) -> list[str]:
    """The elements (as HTML) that a payload put on the page; empty when it shows them all as text."""
    found: list[LexborNode] = list(page.css(INJECTED))
    found += [script for script in page.css("script") if "alert(" in (script.text() or "")]
    return [node.html or "" for node in found]
