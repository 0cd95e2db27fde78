"""The pytest plugin's errors: one base, a bad cassette file, a call a strict replay refuses."""

from __future__ import annotations


class TestingError(Exception):
    """Base of `devtool.testing`'s errors."""

    __test__ = False  # a class named Test* is not a test class to pytest


class CassetteError(TestingError):
    """A cassette file that cannot be read: its path and the first bad field."""


class CassetteMiss(TestingError):
    """A call a strict replay does not hold in its cassette: its message is the report a person reads
    (the agent, the callId, the diff against the recorded call, the command that re-records the test)."""
