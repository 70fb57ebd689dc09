"""What matching a rule can cost, known before it runs: the patterns it joins and the combinations of
facts they can match over the catalog.

durable-rules keeps, for every rule, each combination of facts that its patterns have matched so far,
pattern by pattern (the partial matches of a Rete network, Forgy 1982): patterns that can match
n1, n2, ... facts hold up to n1·n2·... combinations after the second, and so on. Five `gpu` patterns
with no condition between them are 28^5 = 17 million combinations over the packaged catalog (an ask
took 50 s and 3 GB). The loader refuses a rule that joins more patterns than the policy
rule-join-patterns, or whose patterns can hold more combinations than rule-join-combinations (R009).

How many facts of a kind an ask can hold over the whole catalog: one workload, policy and fleet; one
gpu and one plan per GPU type; for a kind that rules assert, one per rule output that asserts it,
per GPU type where the kind names a GPU (most rules fire once per type). A pattern whose condition
requires `gpu == <earlier alias>.gpu`, or `gpu == '<constant>'`, matches the facts of that one GPU type.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

from ..language.facts import RULE_KINDS, fields_of
from .rules import CompiledRule

ONE_PER_ASK = ("workload", "policy", "fleet")
ONE_PER_GPU = ("gpu", "plan")
PATTERNS_POLICY = "rule-join-patterns"
COMBINATIONS_POLICY = "rule-join-combinations"
# The policies' values as kb/policies/policies.yaml states them (with their reasons and sources) since KB
# 0.18.0: the bound of a checkout without them, a base revision from before them or a change deleting them,
# which must not lift the bound.
WITHOUT_POLICIES = {PATTERNS_POLICY: 8, COMBINATIONS_POLICY: 200_000}


@dataclass(frozen=True)
class Excess:
    rule: str  # the rule's id
    pattern: int  # index into its `when` of the pattern that goes beyond the bound
    message: str


def fact_counts(rules: Iterable[CompiledRule], gpus: int) -> dict[str, int]:
    """The most facts of each kind one ask over `gpus` GPU types holds (see the module's docstring)."""
    counts = {kind: 1 for kind in ONE_PER_ASK} | {kind: gpus for kind in ONE_PER_GPU}
    producers = {kind: 0 for kind in RULE_KINDS}
    for compiled in rules:
        for out in compiled.outputs:
            producers[out.kind] += 1
    for kind, count in producers.items():
        counts[kind] = count * (gpus if "gpu" in fields_of(kind) else 1)
    return counts


def _joins_on_gpu(condition: ast.AST, earlier: dict[str, str]) -> bool:
    """The condition (or one part of a top-level `and`) is `gpu == a.gpu`, `a` an earlier alias of a kind
    that names its GPU, or `gpu == '<constant>'` (one GPU type's facts, or the ask's own where it is '')."""
    if isinstance(condition, ast.BoolOp) and isinstance(condition.op, ast.And):
        return any(_joins_on_gpu(part, earlier) for part in condition.values)
    if not (isinstance(condition, ast.Compare) and len(condition.ops) == 1 and isinstance(condition.ops[0], ast.Eq)):
        return False
    sides = (condition.left, condition.comparators[0])
    for own, other in (sides, sides[::-1]):
        if isinstance(own, ast.Name) and own.id == "gpu" and isinstance(other, ast.Constant) and isinstance(other.value, str):
            return True
        if (isinstance(own, ast.Name) and own.id == "gpu" and isinstance(other, ast.Attribute) and other.attr == "gpu"
                and isinstance(other.value, ast.Name) and "gpu" in fields_of(earlier.get(other.value.id, "workload"))):
            return True
    return False


def candidates(compiled: CompiledRule, counts: dict[str, int], gpus: int) -> list[int]:
    """Per pattern, how many facts it can match for one combination of the patterns before it."""
    out, earlier = [], {}
    for (alias, kind), cond in zip(compiled.aliases, compiled.conditions, strict=True):
        count = counts.get(kind, 1)
        if cond is not None and count and gpus and "gpu" in fields_of(kind) and _joins_on_gpu(cond.tree.body, earlier):
            count = -(-count // gpus)  # the facts of one GPU type
        out.append(count)
        earlier[alias] = kind
    return out


def check_joins(rules: Iterable[CompiledRule], gpus: int, max_patterns: float, max_combinations: float) -> list[Excess]:
    """Every rule beyond either bound, with the pattern where it goes beyond."""
    rules = tuple(rules)
    counts = fact_counts(rules, gpus)
    found = []
    for compiled in rules:
        patterns = len(compiled.aliases)
        if patterns > max_patterns:
            found.append(Excess(compiled.rule.id, int(max_patterns), (
                f"the rule joins {patterns} patterns; the policy {PATTERNS_POLICY} allows {max_patterns:,.0f} "
                "(durable-rules keeps every partial combination of a rule's facts): split the rule")))
            continue
        held, factors = 1, []
        for index, ((_alias, kind), count) in enumerate(zip(compiled.aliases, candidates(compiled, counts, gpus),
                                                            strict=True)):
            held *= count
            factors.append(f"{kind} {count:,}")
            if held > max_combinations:
                found.append(Excess(compiled.rule.id, index, (
                    f"patterns 1-{index + 1} can hold {held:,} combinations of facts ({' x '.join(factors)}, over "
                    f"{gpus:,} GPU types); the policy {COMBINATIONS_POLICY} allows {max_combinations:,.0f}: join "
                    "each pattern to an earlier one (e.g. `gpu == p.gpu`) or split the rule")))
                break
    return found
