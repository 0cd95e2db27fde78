"""A run named by the short prefix of its id the UI shows (`8f612165b135`), as well as by its whole id.

Pages show a run id's first 12 characters; a person copies those into a URL or a command. A prefix
names the one run whose id starts with it (case aside: ids are lower-case hex, a prefix typed in
capitals still finds its run); the whole id always names its own run, even when it is also the
prefix of a longer one. A prefix of several runs is refused with the candidates listed, never
guessed.
"""

from __future__ import annotations

from devtool.store.database import Store
from devtool.store.errors import NotFoundError

MIN_PREFIX = 4
SHOWN_CANDIDATES = 10


class AmbiguousRunError(ValueError):
    """A prefix that starts several runs' ids; `candidates` are some of them (id, name)."""

    def __init__(self, given: str, candidates: list[tuple[str, str]]) -> None:
        listed = ", ".join(f"{trace_id} ({name})" for trace_id, name in candidates[:SHOWN_CANDIDATES])
        more = " and more" if len(candidates) > SHOWN_CANDIDATES else ""
        super().__init__(f"{given!r} starts the ids of several runs: {listed}{more}; give more of the id")
        self.candidates = candidates


def resolve_run(store: Store, given: str) -> str:
    """The whole id of the run `given` names (its id, or a prefix of at least 4 characters of it).

    `NotFoundError` when no run has it, `AmbiguousRunError` (a `ValueError`) when several do.
    """
    if store.query("SELECT 1 FROM runs WHERE trace_id = ?", [given]):
        return given
    if len(given) >= MIN_PREFIX:
        rows = store.query(
            "SELECT trace_id, name FROM runs WHERE starts_with(lower(trace_id), lower(?))"
            " ORDER BY started_ts DESC LIMIT ?",
            [given, SHOWN_CANDIDATES + 1],
        )
        if len(rows) == 1:
            return str(rows[0][0])
        if rows:
            raise AmbiguousRunError(given, [(str(t), str(n)) for t, n in rows])
    raise NotFoundError(
        f"no run {given!r} in the store (a run is named by its id or the first 4 or more characters of it)"
    )
