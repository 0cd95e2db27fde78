"""A store's statements do not search `sys.path` for pandas at every parameter (DuckDB 1.5.5's client
tries to import it for each one) when pandas is not installed."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

import pytest

from devtool.store import Store


class _Lookups(importlib.abc.MetaPathFinder):
    """Counts the searches for pandas that reach the import system's finders."""

    def __init__(self) -> None:
        self.pandas = 0

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas":
            self.pandas += 1
        return None


@pytest.mark.skipif(importlib.util.find_spec("pandas") is not None, reason="pandas is installed: it is imported")
def test_parameters_bound_by_a_store_do_not_search_for_pandas(store: Store) -> None:
    lookups = _Lookups()
    sys.meta_path.insert(0, lookups)
    try:
        rows = store.query("SELECT $a || $b, $n + 1", {"a": "x", "b": "y", "n": 41})
    finally:
        sys.meta_path.remove(lookups)
    assert rows == [("xy", 42)]
    assert lookups.pandas == 0
