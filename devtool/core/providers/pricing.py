"""The price table: what a model's tokens cost, and so what each model request cost.

Prices are data: `prices.json` in this package (USD per million tokens of input, cache reads, cache
writes and output, per `provider:model`, with the date they were taken), and a file of the user's
own named by `DEVTOOL_PRICES`, whose entries add to or replace the packaged ones (the same shape;
only `models` is required). A model id matches its entry exactly, or as that entry plus a date or
`-latest` (`gpt-4.1-mini-2025-04-14`, `claude-sonnet-4-5-20250929`); anything else is unknown, and
its cost is `None`, never 0.

A request's cost is in whole micro-dollars, `{"micro_usd": n}` (the TypeScript library's billing
unit, integers so that sums are exact): uncached input at `input`, cache reads at `cached_input`,
cache writes at `cache_write` (both `input` when the entry has none), output (reasoning included)
at `output`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Final

import orjson

from devtool.core.errors import PriceTableError
from devtool.core.model import Usage

PRICES_ENV: Final = "DEVTOOL_PRICES"
_FIELDS: Final = ("input", "output", "cached_input", "cache_write")
_VERSIONED: Final = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def micro_usd(self, usage: Usage) -> int:
        details = usage.get("details")
        if not details:  # no cache reads or writes: the same sum, its zero terms left out
            return round(max(usage["promptTokens"], 0) * self.input + usage["completionTokens"] * self.output)
        read = int(details.get("cacheReadTokens", 0))
        written = int(details.get("cacheWriteTokens", 0))
        fresh = max(usage["promptTokens"] - read - written, 0)
        amount = (
            fresh * self.input
            + read * (self.input if self.cached_input is None else self.cached_input)
            + written * (self.input if self.cache_write is None else self.cache_write)
            + usage["completionTokens"] * self.output
        )
        # USD per million tokens times tokens is micro-dollars.
        return round(amount)


@dataclass(frozen=True, slots=True)
class PriceTable:
    """Prices by `provider:model`, the date the packaged ones were taken, and the files they came from."""

    models: Mapping[str, Price]
    taken: str
    sources: tuple[str, ...]
    # The price found for each (provider, model ids) asked so far: every request of a run asks again.
    _found: dict[tuple[str, tuple[str, ...]], Price | None] = dataclasses.field(
        default_factory=dict, repr=False, compare=False
    )

    def price(self, provider: str, model_id: str) -> Price | None:
        """The price of `model_id`: its own entry, else that of the model it is a dated version of."""
        found = self.models.get(f"{provider}:{model_id}")
        if found is None and (versioned := _VERSIONED.search(model_id)):
            found = self.models.get(f"{provider}:{model_id[: versioned.start()]}")
        return found

    def cost(self, provider: str, model_ids: tuple[str, ...], usage: Usage) -> dict[str, float] | None:
        """`{"micro_usd": n}` for the first of `model_ids` with a price, else None (unknown, not free)."""
        key = (provider, model_ids)
        try:
            price = self._found[key]
        except KeyError:
            price = self._found[key] = next(
                (found for model_id in model_ids if (found := self.price(provider, model_id)) is not None), None
            )
        return None if price is None else {"micro_usd": price.micro_usd(usage)}


def load_price_table(path: str | Path | None = None) -> PriceTable:
    """The packaged table, with the entries of `path` (a user's price file) added or replacing."""
    packaged = resources.files(__package__).joinpath("prices.json")
    document = _parse(packaged.read_bytes(), "devtool's packaged prices.json")
    models = dict(document["models"])
    sources = ["devtool/core/providers/prices.json"]
    if path is not None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise PriceTableError(f"cannot read the price file {str(path)!r} ({PRICES_ENV}): {exc.strerror}") from None
        models.update(_parse(data, f"price file {str(path)!r}")["models"])
        sources.append(str(path))
    return PriceTable(models=models, taken=str(document.get("taken", "")), sources=tuple(sources))


_cached: dict[str, PriceTable] = {}


def default_price_table() -> PriceTable:
    """The packaged table plus the file `DEVTOOL_PRICES` names (if set), read once per value of it."""
    override = os.environ.get(PRICES_ENV, "").strip()
    table = _cached.get(override)
    if table is None:
        table = _cached[override] = load_price_table(override or None)
    return table


def _parse(data: bytes, what: str) -> dict[str, Any]:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise PriceTableError(f"{what} is not JSON: {exc}") from None
    models = document.get("models") if isinstance(document, dict) else None
    if not isinstance(models, dict):
        raise PriceTableError(f'{what} must be an object with "models": {{"provider:model": {{"input": ..., ...}}}}')
    return {**document, "models": {name: _price(name, entry, what) for name, entry in models.items()}}


def _price(name: str, entry: Any, what: str) -> Price:
    where = f"{what}, model {name!r}"
    provider, sep, model_id = name.partition(":")
    if not sep or not provider or not model_id:
        raise PriceTableError(f'{where}: a model is named "provider:model" (e.g. "openai:gpt-4.1-mini")')
    if not isinstance(entry, dict):
        raise PriceTableError(f"{where}: expected an object of USD per million tokens, got {entry!r}")
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        raise PriceTableError(f"{where}: unknown field {unknown[0]!r} (the fields are {', '.join(_FIELDS)})")
    for field in _FIELDS:
        value = entry.get(field)
        if value is None and field in ("input", "output"):
            raise PriceTableError(f"{where}: {field!r} is missing")
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0
        ):
            raise PriceTableError(f"{where}: {field!r} must be a number of USD per million tokens, got {value!r}")
    return Price(**{field: entry[field] for field in _FIELDS if entry.get(field) is not None})
