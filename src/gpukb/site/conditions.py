"""Rule conditions (`when[].if`) in words: `task in ['lora', 'qlora']` reads "task is lora or qlora".

The text is parsed with gpukb's own expression parser, so what is shown is what the engine checks.
"""

from __future__ import annotations

import ast

from ..language import expr as ex
from .text import si

_SYMBOL = {ast.Lt: "<", ast.LtE: "≤", ast.Gt: ">", ast.GtE: "≥", ast.Eq: "=", ast.NotEq: "≠"}


def _value(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return "true" if node.value else "false"
        if isinstance(node.value, int | float):
            return si(node.value)
        return f"'{node.value}'"
    if isinstance(node, ast.List | ast.Tuple):
        return ", ".join(_value(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return "-" + _value(node.operand)
    if isinstance(node, ast.BoolOp | ast.Compare):
        return f"({_words(node)})"
    return ast.unparse(node)


def _choices(node: ast.AST, joiner: str) -> str:
    if isinstance(node, ast.List | ast.Tuple):
        items = [_value(e) for e in node.elts]
        if len(items) == 1:
            return items[0]
        if len(items) == 2:
            return f"{'either' if joiner == 'or' else 'neither'} {items[0]} {joiner} {items[1]}"
        return ("one of " if joiner == "or" else "none of ") + ", ".join(items)
    return _value(node)


def _compare(node: ast.Compare) -> str:
    if len(node.ops) == 1:
        op, right = node.ops[0], node.comparators[0]
        left = _value(node.left)
        if isinstance(op, ast.In):
            return f"{left} is {_choices(right, 'or')}"
        if isinstance(op, ast.NotIn):
            if isinstance(right, ast.List | ast.Tuple) and len(right.elts) > 1:
                return f"{left} is {_choices(right, 'nor')}"
            return f"{left} is not {_choices(right, 'nor')}"
        if isinstance(op, ast.Eq | ast.NotEq) and isinstance(right, ast.Constant) and isinstance(right.value, bool | str):
            return f"{left} is {'' if isinstance(op, ast.Eq) else 'not '}{_value(right)}"
    parts = [_value(node.left)]
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        parts += [_SYMBOL.get(type(op), type(op).__name__), _value(comparator)]
    return " ".join(parts)


def _words(node: ast.AST) -> str:
    if isinstance(node, ast.BoolOp):
        joiner = " and " if isinstance(node.op, ast.And) else " or "
        return joiner.join(_words(v) if not isinstance(v, ast.BoolOp) else f"({_words(v)})" for v in node.values)
    if isinstance(node, ast.Compare):
        return _compare(node)
    if isinstance(node, ast.Name | ast.Attribute):
        return f"{ast.unparse(node)} is true"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        if isinstance(node.operand, ast.Name | ast.Attribute):
            return f"{ast.unparse(node.operand)} is false"
        return f"not ({_words(node.operand)})"
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return "always" if node.value else "never"
    return ast.unparse(node)


def parse(text: str) -> ast.AST:
    """A condition's syntax tree (gpukb's own parser: what the engine checks)."""
    return ex.parse(text).tree.body


def words(node: ast.AST) -> str:
    """A parsed condition in words."""
    return _words(node)


def readable(text: str) -> str:
    """A condition in words; text the parser rejects is returned unchanged."""
    try:
        return _words(parse(text))
    except ex.ExpressionError:
        return text


def conjuncts(text: str) -> list[tuple[str, bool]]:
    """The parts of a condition joined by a top-level `and`, each in words, with whether it is a join.

    A join compares against another pattern's field (`gpu == p.gpu`): it ties facts together rather
    than choosing between them.
    """
    try:
        node = parse(text)
    except ex.ExpressionError:
        return [(text, False)]
    parts = node.values if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And) else [node]
    out = []
    for part in parts:
        is_join = any(isinstance(n, ast.Attribute) for n in ast.walk(part))
        out.append((_words(part), is_join))
    return out
