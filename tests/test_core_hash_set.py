"""The frame index walk's set of forgotten spans: every hash added is found, others almost never."""

from __future__ import annotations

import random

from devtool.core.hash_set import HashSet


def test_what_was_added_is_found_and_nothing_else_is() -> None:
    chooser = random.Random(3)
    added = [chooser.getrandbits(64) - (1 << 63) for _ in range(200_000)]  # negative hashes too
    held = HashSet()
    for value in added:
        held.add(value)
    assert all(value in held for value in added)
    others = {chooser.getrandbits(64) - (1 << 63) for _ in range(200_000)} - set(added)
    assert not any(value in held for value in others)
    assert "a span" not in held


def test_a_match_across_two_stored_hashes_is_not_taken_for_one() -> None:
    held = HashSet()
    # Both in bucket 0x0123 (their top 16 bits), the second with 0x0123 in its bits 16-31 too: the
    # eight bytes from the middle of the first to the middle of the second are a hash of that bucket.
    first, second = 0x0123_4567_89AB_CDEF, 0x0123_AAAA_0123_BBBB
    held.add(first)
    held.add(second)
    straddling = int.from_bytes(first.to_bytes(8, "little")[4:] + second.to_bytes(8, "little")[:4], "little")
    assert straddling >> 48 == 0x0123
    assert straddling not in held
    assert first in held
    assert second in held
