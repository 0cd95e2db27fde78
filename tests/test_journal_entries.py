"""Journal entries: defaults, the JSON line on disk, strict reading, derived ids, torn-line salvage."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from devtool.journal import JournalEntry, JournalLevel, MalformedEntryError
from devtool.journal.entries import decode_line, derived_entry_id, encode_entry, new_entry_id


def line(**fields: object) -> bytes:
    base: dict[str, object] = {
        "entry_id": "e1",
        "process_id": "p",
        "timestamp": "2026-07-16T02:00:00+00:00",
        "entry_type": "context_update",
        "data": {"key": "k", "value": 1},
    }
    base.update(fields)
    return orjson.dumps({name: value for name, value in base.items() if value is not ...})


def test_a_new_entry_has_a_uuid4_id_and_a_utc_timestamp() -> None:
    before = datetime.now(UTC)
    entry = JournalEntry(process_id="p", entry_type="trigger_event")
    assert uuid.UUID(entry.entry_id).version == 4
    assert entry.timestamp.tzinfo is not None
    assert before <= entry.timestamp <= datetime.now(UTC)
    assert entry.data == {}
    assert JournalEntry(entry_id="", process_id="p").entry_id != ""


def test_a_naive_timestamp_is_utc() -> None:
    entry = JournalEntry(process_id="p", timestamp=datetime(2026, 7, 16, 2, 0))
    assert entry.timestamp == datetime(2026, 7, 16, 2, 0, tzinfo=UTC)


def test_an_entry_is_one_json_line_with_an_iso_timestamp_and_reads_back_equal() -> None:
    entry = JournalEntry(
        entry_id="e1",
        process_id="billing-ops",
        timestamp=datetime(2026, 7, 16, 2, 0, 30, tzinfo=UTC),
        entry_type="context_update",
        data={"key": "note", "value": "café\nnext line"},
    )
    encoded = encode_entry(entry)
    assert encoded.endswith(b"\n")
    assert encoded.count(b"\n") == 1
    assert json.loads(encoded) == {
        "entry_id": "e1",
        "process_id": "billing-ops",
        "timestamp": "2026-07-16T02:00:30+00:00",
        "entry_type": "context_update",
        "data": {"key": "note", "value": "café\nnext line"},
    }
    assert decode_line(encoded[:-1]).entry == entry
    assert JournalEntry.from_dict(entry.to_dict()) == entry


def test_values_that_are_not_json_are_written_as_text_and_big_integers_exactly() -> None:
    class Opaque:
        def __str__(self) -> str:
            return "opaque!"

    entry = JournalEntry(process_id="p", data={"obj": Opaque(), 3: "int key", "big": 2**70, "tuple": (1, 2)})
    data = decode_line(encode_entry(entry)[:-1]).entry.data
    assert data == {"obj": "opaque!", "3": "int key", "big": 2**70, "tuple": [1, 2]}


def test_other_utc_offsets_are_kept() -> None:
    entry = decode_line(line(timestamp="2026-07-16T04:00:00+02:00")).entry
    assert entry.timestamp.utcoffset() == timedelta(hours=2)
    assert entry.timestamp == datetime(2026, 7, 16, 2, 0, tzinfo=timezone.utc)  # noqa: UP017


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"[1, 2]", "not a JSON object but an array"),
        (b'"text"', "not a JSON object but a string"),
        (line(timestamp=None), "timestamp is missing"),
        (line(timestamp=...), "timestamp is missing"),
        (line(timestamp="yesterday"), "timestamp 'yesterday' is not ISO 8601"),
        (line(timestamp=1752631200), "timestamp is a number"),
        (line(entry_id=7), "entry_id is a number, not a string"),
        (line(process_id=["p"]), "process_id is an array, not a string"),
        (line(entry_type=None), "entry_type is null, not a string"),
        (line(data=[1]), "data is an array, not an object"),
        (b'{"entry_id": "e1", "timesta', "not JSON"),
        (b"\x00\x00\x00\x00", "only zero bytes"),
        (line(data={"v": "ok"})[:-3] + b"\xff\xfe" + b'"}}', "invalid UTF-8"),
    ],
)
def test_a_line_that_is_not_an_entry_says_what_is_wrong(raw: bytes, problem: str) -> None:
    with pytest.raises(MalformedEntryError, match="^" + problem.replace("(", r"\(")):
        decode_line(raw)


def test_missing_pieces_take_the_published_defaults() -> None:
    entry = decode_line(b'{"entry_id": "x", "timestamp": "2026-07-21T02:00:16Z"}').entry
    assert (entry.process_id, entry.entry_type, entry.data) == ("", "", {})
    assert entry.timestamp == datetime(2026, 7, 21, 2, 0, 16, tzinfo=UTC)


def test_an_entry_without_id_gets_the_id_the_published_library_derives() -> None:
    # From the corpus edge-shapes journal: promptise 1.10.1 read this line as b4be468a-...
    raw = (
        b'{"process_id": "edge-shapes", "timestamp": "2026-07-21T02:00:14+00:00", '
        b'"entry_type": "context_update", "data": {"key": "legacy", "value": "no-id"}}'
    )
    assert decode_line(raw).entry.entry_id == "b4be468a-38d6-5493-90ca-37e5d04ce29c"
    empty = json.loads(raw)
    empty["entry_id"] = ""
    assert derived_entry_id(empty) == JournalEntry.from_dict(empty).entry_id == decode_line(raw).entry.entry_id


def test_a_line_glued_to_the_torn_tail_of_another_is_recovered() -> None:
    whole = line(entry_id="kept")
    for torn in (b'{"entry_id": "lost", "process_id": "p", "timest', b"\x00" * 40, b'{"entry_id": "a{"entry_id'):
        decoded = decode_line(torn + whole)
        assert decoded.salvaged
        assert decoded.entry.entry_id == "kept"
    assert not decode_line(whole).salvaged


def test_levels_are_the_published_ones() -> None:
    assert [level.value for level in JournalLevel] == ["none", "checkpoint", "full"]
    assert JournalLevel("full") is JournalLevel.FULL


def test_ids_are_uuid4_and_a_forked_child_never_repeats_its_parents() -> None:
    ids = {new_entry_id() for _ in range(5000)}
    assert len(ids) == 5000
    assert all(uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122 for i in ids)
    new_entry_id()  # the pool now holds ids a naive fork would hand out twice
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.write(write, new_entry_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    assert child != new_entry_id()
