"""Strict JSON, canonical bytes, the SHA-256 content hash, and where a text stops being JSON."""

from __future__ import annotations

import copy
import gc
import hashlib
from dataclasses import dataclass

import orjson
import pytest

from devtool.core.jsonvalue import (
    JsonText,
    NotJSONError,
    canonical_json,
    content_hash,
    content_hash_of_json,
    describe,
    is_json,
    json_copy,
    where_not_json,
)


def test_canonical_json_sorts_keys_at_every_level_without_whitespace_in_utf8() -> None:
    value = {"b": [{"z": 1, "a": "é"}], "a": None}
    assert canonical_json(value) == '{"a":null,"b":[{"a":"é","z":1}]}'.encode()


def test_content_hash_is_sha256_of_the_canonical_form() -> None:
    value = {"name": "search", "input": {"q": "x", "k": 3}}
    assert content_hash(value) == hashlib.sha256(b'{"input":{"k":3,"q":"x"},"name":"search"}').hexdigest()
    assert content_hash({"input": {"k": 3, "q": "x"}, "name": "search"}) == content_hash(value)
    assert content_hash({"name": "search", "input": {"q": "x", "k": 4}}) != content_hash(value)


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ((1, 2), "$ is a builtins.tuple"),
        ({"a": {1, 2}}, "$.a is a builtins.set"),
        ({"a": [1, float("nan")]}, "$.a[1] is nan"),
        ({1: "x"}, "$ has a int key 1"),
        ({"when": object()}, "$.when is a builtins.object"),
    ],
)
def test_json_copy_refuses_what_would_not_replay_as_itself(value: object, where: str) -> None:
    with pytest.raises(NotJSONError) as raised:
        json_copy(value)
    assert str(raised.value).startswith(where)
    assert not is_json(value)


def test_json_copy_is_deep() -> None:
    original = {"a": [{"b": 1}]}
    copied = json_copy(original)
    assert copied == original
    original["a"][0]["b"] = 2  # type: ignore[index]
    assert copied == {"a": [{"b": 1}]}


@dataclass
class Point:
    x: int


def test_describe_marks_what_is_not_json() -> None:
    described = describe({"p": Point(1)})
    assert isinstance(described, dict)
    assert described["$notJson"] == "$.p is a tests.test_core_jsonvalue.Point, not a JSON value"
    assert "Point(x=1)" in str(described["$repr"])
    assert describe({"ok": [1, "two"]}) == {"ok": [1, "two"]}


def test_an_integer_beyond_64_bits_has_no_canonical_json() -> None:
    with pytest.raises(NotJSONError, match="cannot be written as canonical JSON"):
        canonical_json({"seed": 2**70})
    with pytest.raises(NotJSONError):
        content_hash_of_json({"seed": 2**70})


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (b"this is not json", (1, 1, "“this is not json”")),
        (b'{"a": tru}', (1, 7, "“tru}”")),
        (b'{"a": 1', (1, 8, "cut short")),
        (b"[1,\n2,\n3 x]", (3, 3, "“x]”")),
        ('{"é": 1 x}'.encode(), (1, 9, "“x}”")),  # columns count characters, not bytes
        (b'{"a": "' + b"x" * 40 + b'" oops and more after it}', (1, 50, "“oops and more after it}”")),
        (b"\x01\x02", (1, 1, "“··”")),
    ],
)
def test_where_a_text_stops_being_json_is_said_in_a_readers_words(text: bytes, where: tuple[int, int, str]) -> None:
    with pytest.raises(orjson.JSONDecodeError) as caught:
        orjson.loads(text)
    assert where_not_json(text, caught.value) == where
    assert "expected" not in where[2]


def test_json_text_is_parsed_by_a_deep_copy_and_holds_no_containers() -> None:
    text = JsonText(b'{"a": [1, {"b": null}], "c": "\\u00e9"}')
    assert gc.get_referents(text) == [JsonText]  # its type only: nothing more for the collector to walk
    copied = copy.deepcopy({"body": text})
    assert copied == {"body": {"a": [1, {"b": None}], "c": "\u00e9"}}
    assert copy.deepcopy(text) is not copy.deepcopy(text)  # a fresh value each time: a snapshot owns its copy
