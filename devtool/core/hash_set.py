"""A set of 64-bit hashes in about nine bytes each: what the frame index walk remembers of every span it let go.

A Python `set` of ints costs about 80 bytes an entry (the int object and its slot): the spans of a
ten-million-event run held that way are a quarter of a gigabyte. `HashSet` keeps each hash as eight
bytes in one of 65,536 `bytearray`s, chosen by its top 16 bits; a lookup is a byte search (C's) of
that one, a few hundred hashes at ten million.
"""

from __future__ import annotations

from typing import Final

_BUCKET_BITS: Final = 16
_MASK: Final = (1 << 64) - 1


class HashSet:
    """Python `hash` values (any int; kept modulo 2**64), added and tested for membership."""

    __slots__ = ("_buckets",)

    def __init__(self) -> None:
        self._buckets = [bytearray() for _ in range(1 << _BUCKET_BITS)]

    def add(self, value: int) -> None:
        value &= _MASK
        self._buckets[value >> (64 - _BUCKET_BITS)] += value.to_bytes(8, "little")

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        value &= _MASK
        bucket = self._buckets[value >> (64 - _BUCKET_BITS)]
        key = value.to_bytes(8, "little")
        at = bucket.find(key)
        while at >= 0:
            if at % 8 == 0:  # a match across two hashes is none
                return True
            at = bucket.find(key, at + 1)
        return False
