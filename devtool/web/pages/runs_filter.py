"""The runs list's filter, which is all in the URL, and the page of runs it selects.

`?q=` searches names, ids, agent ids and the text of events and entries; `?status=` keeps completed,
failed or running ones; `?page=` pages through them. A filter that cannot be (an unknown status, a
page that is not a number) raises `BadFilter` saying what is wrong; `RunsFilter.lenient` keeps the
parts of it that are right.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from devtool.store import Store
from devtool.store.queries import RunSummary, list_runs
from devtool.store.queries.lineage import Lineage, lineages
from devtool.store.queries.runs import STATUSES
from devtool.web.links import with_query

PAGE_SIZE = 100
MAX_SEARCH = 200
MAX_PAGE = 10_000


class BadFilter(ValueError):
    """A query parameter of the runs page that cannot be a filter; the message says which and why."""


@dataclass(frozen=True)
class RunsFilter:
    """What the runs list shows: a search text, a status, a page (1-based)."""

    q: str = ""
    status: str = ""
    page: int = 1

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> RunsFilter:
        q = " ".join(query.get("q", "").split())
        if len(q) > MAX_SEARCH:
            raise BadFilter(f"the search is {len(q)} characters long; it can be at most {MAX_SEARCH}")
        status = query.get("status", "")
        if status not in ("", *STATUSES):
            raise BadFilter(f"there is no status {status[:40]!r}: choose {', '.join(STATUSES)}, or all")
        raw_page = query.get("page", "") or "1"
        if not raw_page.isdigit() or not 1 <= int(raw_page) <= MAX_PAGE:
            raise BadFilter(f"page must be a number from 1 to {MAX_PAGE}, not {raw_page[:40]!r}")
        return cls(q, status, int(raw_page))

    @classmethod
    def lenient(cls, query: Mapping[str, str]) -> RunsFilter:
        """The filter the query asks for, leaving out whatever part of it is bad."""
        parts = {}
        for name in ("q", "status", "page"):
            try:
                cls.from_query({name: query.get(name, "")})
            except BadFilter:
                continue
            parts[name] = query.get(name, "")
        return cls.from_query(parts)

    @property
    def active(self) -> bool:
        return bool(self.q or self.status)

    def url(self, **changes: str | int) -> str:
        values: dict[str, str | int] = {"q": self.q, "status": self.status, "page": self.page, **changes}
        if values["page"] == 1:
            values["page"] = ""
        return with_query("/", values)


@dataclass(frozen=True)
class RunsList:
    """One page of the runs list and what it was asked for."""

    filter: RunsFilter
    runs: list[RunSummary]
    more: bool  # a next page exists
    total_in_store: bool  # the store holds any run at all (to tell "no match" from "nothing loaded")
    lineage: dict[str, Lineage] = field(default_factory=dict)  # the replays and forks among `runs`

    def under_original(self, run: RunSummary) -> bool:
        """A replay or fork listed right under its original (on this page too)."""
        found = self.lineage.get(run.id)
        return found is not None and any(r.id == found.original for r in self.runs)


def runs_list(store: Store, chosen: RunsFilter) -> RunsList:
    rows = list_runs(
        store,
        search=chosen.q or None,
        status=chosen.status or None,
        limit=PAGE_SIZE + 1,
        offset=(chosen.page - 1) * PAGE_SIZE,
    )
    anything = bool(rows) or bool(list_runs(store, limit=1))
    shown = rows[:PAGE_SIZE]
    lineage = lineages(store, [run.id for run in shown if run.kind == "trace"])
    return RunsList(chosen, _grouped(shown, lineage), len(rows) > PAGE_SIZE, anything, lineage)


def _grouped(runs: list[RunSummary], lineage: dict[str, Lineage]) -> list[RunSummary]:
    """`runs` in their order, but each replay or fork whose original is among them right under it."""
    ids = {run.id for run in runs}
    children: dict[str, list[RunSummary]] = {}
    for run in runs:
        original = lineage[run.id].original if run.id in lineage else None
        if original in ids and original != run.id:
            children.setdefault(str(original), []).append(run)
    placed = {run.id for group in children.values() for run in group}
    ordered: list[RunSummary] = []

    def put(run: RunSummary) -> None:
        ordered.append(run)
        for child in children.pop(run.id, []):
            put(child)

    for run in runs:
        if run.id not in placed:
            put(run)
    # A group whose original was itself placed under one of its own replays (a cycle) keeps its rows.
    ordered.extend(run for group in children.values() for run in group if run not in ordered)
    return ordered
