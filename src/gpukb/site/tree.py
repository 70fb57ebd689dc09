"""The decision tree, derived from the recommendation rules: never drawn by hand.

Each recommendation rule is a path: the conditions of its `when` patterns (the workload's first,
then the others in the rule's order), split at each top-level `and`. Conditions that only join one
fact to another (`gpu == p.gpu`) choose nothing and are left out. Paths that start alike share
their first steps, so the rules form a tree whose leaves are the rules and what they assert.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..rules import Rule
from .conditions import conjuncts

STAGE = "recommendations"
FIRST_KINDS = ("workload", "fleet")  # what the workload is decides first, then the rule's own order


@dataclass
class Node:
    test: str  # "workload: task is 'inference'"; empty for the root
    children: list[Node] = field(default_factory=list)
    rules: list[Rule] = field(default_factory=list)

    def child(self, test: str) -> Node:
        for node in self.children:
            if node.test == test:
                return node
        node = Node(test)
        self.children.append(node)
        return node


def path(rule: Rule) -> list[str]:
    """The readable tests a rule's patterns make, in tree order."""
    patterns = sorted(rule.when, key=lambda p: FIRST_KINDS.index(p.kind) if p.kind in FIRST_KINDS else len(FIRST_KINDS))
    tests = []
    for pattern in patterns:
        if pattern.if_ is None:
            continue
        tests += [f"{pattern.kind}: {words}" for words, is_join in conjuncts(pattern.if_) if not is_join]
    return tests


def recommendation_rules(rules: dict[str, Rule]) -> list[Rule]:
    return sorted((r for r in rules.values() if r.stage == STAGE and r.status != "deprecated"), key=lambda r: r.id)


def build_tree(rules: dict[str, Rule]) -> Node:
    root = Node("")
    for rule in recommendation_rules(rules):
        node = root
        for test in path(rule):
            node = node.child(test)
        node.rules.append(rule)
    return root


def asserts(rule: Rule) -> list[str]:
    """What a rule asserts, one line per output: the kind, its literal fields, the fields it computes."""
    lines = []
    for out in rule.then:
        parts = [f"{k} = {str(v).lower() if isinstance(v, bool) else v}" for k, v in out.set.items()]
        parts += list(out.compute)
        lines.append(f"{out.kind}: {', '.join(parts)}" if parts else out.kind)
    return lines


def joins(rule: Rule) -> list[str]:
    """The joining conditions a path leaves out, so a reader can still see them."""
    return [f"{p.kind}: {words}" for p in rule.when if p.if_ for words, is_join in conjuncts(p.if_) if is_join]


# --- mermaid ----------------------------------------------------------------------------------

_MERMAID_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:=+-_/()'*≤≥≠@")


def mermaid_text(text: str) -> str:
    """Text for a quoted mermaid label: anything outside a small safe set becomes #NNN; (mermaid's
    entity syntax), so quotes, brackets, pipes and markup in rule text cannot break the diagram."""
    text = " ".join(str(text).split())
    return "".join(ch if ch in _MERMAID_SAFE else f"#{ord(ch)};" for ch in text)


def mermaid(root: Node) -> str:
    lines = ["flowchart LR", '  n0(["a workload, its plans and GPUs"])']
    counter = 0

    def new_id() -> str:
        nonlocal counter
        counter += 1
        return f"n{counter}"

    def walk(node: Node, node_id: str) -> None:
        for child in node.children:
            child_id = new_id()
            lines.append(f'  {child_id}("{mermaid_text(child.test)}")')
            lines.append(f"  {node_id} --> {child_id}")
            walk(child, child_id)
        for rule in node.rules:
            rule_id = new_id()
            label = f"{mermaid_text(f'{rule.id}@{rule.version}')}<br/>{mermaid_text(rule.title)}"
            lines.append(f'  {rule_id}["{label}"]')
            lines.append(f"  {node_id} --> {rule_id}")
            lines.append(f"  class {rule_id} rule")
            for text in asserts(rule):
                out_id = new_id()
                lines.append(f'  {out_id}[/"{mermaid_text("asserts " + text)}"/]')
                lines.append(f"  {rule_id} --> {out_id}")
                lines.append(f"  class {out_id} asserts")

    walk(root, "n0")
    lines.append("  classDef rule stroke-width:2px")
    lines.append("  classDef asserts stroke-dasharray:4 3")
    return "\n".join(lines)
