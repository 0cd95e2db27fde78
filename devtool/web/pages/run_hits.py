"""The runs search's snippets: for each run a search found, the first field of its spans that holds the
text, so the runs page shows where it is and links straight to that span (`/runs/<id>?span=&q=`).

The runs search matches a run whose every word is part of one of its words, anywhere; a field holds
the whole text less often, so a run without one is shown the first field that holds its longest word.
The page's runs are asked together (`queries.find_first`): a few statements a page, not a find a run.
"""

from __future__ import annotations

from collections.abc import Sequence

from devtool.store import Store
from devtool.store.queries import RunSummary
from devtool.store.queries.find import FindHit
from devtool.store.queries.find_first import first_hits as first_hits_of
from devtool.store.queries.runs import LAKE_KIND
from devtool.store.search import words

# Runs of a page given a snippet: a page shows 50 at most.
MAX_RUNS = 50


def first_hits(store: Store, runs: Sequence[RunSummary], q: str) -> dict[str, tuple[FindHit, str]]:
    """The first hit of `q` (or of its longest word) in each trace of `runs`, with the text it is of,
    by run id."""
    # A run only the team's lake holds has no events here yet: it is found by its name and id.
    left = [run.id for run in runs[:MAX_RUNS] if run.kind == "trace" and run.source_kind != LAKE_KIND]
    found: dict[str, tuple[FindHit, str]] = {}
    for text in dict.fromkeys([q, *sorted(words(q), key=len, reverse=True)[:1]] if q else []):
        found |= {run: (hit, text) for run, hit in first_hits_of(store, left, text).items()}
        left = [run for run in left if run not in found]
    return found
