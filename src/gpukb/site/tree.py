"""The decision tree, derived from the recommendation rules: never drawn by hand, drawn at build time.

Each recommendation rule is a path: the conditions of its `when` patterns (the workload's first,
then the others in the rule's order), split at each top-level `and`. Conditions that only join one
fact to another (`gpu == p.gpu`) choose nothing and are left out. Paths that start alike share
their first steps, so the rules form a tree whose leaves are the rules and what they assert.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from ..core.words import value
from ..knowledge.rules import Rule
from ..language.expr import ExpressionError
from .conditions import conjuncts, parse
from .conditions import words as in_words
from .text import html_text

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


def path(rule: Rule, lang: str = "en") -> list[str]:
    """The readable tests a rule's patterns make, in tree order."""
    patterns = sorted(rule.when, key=lambda p: FIRST_KINDS.index(p.kind) if p.kind in FIRST_KINDS else len(FIRST_KINDS))
    tests = []
    for pattern in patterns:
        if pattern.if_ is None:
            continue
        kind = value(lang, "fact", pattern.kind) + "：" if lang == "zh" else f"{pattern.kind}: "  # type: ignore[arg-type]
        tests += [kind + words for words, is_join in conjuncts(pattern.if_, lang) if not is_join]
    return tests


def recommendation_rules(rules: dict[str, Rule]) -> list[Rule]:
    return sorted((r for r in rules.values() if r.stage == STAGE and r.status != "deprecated"), key=lambda r: r.id)


def build_tree(rules: dict[str, Rule], lang: str = "en") -> Node:
    root = Node("")
    for rule in recommendation_rules(rules):
        node = root
        for test in path(rule, lang):
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


def joins(rule: Rule, lang: str = "en") -> list[str]:
    """The joining conditions a path leaves out, so a reader can still see them."""
    return [(value(lang, "fact", p.kind) + "：" if lang == "zh" else f"{p.kind}: ") + words  # type: ignore[arg-type]
            for p in rule.when if p.if_ for words, is_join in conjuncts(p.if_, lang) if is_join]


# --- in words: conditions as a reader would say them -------------------------------------------

# field -> (English, Chinese, kind of value); a comparison reads "<name> <op> <value>"
FIELDS: dict[str, tuple[str, str, str]] = {
    "params": ("parameters", "参数量", "params"),
    "memory_bytes": ("GPU memory", "显存", "bytes"),
    "scale_up_domain": ("GPUs on one all-to-all link", "全互联卡数", "count"),
    "count": ("GPUs", "卡数", "count"),
    "seq_len": ("sequence length", "序列长度", "count"),
    "batch_size": ("concurrent sequences", "并发序列", "count"),
}
FLAGS = {"training": ("training", "训练"), "consumer": ("a consumer card", "消费级显卡"),
         "fits": ("", "")}  # every option fits: no decision to show
TASK_WORDS = {"pretrain": ("pre-training", "预训练"), "full_finetune": ("full fine-tuning", "全参数微调"),
              "lora": ("LoRA", "LoRA"), "qlora": ("QLoRA", "QLoRA"), "inference": ("serving", "推理部署")}
_OPS = {ast.Lt: "<", ast.LtE: "≤", ast.Gt: ">", ast.GtE: "≥", ast.Eq: "=", ast.NotEq: "≠"}


def _amount(value: float, kind: str, zh: bool) -> str:
    if kind == "params":
        return f"{value / 1e8:g} 亿" if zh else f"{value / 1e9:g}B"
    if kind == "bytes":
        return f"{value / 1e9:g} GB"
    return f"{value:g}"


def _phrase(node: ast.AST, zh: bool) -> str | None:
    """One condition in words, or None where it decides nothing a reader needs (a join, `fits`)."""
    i = 1 if zh else 0
    if any(isinstance(n, ast.Attribute) for n in ast.walk(node)):
        return None  # a join: ties the facts together
    if isinstance(node, ast.Name) and node.id in FLAGS:
        return FLAGS[node.id][i] or None
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.left, ast.Name):
        name, op, right = node.left.id, node.ops[0], node.comparators[0]
        if name == "task" and isinstance(op, ast.In | ast.Eq):
            values = right.elts if isinstance(right, ast.List | ast.Tuple) else [right]
            words = [TASK_WORDS.get(v.value, (v.value, v.value))[i] for v in values
                     if isinstance(v, ast.Constant) and isinstance(v.value, str)]
            return ("或" if zh else " or ").join(words)
        if name == "offload" and isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and right.value == "none":
            return "不卸载到 CPU" if zh else "no CPU offload"
        if name in FLAGS and isinstance(op, ast.Eq) and isinstance(right, ast.Constant) and right.value is True:
            return FLAGS[name][i] or None
        if name in FIELDS and isinstance(right, ast.Constant) and isinstance(right.value, int | float) \
                and type(op) in _OPS:
            en, zh_name, kind = FIELDS[name]
            if name == "count" and isinstance(op, ast.Eq) and right.value == 1:
                return "单卡" if zh else "one GPU"
            return f"{zh_name if zh else en} {_OPS[type(op)]} {_amount(right.value, kind, zh)}"
    return in_words(node)


def phrases(condition: str, zh: bool = False) -> list[str]:
    """A condition's top-level `and` parts in a reader's words, leaving out what decides nothing."""
    try:
        node = parse(condition)
    except ExpressionError:
        return [condition]
    parts = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) else [node]
    found = []
    for part in parts:
        words = _phrase(part, zh)
        if words:
            found.append(words)
    return found


@dataclass
class Branch:
    """One branch of the article's tree, in words: if <when>, the engine prefers <then> (<picks>)."""
    rule: Rule
    when: list[str]
    picks: list[str]


def branches(rules: dict[str, Rule], zh: bool = False) -> list[Branch]:
    """Every recommendation rule in words: what the workload must be, and what the GPUs or plans it prefers are."""
    out = []
    for rule in recommendation_rules(rules):
        when, picks = [], []
        for pattern in rule.when:
            if pattern.if_ is None:
                continue
            (when if pattern.kind in FIRST_KINDS else picks).extend(phrases(pattern.if_, zh))
        out.append(Branch(rule, when, picks))
    return out


# --- the drawing: HTML boxes drawn by the stylesheet, in the page's own type -----------------

@dataclass
class Box:
    lines: list[str]
    css: str  # a class of the stylesheet: gpukb-tree-when, -then, -other
    bold_first: bool = False


def _box(b: Box) -> str:
    lines = [html_text(line) for line in b.lines]
    if b.bold_first and lines:
        lines[0] = f"<strong>{lines[0]}</strong>"
    return f'<div class="{b.css}">{"<br>".join(lines)}</div>'


def tree_html(title: str, root: str, rows: list[tuple[Box, Box]], footer: Box | None = None) -> str:
    """The tree top to bottom: the root, then per branch a question with an arrow to what it recommends, then
    an optional footer. Plain HTML on one line (Markdown leaves it as it is): the text is the page's text, in
    its size and font, and the browser wraps it at word boundaries (Chinese at punctuation, where the
    stylesheet keeps words whole); the boxes, lines and colours are stylesheets/gpukb.css (light and dark)."""
    branches = "".join(f"<li>{_box(when)}{_box(then)}</li>" for when, then in rows)
    other = _box(footer) if footer is not None else ""
    return (f'<div class="gpukb-tree" role="group" aria-label="{html_text(title)}">'
            f'<div class="gpukb-tree-root">{html_text(root)}</div>'
            f'<ul class="gpukb-tree-branches">{branches}</ul>{other}</div>')
