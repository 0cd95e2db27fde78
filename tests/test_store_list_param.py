"""A list bound as one JSON text (`list_param`) is the same list in SQL, whatever it holds."""

from __future__ import annotations

from devtool.store import Store, list_param


def test_a_list_bound_as_json_text_comes_back_element_for_element(store: Store) -> None:
    values = ["plain", "a,b", 'quote " and \\ backslash', "line\nbreak", "\x1e\x1f", "", "naïve ✓ 🦘", "[1]"]
    rows = store.query(f"SELECT unnest({list_param.of('v')})", {"v": list_param.values(values)})
    assert [row[0] for row in rows] == values
    assert store.query(f"SELECT len({list_param.of('v')})", {"v": list_param.values([])}) == [(0,)]


def test_numbers_booleans_nulls_and_lists_of_numbers_come_back_typed(store: Store) -> None:
    numbers = [0, -1, 2**62, None]
    assert [
        r[0] for r in store.query(f"SELECT unnest({list_param.of('v', 'BIGINT')})", {"v": list_param.values(numbers)})
    ] == numbers
    flags = [True, False]
    assert [
        r[0] for r in store.query(f"SELECT unnest({list_param.of('v', 'BOOLEAN')})", {"v": list_param.values(flags)})
    ] == flags
    lists = [[1, 2], [], [3]]
    assert [
        r[0] for r in store.query(f"SELECT unnest({list_param.of('v', 'BIGINT[]')})", {"v": list_param.values(lists)})
    ] == lists
