"""Process rewind from the DevTool: the plan for an entry (the entries it reaches and what the mode does
to each), Apply after confirming where it writes, into the process's own journal file (or into the
DevTool's copy when that file cannot be written), and the journal never edited."""

from __future__ import annotations

import asyncio
import getpass
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest
from starlette.testclient import TestClient

from devtool.demo import billing
from devtool.journal import FileJournal, ReplayEngine
from devtool.store import Store, load_file
from devtool.store.queries import journal_entries
from devtool.web import create_app
from tests.web_runs import html, one


@pytest.fixture
def incident(tmp_path: Path) -> Path:
    """The billing-ops incident's journal file, as the demo records it."""
    folder = tmp_path / "journal"
    journal, _ = asyncio.run(billing.run_incident(folder))
    return journal


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store), follow_redirects=False) as client:
        yield client


def hold_entry(store: Store) -> str:
    (entry,) = [e for e in journal_entries(store, billing.PROCESS_ID) if e.data.get("tool") == "apply_account_hold"]
    return entry.entry_id


REWIND = f"/processes/{billing.PROCESS_ID}/rewind"


def panel(client: TestClient, entry_id: str, mode: str = "both", **extra: str) -> str:
    response = client.get(REWIND, params={"entry": entry_id, "mode": mode, **extra})
    assert response.status_code == 200, response.text
    return response.text


def test_the_plan_at_the_account_hold_lists_the_entries_it_reaches(
    client: TestClient, store: Store, incident: Path
) -> None:
    load_file(store, incident)
    page = html(panel(client, hold_entry(store)))
    assert one(page, "#plan-affected").text() == "3"
    rows = [[cell.text().strip() for cell in row.css("td")] for row in page.css("#plan-entries tr.plan-row")]
    assert [(row[1], row[3]) for row in rows] == [
        ("tool_call", "taken back"),
        ("context_update", "taken back"),
        ("state_transition", "taken back"),  # the stop that ends the demo's recording
    ]
    assert "apply_account_hold" in rows[0][2]
    assert [o.attributes["value"] for o in page.css("form.rewind-mode #rewind-mode option")] == [
        "both",
        "conversation_only",
        "code_only",
        "summarize",
    ]
    assert str(incident) in one(page, "#rewind-where").text()  # named before anything is written
    assert not page.css("form[method=post]")  # Apply asks first
    detail = html(client.get(f"/processes/{billing.PROCESS_ID}", params={"entry": hold_entry(store)}).text)
    assert one(detail, "#entry-actions").attributes["hx-get"] == f"{REWIND}?entry={hold_entry(store)}"


def test_each_mode_says_what_it_does_to_each_entry_and_the_counts_add_up(
    client: TestClient, store: Store, incident: Path
) -> None:
    load_file(store, incident)
    first = journal_entries(store, billing.PROCESS_ID)[1].entry_id  # the cron trigger: nearly everything after
    fates = {}
    for mode in ("both", "conversation_only", "code_only", "summarize"):
        page = html(panel(client, first, mode))
        fates[mode] = {row.attributes["data-entry-id"]: one(row, ".fate").text() for row in page.css("tr.plan-row")}
        count = one(page, "#plan-count").text()
        affected = int(one(page, "#plan-affected").text())
        assert len(fates[mode]) == affected
        groups = [int(word) for word in count.split(":", 1)[1].replace(",", " ").split() if word.isdigit()]
        assert sum(groups) == affected, count
    assert set(fates["both"].values()) == {"taken back", "no state"}
    assert set(fates["summarize"].values()) == {"summarized", "no state"}
    for entry_id, fate in fates["conversation_only"].items():
        assert (fate, fates["code_only"][entry_id]) in {
            ("taken back", "kept"),
            ("kept", "taken back"),
            ("no state",) * 2,
        }


def confirmed(client: TestClient, entry_id: str, mode: str) -> dict[str, str]:
    """The form Apply asks to confirm: its hidden fields, `to` naming where the rewind is written."""
    page = html(panel(client, entry_id, mode, confirm="1"))
    form = one(page, "form#rewind-confirm")
    assert form.attributes["action"] == REWIND
    assert form.attributes["method"] == "post"
    fields = {field.attributes["name"]: field.attributes.get("value") or "" for field in form.css("input[type=hidden]")}
    assert fields["to"] in one(form, "#rewind-confirm-question").text()
    return {key: value for key, value in fields.items() if key != "_csrf"}


def apply(client: TestClient, entry_id: str, mode: str) -> str:
    response = client.post(REWIND, data=confirmed(client, entry_id, mode))
    assert response.status_code == 303, response.text
    location = urlsplit(response.headers["location"])
    assert location.path == f"/processes/{billing.PROCESS_ID}"
    (rewind_id,) = parse_qs(location.query)["entry"]
    return rewind_id


