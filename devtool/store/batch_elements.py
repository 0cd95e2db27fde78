"""A JSON array split into its elements' texts without parsing them, for a batch the parser refused as a
whole only because one element nests too deep.

orjson stops at 1,024 levels of nesting, and it stops for the whole text: one event nested that deep
would make a posted batch "not JSON", and every good event in it lost. Cut into its elements, each is
parsed on its own, and only the deep one is refused (`event_gate.read_batch`). The cut reads the
brackets, commas and strings of the text (a regular expression finds them, so a bracket inside a
string is not one); it is only taken for a text the parser refused for its depth.
"""

from __future__ import annotations

import re

_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},]')
_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")


def array_elements(text: bytes) -> list[bytes] | None:
    """The texts of the elements of the JSON array `text`, in order; None when `text` is not one array
    with balanced brackets (then it is not JSON, whatever its elements)."""
    elements: list[bytes] = []
    depth = 0
    begin = -1
    closed = False
    for match in _TOKENS.finditer(text):
        if closed:
            return None  # something after the array's end
        byte = text[match.start()]
        if byte == 0x22:  # a string: its brackets and commas are text
            if depth == 0:
                return None
        elif byte in _OPEN:
            if depth == 0:
                if byte != 0x5B or text[: match.start()].strip():
                    return None
                begin = match.end()
            depth += 1
        elif byte in _CLOSE:
            depth -= 1
            if depth < 0:
                return None
            if depth == 0:
                last = text[begin : match.start()]
                if last.strip() or elements:
                    elements.append(last)
                closed = True
        elif depth == 1:  # a comma between elements
            elements.append(text[begin : match.start()])
            begin = match.end()
    if not closed or text[match.end() :].strip():
        return None
    return elements
