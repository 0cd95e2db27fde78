"""Gzip-compressed traces and journals load as their plain content, and bad ones are named."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from devtool.store import BadLinesError, LoadError, Store, load_file, unpack
from devtool.store.queries import run_events
from tests.conftest import CORPUS, Trace


def packed(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(gzip.compress(content))
    return path


def test_a_gzip_trace_loads_as_its_plain_content_and_only_once(store: Store, tmp_path: Path) -> None:
    plain = CORPUS / "rejelly" / "nested.trace.jsonl"
    path = packed(tmp_path, "nested.trace.jsonl.gz", plain.read_bytes())
    result = load_file(store, path)
    assert result.path == path
    assert result.events == len(plain.read_text().splitlines())
    again = load_file(store, plain)
    assert again.already_loaded
    assert len(run_events(store, result.traces[0])) == result.events


def test_a_gzip_journal_loads(store: Store, tmp_path: Path) -> None:
    journal = CORPUS / "promptise" / "billing-ops.journal.jsonl"
    result = load_file(store, packed(tmp_path, "journal.jsonl.gz", journal.read_bytes()))
    assert result.journal_entries > 0


def test_errors_name_the_compressed_file(store: Store, tmp_path: Path) -> None:
    t = Trace()
    t.end(t.start("agent", agentId="a"))
    lines = b"".join(json.dumps(event).encode() + b"\n" for event in t.events)
    path = packed(tmp_path, "bad.jsonl.gz", lines + b"{not json\n")
    with pytest.raises(BadLinesError, match=r"bad\.jsonl\.gz: 1 bad line.*line 3, column 2: not JSON") as caught:
        load_file(store, path)
    assert caught.value.path == path
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(lines)[:-12])
    with pytest.raises(LoadError, match=r"cut\.jsonl\.gz: is not a whole gzip file"):
        load_file(store, cut)
    assert store.query("SELECT count(*) FROM events") == [(0,)]


def test_a_gzip_bomb_is_refused_before_it_fills_the_disk(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(unpack, "MIN_LIMIT", 1 << 20)
    path = packed(tmp_path, "bomb.jsonl.gz", b"\n" * (8 << 20))
    assert path.stat().st_size * unpack.MAX_RATIO < 8 << 20
    with pytest.raises(LoadError, match=r"bomb\.jsonl\.gz: unpacks to more than 1 MiB"):
        load_file(store, path)
