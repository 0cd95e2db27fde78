"""Uploading traces and journals on the runs page: what loads, and every way an upload can be wrong."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from devtool.store import Store
from devtool.web import create_app
from devtool.web.routes.runs_list import MAX_FILES, safe_name
from devtool.web.settings import Settings
from tests.conftest import CORPUS, Trace
from tests.off_loop import audited
from tests.otlp_factory import genai_run, write_jsonl
from tests.web_runs import html, one

JOURNAL = CORPUS / "promptise" / "billing-ops.journal.jsonl"
HX = {"HX-Request": "true", "HX-Current-URL": "http://testserver/"}


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with TestClient(create_app(store)) as client:
        yield client


def a_trace(agent: str = "uploader") -> Trace:
    t = Trace()
    root = t.start("agent", agentId=agent)
    t.end(t.start("turn", root, step=0))
    t.end(root)
    return t


def trace_bytes(trace: Trace, tmp_path: Path) -> bytes:
    return trace.write(tmp_path / "t.jsonl").read_bytes()


def stored(store: Store) -> tuple[int, int]:
    return store.query("SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM journal_entries)")[0]


def outcomes(text: str) -> list[str]:
    return [" ".join(item.text().split()) for item in html(text).css(".upload-file")]


def test_a_trace_loads_and_the_list_shows_it(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace = a_trace()
    response = client.post("/upload", files={"file": ("run.jsonl", trace_bytes(trace, tmp_path))}, headers=HX)
    assert response.status_code == 200
    assert response.headers["vary"] == "HX-Request"
    page = html(response.text)
    item = one(page, ".upload-file.upload-loaded")
    assert one(item, ".upload-name").text() == "run.jsonl"
    assert one(item, ".upload-message").text() == "loaded 4 events, 2 spans, 1 run"
    assert one(item, "a.upload-link").attributes["href"] == f"/runs/{trace.trace_id}"
    # The runs table is swapped out of band, with the new run in it.
    table = one(page, "#runs-results[hx-swap-oob]")
    assert one(table, f'tr[data-trace-id="{trace.trace_id}"] .run-title').text() == "uploader"
    assert stored(store) == (4, 0)


def test_the_uploads_folder_is_made_and_removed_off_the_event_loop(client: TestClient, tmp_path: Path) -> None:
    with audited("tempfile.mkdtemp", "shutil.rmtree") as seen:
        response = client.post("/upload", files={"file": ("run.jsonl", trace_bytes(a_trace(), tmp_path))}, headers=HX)
    assert response.status_code == 200
    # Removing it removes what was uploaded, up to the upload limit: disk work, in a worker thread.
    assert [event for event, _ in seen] == ["tempfile.mkdtemp", "shutil.rmtree"]
    assert [on_loop for _, on_loop in seen] == [False, False]


def test_a_gzipped_export_loads(client: TestClient, store: Store, tmp_path: Path) -> None:
    trace = a_trace("exported")
    content = gzip.compress(trace_bytes(trace, tmp_path))
    response = client.post("/upload", files={"file": ("run.jsonl.gz", content)}, headers=HX)
    assert response.status_code == 200
    assert one(html(response.text), ".upload-message").text() == "loaded 4 events, 2 spans, 1 run"
    assert stored(store) == (4, 0)


def test_a_journal_links_its_process(client: TestClient, store: Store) -> None:
    response = client.post("/upload", files={"file": (JOURNAL.name, JOURNAL.read_bytes())}, headers=HX)
    assert response.status_code == 200
    item = one(html(response.text), ".upload-file")
    assert one(item, ".upload-message").text() == "loaded 10 journal entries"
    assert one(item, "a.upload-link").attributes["href"] == "/processes/billing-ops"


def test_the_same_file_twice_adds_nothing(client: TestClient, store: Store) -> None:
    client.post("/upload", files={"file": ("j.jsonl", JOURNAL.read_bytes())}, headers=HX)
    again = client.post("/upload", files={"file": ("again.jsonl", JOURNAL.read_bytes())}, headers=HX)
    assert again.status_code == 200
    assert outcomes(again.text) == ["= again.jsonl: already loaded (10 journal entries), nothing added"]
    assert stored(store) == (0, 10)


def test_several_files_load_each_on_its_own(client: TestClient, store: Store, tmp_path: Path) -> None:
    files = [
        ("file", ("good.jsonl", trace_bytes(a_trace(), tmp_path))),
        ("file", ("bad.jsonl", b'{"schemaVersion": 1}\n')),
        ("file", ("journal.jsonl", JOURNAL.read_bytes())),
    ]
    response = client.post("/upload", files=files, headers=HX)
    assert response.status_code == 422  # one failed, as `devtool load` exits 2
    page = html(response.text)
    assert [item.attributes["class"] for item in page.css(".upload-file")] == [
        "upload-file upload-loaded",
        "upload-file upload-failed",
        "upload-file upload-loaded",
    ]
    assert stored(store) == (4, 10)


NONE_GOOD = ", nothing stored"  # and not one good line: no "Load its good lines"
BAD_FILES = [
    ("empty.jsonl", b"", "is empty: nothing to load"),
    ("blank.jsonl", b"\n  \n", "holds only blank lines: nothing to load"),
    ("nul.jsonl", b"\x00\x01{}", "is binary (a NUL byte at offset 0), not a trace or a journal"),
    (
        "cut.jsonl.gz",
        gzip.compress(JOURNAL.read_bytes())[:200],
        "is not a whole gzip file: Compressed file ended before the end-of-stream marker was reached",
    ),
    ("utf16.jsonl", '{"a": 1}\n'.encode("utf-16"), "is UTF-16 text: save it as UTF-8, not a trace or a journal"),
    (
        "other.json",
        b'{"hello": "world"}',
        "is neither a trace nor a journal: its first object has keys hello (a TraceEvent has type, timestamp, "
        "trace; a journal entry has entry_id, process_id, timestamp, entry_type; an OTLP request has "
        "resourceSpans)",
    ),
    (
        "numbers.json",
        b"[1, 2]",
        f"2 bad lines{NONE_GOOD}: element 0: not a JSON object but a number; element 1: not a JSON object but a number",
    ),
    (
        "journal.jsonl",
        b'{"entry_id": "e", "process_id": "p", "timestamp": "yesterday", "entry_type": "x", "data": {}}\n',
        f"1 bad line{NONE_GOOD}: line 1: \"timestamp\" 'yesterday' is not ISO 8601",
    ),
    (
        "cut.jsonl",
        b'{"schemaVersion": 1, "type": "agent:start", "timestamp": 1, "agentId": "a", "trace": {"traceId"',
        f"1 bad line{NONE_GOOD}: line 1, column 96: not JSON: cut short",
    ),
]


@pytest.mark.parametrize(("name", "content", "reason"), BAD_FILES, ids=[name for name, _, _ in BAD_FILES])
def test_a_file_that_cannot_load_says_what_and_where(
    client: TestClient, store: Store, name: str, content: bytes, reason: str
) -> None:
    client.post("/upload", files={"file": ("j.jsonl", JOURNAL.read_bytes())}, headers=HX)
    response = client.post("/upload", files={"file": (name, content)}, headers=HX)
    assert response.status_code == 422
    assert outcomes(response.text) == [f"✕ {name}: {reason}"]
    # Not one good line among them: nothing offers to load "its good lines".
    assert html(response.text).css(".upload-file button.upload-retry") == []
    assert stored(store) == (0, 10)  # what was stored is still there, nothing of the bad file


def test_a_bad_line_is_named_by_its_number(client: TestClient, store: Store, tmp_path: Path) -> None:
    lines = trace_bytes(a_trace(), tmp_path).splitlines(keepends=True)
    lines[2] = lines[2].replace(b'"type":"turn:end"', b'"type":null')
    response = client.post("/upload", files={"file": ("bad.jsonl", b"".join(lines))}, headers=HX)
    assert response.status_code == 422
    assert outcomes(response.text) == ['✕ bad.jsonl: 1 bad line, nothing stored: line 3: no "type" Load its good lines']
    assert stored(store) == (0, 0)


def test_the_good_lines_load_when_asked(client: TestClient, store: Store, tmp_path: Path) -> None:
    content = trace_bytes(a_trace(), tmp_path) + b"oops\n[1]\n"
    response = client.post(
        "/upload", files={"file": ("some-bad.jsonl", content)}, data={"bad_lines": "skip"}, headers=HX
    )
    assert response.status_code == 200
    item = one(html(response.text), ".upload-file")
    assert one(item, ".upload-message").text() == "loaded 4 events, 2 spans, 1 run, 2 bad lines skipped"
    assert [line.text() for line in item.css(".upload-skipped li")] == [
        "line 5, column 1: skipped: not JSON: “oops”",
        "line 6: skipped: not a JSON object but an array",
    ]
    assert stored(store) == (4, 0)


def test_over_the_limit_is_413_before_or_after_reading(store: Store, tmp_path: Path) -> None:
    small = Settings(max_upload_bytes=600)
    with TestClient(create_app(store, small)) as client:
        # Within the framing allowance: read, then refused by the files' own size.
        response = client.post("/upload", files={"file": ("big.jsonl", b"x" * 700)}, headers=HX)
        assert response.status_code == 413
        assert one(html(response.text), ".upload-error").text() == (
            "Not loaded: the upload is 700 bytes, over the limit of 600 bytes"
        )
        # Far over: refused from its Content-Length, before the body is read.
        response = client.post("/upload", files={"file": ("huge.jsonl", b"x" * (200 << 10))}, headers=HX)
        assert response.status_code == 413
        assert "over the limit of 600 bytes" in one(html(response.text), ".upload-error").text()
    assert stored(store) == (0, 0)


def test_a_request_that_is_not_an_upload_is_400(client: TestClient, store: Store) -> None:
    as_json = client.post("/upload", json={"file": "x"}, headers=HX)
    assert as_json.status_code == 400
    assert one(html(as_json.text), ".upload-error").text() == (
        "Not loaded: send files as multipart/form-data (a form with a `file` field), not application/json"
    )
    no_file = client.post("/upload", data={"bad_lines": "skip"}, files={"other": ("x", b"1")}, headers=HX)
    assert no_file.status_code == 400
    assert one(html(no_file.text), ".upload-error").text() == "Not loaded: no file in the upload: choose or drop one"
    broken = client.post(
        "/upload",
        content=b"--nope\r\nthis is not multipart",
        headers={**HX, "Content-Type": "multipart/form-data; boundary=zzz"},
    )
    assert broken.status_code == 400
    assert (
        one(html(broken.text), ".upload-error")
        .text()
        .startswith("Not loaded: the upload is not a form post with files")
    )
    too_many = client.post("/upload", files=[("file", (f"{i}.jsonl", b"{}")) for i in range(MAX_FILES + 1)])
    assert too_many.status_code == 400
    assert "Too many files" in one(html(too_many.text), ".upload-error").text()
    assert stored(store) == (0, 0)


def test_an_upload_without_a_length_is_411(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"--b\r\n"

    response = client.post(
        "/upload", content=chunks(), headers={**HX, "Content-Type": "multipart/form-data; boundary=b"}
    )
    assert response.status_code == 411
    assert "did not say its size" in one(html(response.text), ".upload-error").text()


def test_a_plain_form_post_gets_the_whole_page(client: TestClient, tmp_path: Path) -> None:
    trace = a_trace("plain")
    response = client.post("/upload", files={"file": ("plain.jsonl", trace_bytes(trace, tmp_path))})
    assert response.status_code == 200
    page = html(response.text)
    assert one(page, "title").text() == "Runs · DevTool"
    assert one(page, "#upload-result .upload-message").text() == "loaded 4 events, 2 spans, 1 run"
    assert one(page, f'#runs-results tr[data-trace-id="{trace.trace_id}"]')
    assert page.css("[hx-swap-oob]") == []


def test_the_table_swapped_in_keeps_the_filter_of_the_page(client: TestClient, tmp_path: Path) -> None:
    headers = {**HX, "HX-Current-URL": "http://testserver/?q=nothing-matches&status=failed"}
    response = client.post("/upload", files={"file": ("r.jsonl", trace_bytes(a_trace(), tmp_path))}, headers=headers)
    table = one(html(response.text), "#runs-results[hx-swap-oob]")
    assert table.css("tr.run-row") == []
    assert "No runs match “nothing-matches” with status failed" in one(table, ".empty-state").text()


def test_a_hostile_file_name_is_a_plain_name(client: TestClient, tmp_path: Path) -> None:
    # (Browsers and httpx send a `"` in a file name as %22, so this payload needs none.)
    name = "../../<img src=x onerror=alert(1) class=pwned>.jsonl"
    response = client.post("/upload", files={"file": (name, trace_bytes(a_trace(), tmp_path))}, headers=HX)
    assert response.status_code == 200
    page = html(response.text)
    assert one(page, ".upload-name").text() == "<img src=x onerror=alert(1) class=pwned>.jsonl"
    assert page.css(".pwned, [onerror]") == []


@pytest.mark.parametrize(
    ("given", "name"),
    [
        ("run.jsonl", "run.jsonl"),
        ("C:\\Users\\me\\trace.jsonl", "trace.jsonl"),
        ("/etc/passwd", "passwd"),
        ("..", "upload"),
        ("", "upload"),
        (None, "upload"),
        ("a\x00b\nc.jsonl", "abc.jsonl"),
        ("é" * 150 + ".jsonl", "é" * 90 + "….jsonl"),
    ],
)
def test_safe_names(given: str | None, name: str) -> None:
    assert safe_name(given) == name


def test_an_otlp_file_says_the_events_spans_and_runs_it_added(client: TestClient, store: Store, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "spans.otlp.jsonl", [genai_run()])
    response = client.post("/upload", files={"file": (path.name, path.read_bytes())}, headers=HX)
    assert response.status_code == 200
    events, entries = stored(store)
    assert (events, entries) == (8, 0)
    assert outcomes(response.text) == [f"✓ spans.otlp.jsonl: loaded 8 events, 4 spans, 1 run run {'1' * 12}"]
