"""Token usage and cost per frame: what `budgetState` in a snapshot reports.

`own` counts the model calls a frame made itself; `aggregate` adds every descendant. Calls served
from a snapshot's journal cost nothing and are not counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypedDict

from devtool.core.jsonvalue import JSON


class BudgetTotals(TypedDict):
    costs: dict[str, float]
    promptTokens: int
    completionTokens: int
    totalTokens: int
    callCount: int
    items: list[dict[str, JSON]]


class BudgetState(TypedDict):
    own: BudgetTotals
    aggregate: BudgetTotals


@dataclass
class _Tally:
    prompt: int = 0
    completion: int = 0
    calls: int = 0
    costs: dict[str, float] = field(default_factory=dict)

    def add(self, prompt: int, completion: int, calls: int, costs: Mapping[str, float]) -> None:
        self.prompt += prompt
        self.completion += completion
        self.calls += calls
        for unit, amount in costs.items():
            self.costs[unit] = self.costs.get(unit, 0) + amount


class Budget:
    """Running totals for one frame, kept per (model, provider)."""

    def __init__(self) -> None:
        self._by_model: dict[tuple[str, str], _Tally] = {}

    def add_call(self, model_id: str, provider: str, prompt: int, completion: int, costs: Mapping[str, float]) -> None:
        self._by_model.setdefault((model_id, provider), _Tally()).add(prompt, completion, 1, costs)

    @staticmethod
    def combined(budgets: Iterable[Budget]) -> Budget:
        total = Budget()
        for budget in budgets:
            for key, tally in budget._by_model.items():
                total._by_model.setdefault(key, _Tally()).add(tally.prompt, tally.completion, tally.calls, tally.costs)
        return total

    def totals(self) -> BudgetTotals:
        overall = _Tally()
        items: list[dict[str, JSON]] = []
        for (model_id, provider), tally in self._by_model.items():
            overall.add(tally.prompt, tally.completion, tally.calls, tally.costs)
            items.append(
                {
                    "type": "model",
                    "name": model_id,
                    "provider": provider,
                    "costs": dict(tally.costs),
                    "tokens": {
                        "prompt": tally.prompt,
                        "completion": tally.completion,
                        "total": tally.prompt + tally.completion,
                    },
                }
            )
        return {
            "costs": overall.costs,
            "promptTokens": overall.prompt,
            "completionTokens": overall.completion,
            "totalTokens": overall.prompt + overall.completion,
            "callCount": overall.calls,
            "items": items,
        }
