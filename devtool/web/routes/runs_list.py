"""The runs page `/`: every run and process journal in the store, searchable and filterable by status.

`?q=` searches names, ids, agent ids and the text of events and entries; `?status=` keeps completed,
failed or running ones; `?page=` pages through them. The search box and the status buttons fetch
just the results fragment with htmx and push the URL, so a reload or a copied link shows the same
list. A filter that cannot be (an unknown status, a page that is not a number) gets a 400 page that
says what was wrong and still lists the runs, unfiltered by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from devtool.store import Store
from devtool.store.queries import RunSummary, last_event_id, list_runs
from devtool.store.queries.runs import STATUSES
from devtool.web.links import with_query
from devtool.web.templating import render

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
    def from_query(cls, query: QueryParams) -> RunsFilter:
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
    def lenient(cls, query: QueryParams) -> RunsFilter:
        """The filter the query asks for, leaving out whatever part of it is bad."""
        parts = {}
        for name in ("q", "status", "page"):
            try:
                cls.from_query(QueryParams({name: query.get(name, "")}))
            except BadFilter:
                continue
            parts[name] = query.get(name, "")
        return cls.from_query(QueryParams(parts))

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


def runs_list(store: Store, chosen: RunsFilter) -> RunsList:
    rows = list_runs(
        store,
        search=chosen.q or None,
        status=chosen.status or None,
        limit=PAGE_SIZE + 1,
        offset=(chosen.page - 1) * PAGE_SIZE,
    )
    anything = bool(rows) or bool(list_runs(store, limit=1))
    return RunsList(chosen, rows[:PAGE_SIZE], len(rows) > PAGE_SIZE, anything)


def format_bytes(n: int) -> str:
    """`512 MiB`, `64 KiB`, `900 bytes`."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.0f} {unit}" if value >= 10 or value.is_integer() else f"{value:.1f} {unit}"
    return f"{n} bytes"


def page_context(request: Request, listing: RunsList, **extra: object) -> dict[str, object]:
    """What runs.html and its fragments render from."""
    return {
        "listing": listing,
        "statuses": STATUSES,
        "max_upload": format_bytes(request.app.state.settings.max_upload_bytes),
        "max_upload_bytes": request.app.state.settings.max_upload_bytes,
        "filter_error": None,
        "upload": None,
        **extra,
    }


def filter_of_page(request: Request) -> RunsFilter:
    """The filter of the page a request came from (htmx says which in `HX-Current-URL`)."""
    current = request.headers.get("HX-Current-URL", "")
    return RunsFilter.lenient(QueryParams(urlsplit(current).query))


def runs_page(request: Request) -> HTMLResponse:
    error = None
    try:
        chosen = RunsFilter.from_query(request.query_params)
    except BadFilter as exc:
        error = str(exc)
        chosen = RunsFilter.lenient(request.query_params)
    # Read first: the page's live stream starts after it, so no run stored while it renders is missed.
    live_after = last_event_id(request.app.state.store)
    listing = runs_list(request.app.state.store, chosen)
    context = page_context(request, listing, filter_error=error, live_after=live_after)
    return render(request, "runs.html", context, fragment="_runs_table.html", status_code=400 if error else 200)


routes = [Route("/", runs_page, name="runs")]