def test_apply_records_the_rewind_in_the_process_journal_and_never_edits_it(
    client: TestClient, store: Store, incident: Path
) -> None:
    load_file(store, incident)
    before = incident.read_bytes()
    assert confirmed(client, hold_entry(store), "code_only")["to"] == str(incident)
    rewind_id = apply(client, hold_entry(store), "code_only")
    after = incident.read_bytes()
    assert after.startswith(before)  # appended to, never edited
    entries = journal_entries(store, billing.PROCESS_ID)
    assert [e.entry_type for e in entries][-2:] == ["rewind", "checkpoint"]
    rewind = entries[-2]
    assert rewind.entry_id == rewind_id
    assert rewind.data["actor"] == getpass.getuser()
    assert rewind.data["mode"] == "code_only"
    assert rewind.data["entries_affected"] == 3
    # The process itself resumes from the state just before the hold (code_only keeps the conversation).
    recovered = asyncio.run(_recover(incident.parent))
    assert recovered["context_state"] == {"invoice_state": "reconciling", "account_status": "delinquent"}
    page = html(panel(client, rewind_id))
    assert "rewound the process to just before" in one(page, ".rewind-did").text()
    assert "account_hold_applied" not in one(page, "#rewound-state").text()
    assert "delinquent" in one(page, "#rewound-state").text()
    assert "Recorded in the process's journal" in one(page, "#rewind-where").text()
    lane = html(client.get(f"/processes/{billing.PROCESS_ID}", params={"entry": rewind_id}).text)
    assert lane.css(".t-rewind")


async def _recover(folder: Path) -> dict[str, object]:
    async with FileJournal(folder) as journal:
        return await ReplayEngine(journal).recover(billing.PROCESS_ID)


def test_a_journal_the_devtool_cannot_write_gets_the_rewind_in_the_devtool_only(
    client: TestClient, store: Store, incident: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "elsewhere" / "copy-of-billing.jsonl"
    copy.parent.mkdir()
    shutil.copy(incident, copy)
    load_file(store, copy)
    copy.unlink()
    rewinds = store.path.parent / f"{store.path.stem}-rewinds"
    assert confirmed(client, hold_entry(store), "both")["to"] == str(rewinds)
    rewind_id = apply(client, hold_entry(store), "both")
    assert not copy.exists()
    assert incident.read_bytes().count(b'"rewind"') == 0
    (written,) = rewinds.glob("*.jsonl")
    assert b'"entry_type":"rewind"' in written.read_bytes()
    page = html(panel(client, rewind_id))
    assert "Recorded in this DevTool only" in one(page, "#rewind-where").text()


@pytest.mark.parametrize(
    ("form", "status", "message"),
    [
        ({"entry": "no-such-entry", "mode": "both"}, 422, "no-such-entry"),
        ({"mode": "cancel"}, 422, "cancel applies nothing"),
        ({"mode": "everything"}, 422, "mode must be one of"),
        ({"entry": "", "mode": "both"}, 400, "needs `entry`"),
        ({"to": ""}, 400, "needs `to`"),
        ({"to": "/tmp/somewhere-else.jsonl"}, 422, "nothing was written"),
    ],
)
def test_what_apply_refuses(
    client: TestClient, store: Store, incident: Path, form: dict[str, str], status: int, message: str
) -> None:
    load_file(store, incident)
    before = incident.read_bytes()
    data = {"entry": hold_entry(store), "mode": "both", "to": str(incident), **form}
    response = client.post(REWIND, data=data)
    assert response.status_code == status
    assert message in one(html(response.text), ".error-detail").text()
    assert incident.read_bytes() == before


def test_the_first_address_of_process_rewind_redirects_to_the_process_page_one(
    client: TestClient, store: Store, incident: Path
) -> None:
    load_file(store, incident)
    entry_id = hold_entry(store)
    query = {"process": billing.PROCESS_ID, "entry": entry_id, "mode": "code_only", "to": str(incident)}
    moved = client.get("/process-rewind", params=query)
    assert moved.status_code == 308
    assert moved.headers["location"] == f"{REWIND}?entry={entry_id}&mode=code_only&to={quote(str(incident), safe='')}"
    posted = client.post("/process-rewind", data=query)
    assert (posted.status_code, posted.headers["location"]) == (307, REWIND)  # method and form go along
    followed = client.post("/process-rewind", data=query, follow_redirects=True)
    assert [r.status_code for r in followed.history] == [307, 303]
    assert followed.status_code == 200
    assert [e.entry_type for e in journal_entries(store, billing.PROCESS_ID)][-2:] == ["rewind", "checkpoint"]
    assert client.get("/process-rewind", params={"entry": entry_id}).status_code == 400


def test_a_rewind_entrys_before_and_after_is_the_state_its_checkpoint_left(
    client: TestClient, store: Store, incident: Path
) -> None:
    load_file(store, incident)
    rewind_id = apply(client, hold_entry(store), "code_only")
    page = html(client.get(f"/processes/{billing.PROCESS_ID}", params={"entry": rewind_id}).text)
    changes = [[cell.text(strip=True) for cell in row.css("td")] for row in page.css(".context-diff tr.change-removed")]
    assert changes == [["−action", '"account_hold_applied"', "—"]]  # what "State the rewind left" lacks
    assert any(h4.text().startswith("Context 1 change") for h4 in page.css(".state-block h4"))
