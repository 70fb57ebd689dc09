"""The rules that can fire in an ask, known from its workload's task before any fact is asserted.

A rule whose workload pattern the task alone rules out (`task == 'inference'` in a training ask)
never fires there, nor does a rule that matches a kind of fact nothing left can produce. The engine
registers only the rest for asks of that task: durable-rules then matches each fact against fewer
rules and opens each ask's session with smaller tables (its state holds an index per pattern).
Leaving out a rule that could not fire changes no answer; a condition that reads anything besides
the task's own fields is never judged here, so its rule stays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .expr import ExpressionError
from .facts import ENGINE_KINDS

if TYPE_CHECKING:
    from .kb import KnowledgeBase
    from .rules import CompiledRule


def task_fields(workload: Mapping[str, Any]) -> dict[str, Any]:
    """The workload fields that decide which rules can fire: the same for every ask of one task."""
    return {"task": workload["task"], "training": workload["training"]}


def _ruled_out(compiled: CompiledRule, known: Mapping[str, Any]) -> bool:
    """Whether a workload pattern of the rule is false from the known fields alone."""
    for (_alias, kind), cond in zip(compiled.aliases, compiled.conditions, strict=True):
        if kind != "workload" or cond is None:
            continue
        try:  # a name outside `known` raises: the condition depends on more than the task, so it may hold
            if not cond.run(known):
                return True
        except (ExpressionError, ArithmeticError, TypeError, ValueError):
            continue
    return False


def reachable_rules(kb: KnowledgeBase, known: Mapping[str, Any]) -> tuple[CompiledRule, ...]:
    """The active rules that asks whose workload has these fields can fire, in the KB's order."""
    possible = [c for c in kb.active_rules if not _ruled_out(c, known)]
    produced = set(ENGINE_KINDS)  # the kinds the pipeline asserts itself
    while True:
        live = [c for c in possible if all(kind in produced for _alias, kind in c.aliases)]
        more = {out.kind for c in live for out in c.outputs} - produced
        if not more:
            return tuple(live)
        produced |= more
