"""Rule conditions (`when[].if`) in words: `task in ['lora', 'qlora']` reads "task is lora or qlora".

The text is parsed with gpukb's own expression parser, so what is shown is what the engine checks.
"""

from __future__ import annotations

import ast

from ..language import expr as ex
from .text import si

_SYMBOL = {ast.Lt: "<", ast.LtE: "≤", ast.Gt: ">", ast.GtE: "≥", ast.Eq: "=", ast.NotEq: "≠"}


# the words a condition reads with, in each language
_EN = {"true": "true", "false": "false", "either": "either {0} or {1}", "neither": "neither {0} nor {1}",
       "one_of": "one of {0}", "none_of": "none of {0}", "list": ", ", "is": "{0} is {1}", "is_not": "{0} is not {1}",
       "and": " and ", "or": " or ", "is_true": "{0} is true", "is_false": "{0} is false", "not": "not ({0})",
       "always": "always", "never": "never"}
_ZH = {"true": "true", "false": "false", "either": "{0} 或 {1}", "neither": "既不是 {0} 也不是 {1}",
       "one_of": "{0} 之一", "none_of": "不是 {0} 中的任何一个", "list": "、", "is": "{0} 为 {1}", "is_not": "{0} 不为 {1}",
       "and": "，且 ", "or": " 或 ", "is_true": "{0} 为真", "is_false": "{0} 为假", "not": "并非（{0}）",
       "always": "总是", "never": "从不"}


def _value(node: ast.AST, w: dict[str, str] = _EN) -> str:
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool):
            return w["true"] if node.value else w["false"]
        if isinstance(node.value, int | float):
            return si(node.value)
        return f"'{node.value}'"
    if isinstance(node, ast.List | ast.Tuple):
        return w["list"].join(_value(e, w) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return "-" + _value(node.operand, w)
    if isinstance(node, ast.BoolOp | ast.Compare):
        return f"({_words(node, w)})"
    return ast.unparse(node)


def _choices(node: ast.AST, joiner: str, w: dict[str, str] = _EN) -> str:
    if isinstance(node, ast.List | ast.Tuple):
        items = [_value(e, w) for e in node.elts]
        if len(items) == 1:
            return items[0]
        if len(items) == 2:
            return w["either" if joiner == "or" else "neither"].format(*items)
        return w["one_of" if joiner == "or" else "none_of"].format(w["list"].join(items))
    return _value(node, w)


def _compare(node: ast.Compare, w: dict[str, str] = _EN) -> str:
    if len(node.ops) == 1:
        op, right = node.ops[0], node.comparators[0]
        left = _value(node.left, w)
        if isinstance(op, ast.In):
            return w["is"].format(left, _choices(right, "or", w))
        if isinstance(op, ast.NotIn):
            if isinstance(right, ast.List | ast.Tuple) and len(right.elts) > 1:
                chosen = _choices(right, "nor", w)  # "neither a nor b" says the negation itself
                return f"{left} {chosen}" if w is _ZH else w["is"].format(left, chosen)
            return w["is_not"].format(left, _choices(right, "nor", w))
        if isinstance(op, ast.Eq | ast.NotEq) and isinstance(right, ast.Constant) and isinstance(right.value, bool | str):
            return w["is" if isinstance(op, ast.Eq) else "is_not"].format(left, _value(right, w))
    parts = [_value(node.left, w)]
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        parts += [_SYMBOL.get(type(op), type(op).__name__), _value(comparator, w)]
    return " ".join(parts)


def _words(node: ast.AST, w: dict[str, str] = _EN) -> str:
    if isinstance(node, ast.BoolOp):
        joiner = w["and"] if isinstance(node.op, ast.And) else w["or"]
        return joiner.join(_words(v, w) if not isinstance(v, ast.BoolOp) else f"({_words(v, w)})" for v in node.values)
    if isinstance(node, ast.Compare):
        return _compare(node, w)
    if isinstance(node, ast.Name | ast.Attribute):
        return w["is_true"].format(ast.unparse(node))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        if isinstance(node.operand, ast.Name | ast.Attribute):
            return w["is_false"].format(ast.unparse(node.operand))
        return w["not"].format(_words(node.operand, w))
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return w["always"] if node.value else w["never"]
    return ast.unparse(node)


def parse(text: str) -> ast.AST:
    """A condition's syntax tree (gpukb's own parser: what the engine checks)."""
    return ex.parse(text).tree.body


def words(node: ast.AST, lang: str = "en") -> str:
    """A parsed condition in words (English, or Chinese)."""
    return _words(node, _ZH if lang == "zh" else _EN)


def readable(text: str, lang: str = "en") -> str:
    """A condition in words; text the parser rejects is returned unchanged."""
    try:
        return words(parse(text), lang)
    except ex.ExpressionError:
        return text


def conjuncts(text: str, lang: str = "en") -> list[tuple[str, bool]]:
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
        out.append((words(part, lang), is_join))
    return out
