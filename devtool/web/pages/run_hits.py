"""The runs search's snippets: for each run a search found, the first field of its spans that holds the
text, so the runs page shows where it is and links straight to that span (`/runs/<id>?span=&q=`).

The runs search matches a run whose every word is part of one of its words, anywhere; a field holds
the whole text less often, so a run without one is shown the first field that holds its longest word.
Each run's first `FIRST_SLICE` events of the blocks that hold the text's words are looked through, no
more: a page of fifty big runs stays within the runs search's time (a run whose text is in more blocks
than those shows no snippet; its page's find box reads further).
"""

from __future__ import annotations

from collections.abc import Sequence

from devtool.store import Store
from devtool.store.queries import RunSummary
from devtool.store.queries.find import FIRST_SLICE, FindHit, find_in_run
from devtool.store.queries.runs import LAKE_KIND
from devtool.store.search import words

# Runs of a page given a snippet: a page shows 50 at most, each a find of its own.
MAX_RUNS = 50


def first_hits(store: Store, runs: Sequence[RunSummary], q: str) -> dict[str, tuple[FindHit, str]]:
    """The first hit of `q` (or of its longest word) in each trace of `runs`, with the text it is of,
    by run id."""
    texts = [q, *sorted(words(q), key=len, reverse=True)[:1]] if q else []
    found: dict[str, tuple[FindHit, str]] = {}
    for run in runs[:MAX_RUNS]:
        # A run only the team's lake holds has no events here yet: it is found by its name and id.
        if run.kind != "trace" or run.source_kind == LAKE_KIND:
            continue
        for text in dict.fromkeys(texts):
            hits = find_in_run(store, run.id, text, limit=1, max_scanned=FIRST_SLICE).hits
            if hits:
                found[run.id] = (hits[0], text)
                break
    return found
