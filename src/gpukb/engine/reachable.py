"""The rules that can fire in an ask, known from its workload's task before any fact is asserted.

A rule whose workload pattern the task alone rules out (`task == 'inference'` in a training ask)
never fires there, nor does a rule that matches a kind of fact nothing left can produce. The engine
registers only the rest for asks of that task: durable-rules then matches each fact against fewer
rules and opens each ask's session with smaller tables (its state holds an index per pattern).
Leaving out a rule that could not fire changes no answer; a condition that reads anything besides
the task's own fields is never judged here, so its rule stays. In the same way, a fact whose text no
pattern of the ruleset accepts (text_gates) is never sent to durable-rules.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..language.expr import Expr, ExpressionError
from ..language.facts import ENGINE_KINDS

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase
    from ..knowledge.rules import CompiledRule


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


def _text_required(cond: Expr | None) -> dict[str, frozenset[str]]:
    """The own fields a condition requires to be one of some texts: `finding == 'interconnect' and ...`,
    `task in ['lora', 'qlora']`; other parts of it are not looked at."""
    if cond is None:
        return {}
    body = cond.tree.body
    parts = body.values if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.And) else [body]
    required: dict[str, frozenset[str]] = {}
    for part in parts:
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.left, ast.Name)):
            continue
        op, right = part.ops[0], part.comparators[0]
        listed = isinstance(op, ast.In) and isinstance(right, ast.List)
        items = [right] if isinstance(op, ast.Eq) else right.elts if listed else []
        if items and all(isinstance(item, ast.Constant) and type(item.value) is str for item in items):
            texts = frozenset(item.value for item in items)  # type: ignore[attr-defined]
            required[part.left.id] = required.get(part.left.id, texts) & texts
    return required


def text_gates(rules: tuple[CompiledRule, ...]) -> dict[str, tuple[str, frozenset[str]]]:
    """Per fact kind, a field and the texts one of which every pattern on that kind requires of it.

    A fact whose text there is none of them matches no pattern, so the engine does not assert it (it
    would come back as not handled): a training ask's compute-bound findings, which no rule reads, cost
    nothing in durable. A kind with a pattern that requires no text has no gate.
    """
    patterns: dict[str, list[dict[str, frozenset[str]]]] = {}
    for compiled in rules:
        for (_alias, kind), cond in zip(compiled.aliases, compiled.conditions, strict=True):
            patterns.setdefault(kind, []).append(_text_required(cond))
    gates = {}
    for kind, required in patterns.items():
        common = sorted(set.intersection(*(set(r) for r in required)))
        if common:
            gates[kind] = (common[0], frozenset().union(*(r[common[0]] for r in required)))
    return gates
