"""Server-sent events read out of a streamed answer's bytes, however the bytes are cut."""

from __future__ import annotations

import pytest

from devtool.instrument.sse import SseDecoder

STREAM = (
    b'data: {"a": 1}\n\n'
    b'event: message_start\ndata: {"b": 2}\n\n'
    b": a comment, then an event over two data lines\n"
    b"event: multi\ndata: one\ndata: two\n\n"
    b"event: no-data\n\n"
    b"data:no space \xc3\xa9\n\n"
    b"data: [DONE]\n\n"
)
EVENTS = [
    (None, '{"a": 1}'),
    ("message_start", '{"b": 2}'),
    ("multi", "one\ntwo"),
    (None, "no space é"),
    (None, "[DONE]"),
]


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 16, 1000])
def test_events_come_out_whole_whatever_the_pieces(size: int, newline: bytes) -> None:
    stream, decoder = STREAM.replace(b"\n", newline), SseDecoder()
    events = []
    for start in range(0, len(stream), size):
        events += decoder.feed(stream[start : start + size])
    assert events == EVENTS


def test_hostile_bytes_are_read_not_raised() -> None:
    assert SseDecoder().feed(b"event: x\xff\ndata: \xfe<script>\n\n") == [("x\ufffd", "\ufffd<script>")]


def test_an_unfinished_event_waits_for_its_blank_line() -> None:
    decoder = SseDecoder()
    assert decoder.feed(b"event: a\ndata: 1\n") == []
    assert decoder.feed(b"\n") == [("a", "1")]


def _one_by_one(data: bytes) -> list[tuple[str | None, str]]:
    """What each event's bytes give decoded alone: the reading the decoder must agree with."""
    *blocks, _ = data.replace(b"\r\n", b"\n").split(b"\n\n")
    events = []
    for block in blocks:
        decoder = SseDecoder()
        events += decoder.feed(block + b"\n\n")
    return events


@pytest.mark.parametrize(
    "data",
    [
        b"data: a\n\n\ndata: b\n\n\n\n\ndata: c\n\n\n",  # runs of newlines, odd and even
        b"data: \xe2\x82\n\ndata: \xac\n\nevent: \xf0\x9f\ndata: x\n\n",  # a sequence cut by a blank line
        b"event: a\ndata: 1\ndata: 2\n\ndata: \xff\r\n\r\n\n\ndata: [DONE]\n\n\n\n\n",
    ],
)
def test_a_batch_reads_as_its_events_read_alone(data: bytes) -> None:
    for size in (1, 3, len(data)):
        decoder, events = SseDecoder(), []
        for start in range(0, len(data), size):
            events += decoder.feed(data[start : start + size])
        assert events == _one_by_one(data)
