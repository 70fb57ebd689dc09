"""The evaluator's fused closures and the firing's placeholder test agree with their plain definitions.

The closures of gpukb.language.expr read names and constants inline where an operand is one (one call less per
operation); template.value_test answers, in C lookups, what check_values answers by its loop. Both are checked
here against a reference written the plain way, over generated inputs, with a fixed seed so a run is repeatable.
"""

import ast
import operator

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from gpukb.language import expr as ex
from gpukb.language.template import TemplateError, check_values, value_test

NAMES = ("a", "b", "w.x", "w.y")
ARITH = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
COMPARE = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Eq: operator.eq, ast.NotEq: operator.ne}


def _expressions(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(NAMES), st.integers(-9, 9).map(str), st.sampled_from(["0.5", "2.5", "-1.5"]))
    if depth == 0:
        return leaf
    inner = _expressions(depth - 1)
    arith = st.tuples(inner, st.sampled_from(["+", "-", "*", "/"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})")
    test = st.one_of(st.sampled_from(NAMES),
                     st.tuples(st.sampled_from(NAMES), st.sampled_from([">", ">=", "<", "<=", "==", "!="]),
                               st.integers(-3, 3)).map(lambda t: f"{t[0]} {t[1]} {t[2]}"))
    conditional = st.tuples(inner, test, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})")
    return st.one_of(leaf, arith, conditional)


def _reference(node: ast.AST, env: dict) -> object:
    """The expression evaluated node by node, the plain way."""
    if isinstance(node, ast.Expression):
        return _reference(node.body, env)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id]
    if isinstance(node, ast.Attribute):
        return env[node.value.id][node.attr]  # type: ignore[attr-defined]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_reference(node.operand, env)  # type: ignore[operator]
    if isinstance(node, ast.BinOp):
        return ARITH[type(node.op)](_reference(node.left, env), _reference(node.right, env))
    if isinstance(node, ast.Compare):
        return COMPARE[type(node.ops[0])](_reference(node.left, env), _reference(node.comparators[0], env))
    if isinstance(node, ast.IfExp):
        return _reference(node.body, env) if _reference(node.test, env) else _reference(node.orelse, env)
    raise AssertionError(f"no reference for {ast.dump(node)}")


@settings(derandomize=True, max_examples=400, deadline=None)
@given(_expressions(3), st.integers(-5, 5), st.sampled_from([0, 1.5, -2.0]), st.integers(-5, 5), st.floats(-4, 4))
def test_fused_closures_compute_what_the_expression_says(text, a, b, x, y):
    env = {"a": a, "b": b, "w": {"x": x, "y": y}}
    try:
        expected = _reference(ast.parse(text, mode="eval"), env)
    except ZeroDivisionError:
        with pytest.raises((ZeroDivisionError, ex.ExpressionError)):
            ex.parse(text).evaluate(env)
        return
    assume(abs(expected) < 1e12)  # type: ignore[arg-type]
    assert ex.parse(text).evaluate(env) == expected


def test_fused_closures_keep_their_errors():
    # a name read inline still names itself when it is missing, and arithmetic still needs numbers
    with pytest.raises(ex.ExpressionError, match="unknown name 'c'"):
        ex.parse("c * (a + 1)").evaluate({"a": 1})
    with pytest.raises(ex.ExpressionError, match="'w' has no field 'z'"):
        ex.parse("1 if w.z > 0 else 2").evaluate({"w": {"x": 1}})
    with pytest.raises(ex.ExpressionError, match="arithmetic needs numbers"):
        ex.parse("2 * (a + w.s)").evaluate({"a": 1, "w": {"s": "text"}})
    with pytest.raises(ex.ExpressionError, match="beyond"):
        ex.parse("a * (a * a)").evaluate({"a": 1e30})


# small domains, so that a group of placeholders on one fact (or on the env itself) often holds a None or lacks a key
_VALUES = st.one_of(st.none(), st.integers(0, 1), st.just("a"), st.lists(st.integers(0, 1), max_size=1),
                    st.dictionaries(st.sampled_from(["x", "y"]), st.one_of(st.none(), st.integers(0, 1)), max_size=2))


@settings(derandomize=True, max_examples=600, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["", "x", "y"])), min_size=1, max_size=4,
                unique=True),
       st.dictionaries(st.sampled_from(["a", "b"]), _VALUES, max_size=2))
@example([("a", "x"), ("a", "y")], {"a": {"x": None, "y": 1}})  # one of a fact's fields is None
@example([("a", ""), ("b", "")], {"a": None, "b": 1})  # one of the env's names is None
@example([("a", "x"), ("a", "y")], {"a": {"x": 1}})  # a fact lacks a field
@example([("a", "x")], {"a": "ab"})  # fields asked of a value that is no fact
def test_the_placeholder_test_agrees_with_check_values(wanted, env):
    try:
        check_values(tuple(wanted), env)
        complete = True
    except TemplateError:
        complete = False
    assert value_test(tuple(wanted))(env) is complete
