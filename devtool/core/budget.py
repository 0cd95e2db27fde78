"""Token usage and cost per frame: what `budgetState` in a snapshot reports.

`own` counts the model calls a frame made itself; `aggregate` adds every descendant. Calls served
from a snapshot's journal cost nothing and are not counted. The shape is the TypeScript library's
`UsageStats` (costs per billing unit, token counts, `details` with cache and reasoning tokens, one
item per model), plus `unpricedCalls`: how many calls had no known price, so that a total is never
taken for complete (or for free) when it is not.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict, TypeVar, cast

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
        # Added in place: every model request of a run counts in two budgets (its frame's, its run's).
        tally = self._by_model.get((model_id, provider))
        if tally is None:
            tally = self._by_model[(model_id, provider)] = _Tally()
        tally.prompt += usage["promptTokens"]
        tally.completion += usage["completionTokens"]
        tally.calls += 1
        if costs is None:
            tally.unpriced += 1
        else:
            _merge(tally.costs, costs)
        if details := usage.get("details"):
            _merge(tally.details, {key: int(count) for key, count in details.items()})  # type: ignore[call-overload]

    def add_event(self, event: Mapping[str, object]) -> bool:
        """Count the model request a `model:call:end` event reports (ours or the TypeScript
        library's: `adapterId`, `provider`, `usage`, `costs`); False when it reports no usage."""
        usage = event.get("usage")
        if type(usage) is not dict:
            return False
        counts: Usage = {
            "promptTokens": _count(usage.get("promptTokens")),
            "completionTokens": _count(usage.get("completionTokens")),
            "totalTokens": 0,
        }
        details = usage.get("details")
        if type(details) is dict:
            counts["details"] = {key: _count(value) for key, value in details.items()}  # type: ignore[typeddict-item]
        costs = event.get("costs")
        priced = {key: value for key, value in costs.items() if _is_number(value)} if type(costs) is dict else None
        self.add_call(str(event.get("adapterId") or "model"), str(event.get("provider") or ""), counts, priced)
        return True

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


def _is_number(value: object) -> bool:
    return type(value) is int or type(value) is float


def _count(value: object) -> int:
    return int(value) if _is_number(value) else 0  # type: ignore[call-overload]


def merged(totals: Iterable[BudgetTotals]) -> BudgetTotals:
    """The sum of several frames' totals (a frame's aggregate from its own and its children's),
    items added up per (model, provider)."""
    costs: dict[str, float] = {}
    details: dict[str, int] = {}
    items: dict[tuple[str, str], dict[str, Any]] = {}
    prompt = completion = calls = unpriced = 0
    for part in totals:
        prompt += part["promptTokens"]
        completion += part["completionTokens"]
        calls += part["callCount"]
        unpriced += part.get("unpricedCalls", 0)
        _merge(costs, part["costs"])
        _merge(details, part.get("details") or {})
        for item in part["items"]:
            _add_item(items, cast(dict[str, Any], item))
    result: BudgetTotals = {
        "costs": costs,
        "promptTokens": prompt,
        "completionTokens": completion,
        "totalTokens": prompt + completion,
        "callCount": calls,
        "unpricedCalls": unpriced,
        "items": cast(list[dict[str, JSON]], list(items.values())),
    }
    if details:
        result["details"] = details
    return result


class PlacedTotals:
    """The sum of children's totals added in any order, read back as `merged` gives it over them in
    the order of their positions: a model, a currency or a detail is listed where it first appears.
    Holds one sum and the first place of each name, however many children were added."""

    def __init__(self) -> None:
        self._sum: BudgetTotals = merged([])
        self._first: dict[tuple[str, object], tuple[int, int]] = {}

    def add(self, position: int, totals: BudgetTotals) -> None:
        self._sum = merged([self._sum, totals])
        _note_names(self._first, position, totals)

    def merged_with(self, placed: Iterable[tuple[int, BudgetTotals]]) -> BudgetTotals:
        """The sum of what was added and of `placed` (`(position, totals)`), in the order of positions."""
        first = dict(self._first)
        parts = [self._sum]
        for position, totals in placed:
            parts.append(totals)
            _note_names(first, position, totals)
        result = merged(parts)

        def order(kind: str) -> Any:
            return lambda name: first.get((kind, name), (0, 0))

        result["costs"] = {name: result["costs"][name] for name in sorted(result["costs"], key=order("costs"))}
        result["items"] = sorted(result["items"], key=lambda item: order("items")(_item_key(item)))
        if "details" in result:
            details = result["details"]
            result["details"] = {name: details[name] for name in sorted(details, key=order("details"))}
        return result


def _note_names(first: dict[tuple[str, object], tuple[int, int]], position: int, totals: BudgetTotals) -> None:
    """Keep the earliest place (position, then order within) of each name `totals` lists."""
    named: list[tuple[str, list[object]]] = [
        ("costs", list(totals["costs"])),
        ("items", [_item_key(item) for item in totals["items"]]),
        ("details", list(totals.get("details") or {})),
    ]
    for kind, names in named:
        for index, name in enumerate(names):
            known = first.get((kind, name))
            if known is None or (position, index) < known:
                first[(kind, name)] = (position, index)


def _item_key(item: Mapping[str, Any]) -> tuple[str, str]:
    return (str(item.get("name")), str(item.get("provider")))


def _add_item(items: dict[tuple[str, str], dict[str, Any]], item: dict[str, Any]) -> None:
    key = _item_key(item)
    into = items.get(key)
    if into is None:
        items[key] = copy.deepcopy(item)
        return
    _merge(into.setdefault("costs", {}), item.get("costs") or {})
    tokens, more = into.setdefault("tokens", {}), item.get("tokens") or {}
    for name in ("prompt", "completion", "total"):
        tokens[name] = tokens.get(name, 0) + more.get(name, 0)
    if "details" in more:
        _merge(tokens.setdefault("details", {}), more["details"])


def empty_budget_state() -> BudgetState:
    """A frame's `budgetState` when it made no model call (the TypeScript library's empty one)."""
    totals = Budget().totals()
    return {"own": totals, "aggregate": Budget().totals()}


def _merge(into: dict[str, Amount], amounts: Mapping[str, Amount]) -> None:
    for key, amount in amounts.items():
        into[key] = into.get(key, 0) + amount
