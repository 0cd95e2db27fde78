"""Process ids as file names: the published layout for ordinary ids, one file per id always."""

from __future__ import annotations

import asyncio
import string
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from devtool.journal import FileJournal, JournalEntry, JournalError
from devtool.journal.names import MAX_STEM, file_stem, ignores_case

STEM_CHARACTERS = set(string.ascii_letters + string.digits + "-_.%~")


@pytest.mark.parametrize("process_id", ["billing-ops", "cp-mid", "random-500", "a_b", "Agent.v2", "x" * 200])
def test_ordinary_ids_are_their_own_file_names(process_id: str) -> None:
    assert file_stem(process_id) == process_id


@pytest.mark.parametrize(
    ("process_id", "stem"),
    [
        ("a/b", "a%2Fb"),
        ("a\\b", "a%5Cb"),
        ("50%", "50%25"),
        (".hidden", "%2Ehidden"),
        ("..", "%2E."),
        ("café", "caf%C3%A9"),
        ("nul\x00byte", "nul%00byte"),
        ("two words", "two%20words"),
    ],
)
def test_other_characters_are_escaped(process_id: str, stem: str) -> None:
    assert file_stem(process_id) == stem


def test_ids_that_the_published_library_mixed_up_get_their_own_files(tmp_path: Path) -> None:
    journal = FileJournal(tmp_path)

    async def scenario() -> tuple[list[str], list[str]]:
        await journal.append(JournalEntry(entry_id="slash", process_id="a/b", entry_type="context_update"))
        await journal.append(JournalEntry(entry_id="underscore", process_id="a_b", entry_type="context_update"))
        return [e.entry_id for e in await journal.read("a/b")], [e.entry_id for e in await journal.read("a_b")]

    assert asyncio.run(scenario()) == (["slash"], ["underscore"])
    assert sorted(path.name for path in tmp_path.glob("*.jsonl")) == ["a%2Fb.jsonl", "a_b.jsonl"]


def test_case_is_escaped_where_the_directory_ignores_it() -> None:
    assert file_stem("Acme", fold_case=True) == "%41cme"
    assert file_stem("Acme", fold_case=True).lower() != file_stem("acme", fold_case=True).lower()


def test_long_ids_are_shortened_without_sharing_a_file() -> None:
    first, second = "p" * 300 + "-1", "p" * 300 + "-2"
    assert len(file_stem(first)) == len(file_stem(second)) == MAX_STEM
    assert file_stem(first) != file_stem(second)
    assert "~" in file_stem(first)


def test_an_empty_id_names_no_file() -> None:
    with pytest.raises(JournalError, match="must not be empty"):
        file_stem("")


@given(st.text(min_size=1, max_size=300), st.text(min_size=1, max_size=300), st.booleans())
@example("a/b", "a%2Fb", False)
@example("a/b", "a_b", False)
@example("Acme", "acme", True)
@example("%41cme", "Acme", True)
@example("q" * 250 + "A", "q" * 250 + "a", True)
def test_stems_are_safe_and_never_shared(first: str, second: str, fold_case: bool) -> None:
    one, two = file_stem(first, fold_case=fold_case), file_stem(second, fold_case=fold_case)
    assert set(one) <= STEM_CHARACTERS
    assert len(one.encode()) <= MAX_STEM
    assert not one.startswith(".")
    if fold_case:  # the two stems differ even to a filesystem that ignores case
        assert (one.lower() == two.lower()) == (first == second)
    assert (one == two) == (first == second)


def test_this_directory_is_case_sensitive(tmp_path: Path) -> None:
    assert ignores_case(tmp_path) is False
    assert list(tmp_path.iterdir()) == []  # the probe is gone
