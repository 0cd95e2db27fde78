"""Token usage and cost per frame: what `budgetState` in a snapshot reports.

`own` counts the model calls a frame made itself; `aggregate` adds every descendant. Calls served
from a snapshot's journal cost nothing and are not counted. The shape is the TypeScript library's
`UsageStats` (costs per billing unit, token counts, `details` with cache and reasoning tokens, one
item per model), plus `unpricedCalls`: how many calls had no known price, so that a total is never
taken for complete (or for free) when it is not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict, TypeVar

from devtool.core.jsonvalue import JSON
from devtool.core.model import Usage


class BudgetTotals(TypedDict):
    costs: dict[str, float]
    promptTokens: int
    completionTokens: int
    totalTokens: int
    callCount: int
    details: NotRequired[dict[str, int]]
    unpricedCalls: int
    items: list[dict[str, JSON]]


class BudgetState(TypedDict):
    own: BudgetTotals
    aggregate: BudgetTotals


@dataclass
class _Tally:
    prompt: int = 0
    completion: int = 0
    calls: int = 0
    unpriced: int = 0
    costs: dict[str, float] = field(default_factory=dict)
    details: dict[str, int] = field(default_factory=dict)

    def add(self, other: _Tally) -> None:
        self.prompt += other.prompt
        self.completion += other.completion
        self.calls += other.calls
        self.unpriced += other.unpriced
        _merge(self.costs, other.costs)
        _merge(self.details, other.details)


class Budget:
    """Running totals for one frame, kept per (model, provider)."""

    def __init__(self) -> None:
        self._by_model: dict[tuple[str, str], _Tally] = {}

    def add_call(self, model_id: str, provider: str, usage: Usage, costs: Mapping[str, float] | None) -> None:
        """Count one model request; `costs` None means its price is unknown (counted as unpriced, not free)."""
        tally = self._by_model.setdefault((model_id, provider), _Tally())
        tally.add(
            _Tally(
                prompt=usage["promptTokens"],
                completion=usage["completionTokens"],
                calls=1,
                unpriced=0 if costs is not None else 1,
                costs=dict(costs or {}),
                details={key: int(count) for key, count in (usage.get("details") or {}).items()},  # type: ignore[call-overload]
            )
        )

    @staticmethod
    def combined(budgets: Iterable[Budget]) -> Budget:
        total = Budget()
        for budget in budgets:
            for key, tally in budget._by_model.items():
                total._by_model.setdefault(key, _Tally()).add(tally)
        return total

    def totals(self) -> BudgetTotals:
        overall = _Tally()
        items: list[dict[str, JSON]] = []
        for (model_id, provider), tally in self._by_model.items():
            overall.add(tally)
            tokens: dict[str, JSON] = {
                "prompt": tally.prompt,
                "completion": tally.completion,
                "total": tally.prompt + tally.completion,
            }
            if tally.details:
                tokens["details"] = dict(tally.details)
            items.append(
                {
                    "type": "model",
                    "name": model_id,
                    "provider": provider,
                    "costs": dict(tally.costs),
                    "tokens": tokens,
                }
            )
        totals: BudgetTotals = {
            "costs": overall.costs,
            "promptTokens": overall.prompt,
            "completionTokens": overall.completion,
            "totalTokens": overall.prompt + overall.completion,
            "callCount": overall.calls,
            "unpricedCalls": overall.unpriced,
            "items": items,
        }
        if overall.details:
            totals["details"] = overall.details
        return totals


Amount = TypeVar("Amount", int, float)


def _merge(into: dict[str, Amount], amounts: Mapping[str, Amount]) -> None:
    for key, amount in amounts.items():
        into[key] = into.get(key, 0) + amount
