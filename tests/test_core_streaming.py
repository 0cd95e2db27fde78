"""`TurnProgress`: the first piece at once, then the whole text so far at most every interval."""

from __future__ import annotations

import time

from devtool.core.streaming import TurnProgress


def test_progress_sends_the_first_piece_at_once_then_the_text_so_far_throttled() -> None:
    sent: list[str] = []
    progress = TurnProgress(sent.append, interval=0.05)
    assert progress.first_at is None
    progress("")
    assert (sent, progress.first_at) == ([], None)  # an empty piece is no answer yet
    progress("Lis")
    first = progress.first_at
    for piece in ("bon", " is", " hilly"):
        progress(piece)
    assert sent == ["Lis"]
    time.sleep(0.06)
    progress(".")
    assert sent == ["Lis", "Lisbon is hilly."]
    assert progress.first_at == first


def test_pieces_read_at_once_are_sent_as_one_by_one_calls_send_them() -> None:
    sent: list[str] = []
    progress = TurnProgress(sent.append, interval=0.05)
    progress.extend(["", ""])
    assert (sent, progress.first_at) == ([], None)
    progress.extend(["", "Lis", "bon"])  # due: the text up to the batch's first piece
    first = progress.first_at
    assert sent == ["Lis"]
    progress.extend([" is"])  # not due
    assert sent == ["Lis"]
    time.sleep(0.06)
    progress.extend([" hilly", "."])
    assert sent == ["Lis", "Lisbon is hilly"]
    progress("!")
    time.sleep(0.06)
    progress.extend(["?"])
    assert sent == ["Lis", "Lisbon is hilly", "Lisbon is hilly.!?"]
    assert progress.first_at == first
