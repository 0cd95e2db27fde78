"""The price table: packaged data with its date, dated model versions, a user's file, exact integer costs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtool.core.errors import PriceTableError
from devtool.core.model import Usage
from devtool.core.providers.pricing import PRICES_ENV, Price, default_price_table, load_price_table


def usage(prompt: int, completion: int, **details: int) -> Usage:
    counted: Usage = {"promptTokens": prompt, "completionTokens": completion, "totalTokens": prompt + completion}
    if details:
        counted["details"] = details  # type: ignore[typeddict-item]
    return counted


def test_the_packaged_table_has_its_date_and_both_providers() -> None:
    table = load_price_table()
    assert table.taken == "2026-12-01"
    assert table.price("openai", "gpt-4.1-mini") == Price(input=0.4, output=1.6, cached_input=0.1)
    assert table.price("anthropic", "claude-sonnet-4-5") == Price(3.0, 15.0, 0.3, 3.75)
    assert table.sources == ("devtool/core/providers/prices.json",)


@pytest.mark.parametrize(
    ("provider", "model_id", "known"),
    [
        ("openai", "gpt-4.1-mini-2025-04-14", True),
        ("anthropic", "claude-sonnet-4-5-20250929", True),
        ("anthropic", "claude-3-7-sonnet-latest", True),
        ("openai", "gpt-4.1-mini-finetuned", False),  # not a dated version: its price is not the base model's
        ("openai", "gpt-4o-audio-preview", False),
        ("anthropic", "gpt-4.1-mini", False),  # a price belongs to its provider
        ("openai", "llama3.2:3b", False),
    ],
)
def test_a_model_is_priced_by_its_own_entry_or_as_a_dated_version_else_unknown(
    provider: str, model_id: str, known: bool
) -> None:
    assert (default_price_table().price(provider, model_id) is not None) is known


def test_costs_are_whole_micro_dollars_with_cache_reads_and_writes_at_their_own_prices() -> None:
    table = load_price_table()
    # 1,000 fresh × $3 + 2,000 read × $0.30 + 500 written × $3.75 + 700 out × $15, per million.
    spent = usage(3500, 700, cacheReadTokens=2000, cacheWriteTokens=500)
    assert table.cost("anthropic", ("claude-sonnet-4-5",), spent) == {"micro_usd": 3000 + 600 + 1875 + 10500}
    assert table.cost("openai", ("gpt-4.1-nano",), usage(3, 0)) == {"micro_usd": 0}  # 0.3 µ$ rounds to 0
    assert table.cost("openai", ("no-such-model", "gpt-4.1"), usage(1000, 0)) == {"micro_usd": 2000}
    assert table.cost("openai", ("no-such-model",), usage(1000, 0)) is None


def test_a_users_file_adds_and_replaces_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "prices.json"
    mine.write_text(
        json.dumps(
            {
                "models": {
                    "openai:llama3.2:3b": {"input": 0, "output": 0},
                    "openai:gpt-4.1-mini": {"input": 0.2, "output": 0.8, "cached_input": 0.05},
                }
            }
        )
    )
    monkeypatch.setenv(PRICES_ENV, str(mine))
    table = default_price_table()
    assert table.sources[-1] == str(mine)
    assert table.cost("openai", ("llama3.2:3b",), usage(5000, 5000)) == {"micro_usd": 0}
    assert table.price("openai", "gpt-4.1-mini") == Price(0.2, 0.8, 0.05)
    assert table.price("openai", "gpt-4.1") == Price(2.0, 8.0, 0.5)
    monkeypatch.delenv(PRICES_ENV)
    assert default_price_table().price("openai", "llama3.2:3b") is None


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("not json", "is not JSON"),
        ('{"openai:x": {}}', 'must be an object with "models"'),
        ('{"models": {"gpt-x": {"input": 1, "output": 1}}}', "model 'gpt-x': a model is named \"provider:model\""),
        ('{"models": {"openai:x": {"input": 1}}}', "model 'openai:x': 'output' is missing"),
        ('{"models": {"openai:x": {"input": -1, "output": 1}}}', "'input' must be a number of USD per million"),
        ('{"models": {"openai:x": {"input": 1, "output": 1, "cachedInput": 1}}}', "unknown field 'cachedInput'"),
    ],
)
def test_a_bad_price_file_names_itself_and_the_entry(tmp_path: Path, content: str, said: str) -> None:
    bad = tmp_path / "mine.json"
    bad.write_text(content)
    with pytest.raises(PriceTableError, match=f"price file '{bad}'.*") as caught:
        load_price_table(bad)
    assert said in str(caught.value)
    with pytest.raises(PriceTableError, match="cannot read the price file"):
        load_price_table(tmp_path / "missing.json")


@pytest.mark.parametrize("price", [Price(0.4, 1.6, 0.1), Price(3.0, 15.0, 0.3, 3.75), Price(0.0, 0.0)])
@pytest.mark.parametrize(("prompt", "completion"), [(0, 0), (1, 3), (1234, 567), (10**9, 7), (-5, 2)])
def test_usage_without_cache_tokens_costs_what_the_whole_sum_says(price: Price, prompt: int, completion: int) -> None:
    """`micro_usd`'s shorter sum for usage with no cache details is the whole sum with its zero terms."""
    whole = price.micro_usd(usage(prompt, completion, cacheReadTokens=0, cacheWriteTokens=0))
    assert price.micro_usd(usage(prompt, completion)) == whole
