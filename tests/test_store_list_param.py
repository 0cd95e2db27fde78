"""A list of strings bound as one JSON text (`list_param`) is the same list in SQL, whatever it holds."""

from __future__ import annotations

from devtool.store import Store, list_param


def test_a_list_bound_as_json_text_comes_back_element_for_element(store: Store) -> None:
    values = ["plain", "a,b", 'quote " and \\ backslash', "line\nbreak", "\x1e\x1f", "", "naïve ✓ 🦘", "[1]"]
    rows = store.query(f"SELECT unnest({list_param.of('v')})", {"v": list_param.texts(values)})
    assert [row[0] for row in rows] == values
    assert store.query(f"SELECT len({list_param.of('v')})", {"v": list_param.texts([])}) == [(0,)]
