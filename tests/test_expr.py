import ast
import contextlib
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpukb.language import expr as ex
from gpukb.language.template import TemplateError, placeholders, render


def test_evaluates_qualified_names_arithmetic_and_conditionals():
    e = ex.parse("w.params * 2 + max(1, w.b) if w.on else 0")
    assert e.evaluate({"w": {"params": 10, "b": 5, "on": True}}) == 25
    assert e.evaluate({"w": {"params": 10, "b": 5, "on": False}}) == 0
    assert ex.parse("task in ['lora', 'qlora']").evaluate({"task": "qlora"}) is True
    assert ex.parse("fits == false").evaluate({"fits": False}) is True


@pytest.mark.parametrize(("text", "message"), [
    ("__import__('os')", "only these functions may be called"),
    ("open('/etc/passwd')", "only these functions may be called"),
    ("w.__class__", "may not start with an underscore"),
    ("w.a.b", "attribute access is not allowed"),
    ("(lambda: 1)()", "only these functions may be called"),
    ("[x for x in y]", "ListComp is not allowed"),
    ("2 ** 100", "exponents must be constants of at most 8"),
    ("9 ** 9 ** 9", "exponents must be constants"),
    ("w[0]", "Subscript is not allowed"),
    ("max(*w)", "*args is not allowed"),
    ("x := 1", "syntax error"),
    ("'a' * 10", None),  # parses, but arithmetic on strings fails at run time
])
def test_unsafe_expressions_are_rejected(text, message):
    if message is None:
        with pytest.raises(ex.ExpressionError, match="arithmetic needs numbers"):
            ex.parse(text).evaluate({})
    else:
        with pytest.raises(ex.ExpressionError, match=re.escape(message)):
            ex.parse(text)


class _Attrs(dict):
    secret = "an attribute"


@pytest.mark.parametrize(("text", "env", "message"), [
    ("w.x + 1", {}, "unknown name 'w'"),
    ("y * 2", {"w": {}}, "unknown name 'y'"),
    ("w.x * 2", {"w": {"y": 1}}, "'w' has no field 'x'"),
    ("w.upper", {"w": "text"}, "'w' has no field 'upper'"),  # a string is not a fact: no attribute lookups
    ("w.real", {"w": 3}, "'w' has no field 'real'"),
    ("w.secret", {"w": _Attrs()}, "'w' has no field 'secret'"),  # fields are keys, never attributes
    ("w.x * 2", {"w": {"x": "7b"}}, "arithmetic needs numbers"),
    ("2 * w.x", {"w": {"x": [1]}}, "arithmetic needs numbers"),
])
def test_run_time_lookups_fail_with_the_name(text, env, message):
    with pytest.raises(ex.ExpressionError, match=re.escape(message)):
        ex.parse(text).evaluate(env)


def test_long_expressions_are_rejected():
    with pytest.raises(ex.ExpressionError, match="longer than"):
        ex.parse("1 + " * 600 + "1")


def test_condition_compiles_to_durable_json():
    cond = ex.parse("task in ['a', 'b'] and params > 1e9 and gpu == w.gpu and mem < w.x * 2")
    assert ex.to_condition(cond, {"w"}) == {"$and": [
        {"$or": [{"task": "a"}, {"task": "b"}]},
        {"$gt": {"params": 1e9}},
        {"gpu": {"w": "gpu"}},
        {"$lt": {"mem": {"$mul": {"$l": {"w": "x"}, "$r": 2}}}},
    ]}


def test_condition_cannot_reference_a_later_alias():
    with pytest.raises(ex.ExpressionError, match="not an earlier pattern"):
        ex.to_condition(ex.parse("gpu == later.gpu"), {"w"})


# --- the whitelist by construction: valid trees from the grammar, each mutated with a refused node ---

LEAVES = st.one_of(
    st.sampled_from(["a", "b", "w.params", "w.layers", "p.tp", "m.weights", "true", "false", "'lora'"]),
    st.integers(0, 1000).map(str),
    st.floats(0, 1e12, allow_nan=False, allow_infinity=False).map(repr),
)
ENV = {"a": 3, "b": 2.5, "w": {"params": 7e9, "layers": 32}, "p": {"tp": 2}, "m": {"weights": 1.4e10}}


def _grow(child: st.SearchStrategy[str], other: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """One production of the grammar around `child`; `other` fills the remaining operands."""
    two = st.tuples(child, other, st.booleans()).map(lambda t: (t[0], t[1]) if t[2] else (t[1], t[0]))
    return st.one_of(
        st.tuples(two, st.sampled_from(["+", "-", "*", "/", "//", "%"])).map(lambda t: f"({t[0][0]}) {t[1]} ({t[0][1]})"),
        st.tuples(two, st.sampled_from(["==", "!=", "<", "<=", ">", ">="])).map(lambda t: f"({t[0][0]}) {t[1]} ({t[0][1]})"),
        st.tuples(two, st.sampled_from(["and", "or"])).map(lambda t: f"({t[0][0]}) {t[1]} ({t[0][1]})"),
        st.tuples(child, st.sampled_from(["-", "+", "not "])).map(lambda t: f"{t[1]}({t[0]})"),
        st.tuples(child, st.sampled_from(["in", "not in"])).map(lambda t: f"({t[0]}) {t[1]} ['lora', 'qlora', 1]"),
        st.tuples(child, other, other, st.integers(0, 2)).map(  # child as body, condition or alternative
            lambda t: "({}) if ({}) else ({})".format(*t[1:1 + t[3]], t[0], *t[1 + t[3]:3])),
        st.tuples(child, st.sampled_from(["abs", "ceil", "floor", "sqrt", "log2", "round"])).map(lambda t: f"{t[1]}({t[0]})"),
        st.tuples(two, st.sampled_from(["min", "max"])).map(lambda t: f"{t[1]}({t[0][0]}, {t[0][1]})"),
    )


def _depth(node: ast.AST) -> int:
    return 1 + max((_depth(c) for c in ast.iter_child_nodes(node)), default=0)


# Valid expressions (a leaf raised to a constant power of at most 8 keeps the numbers finite).
EXPRESSIONS = st.recursive(
    st.one_of(LEAVES, st.tuples(LEAVES, st.integers(0, 8)).map(lambda t: f"({t[0]}) ** {t[1]}")),
    lambda children: _grow(children, children), max_leaves=10)
# A valid expression with one HOLE somewhere in it (a name the leaves never use).
CONTEXTS = st.recursive(st.just("HOLE"), lambda contexts: _grow(contexts, EXPRESSIONS), max_leaves=6)

# Each is refused whatever valid expression stands for X: the node it adds is outside the language.
REFUSED = {
    "attribute of an expression": "((X) + 1).real",
    "attribute of an attribute": "w.a.b + (X)",
    "method call": "(X).bit_length()",
    "call of another name": "open(X)",
    "call of a builtin": "getattr(X, 'a')",
    "dunder import": "__import__('os') + (X)",
    "keyword argument": "max(X, 1, default=0)",
    "subscript": "(X)[0]",
    "slice": "(X)[1:2]",
    "lambda": "(lambda: X)",
    "lambda called": "(lambda q: q)(X)",
    "list comprehension": "[q for q in (X)]",
    "set comprehension": "{q for q in (X)}",
    "dict comprehension": "{q: 1 for q in (X)}",
    "generator": "max(q for q in (X))",
    "is": "(X) is (1)",
    "is not": "(X) is not (1)",
    "invert": "~(X)",
    "walrus": "(q := (X))",
    "f-string": 'f"{(X)}"',
    "starred argument": "max(*(X))",
    "starred in a list": "[*(X)]",
    "bitwise and": "(X) & 1",
    "bitwise or": "(X) | 1",
    "bitwise xor": "(X) ^ 1",
    "shift": "(X) << 1",
    "matrix product": "(X) @ (X)",
    "set display": "{(X)}",
    "dict display": "{(X): 1}",
    "list of expressions": "[a, (X)]",  # a name beside X: [(0)] alone is a list of constants, which is allowed
    "tuple of expressions": "((X), a)",  # a name: a tuple of constants alone may be allowed
    "None": "(X) + None",
    "bytes": "(X) + b'x'",
    "ellipsis": "(X) + ...",
    "complex": "(X) + 1j",
    "underscore name": "_x + (X)",
    "underscore field": "w._secret + (X)",
    "exponent that is no constant": "2 ** (w.params + (X))",
    "exponent above 8": "(X) ** 9",
    "await": "(await (X))",
    "yield": "(yield (X))",
}


@settings(max_examples=150, deadline=None)
@given(EXPRESSIONS)
def test_grammar_expressions_parse_and_fail_only_with_expression_errors(text):
    assume(_depth(ast.parse(text, mode="eval")) <= ex.MAX_DEPTH)
    parsed = ex.parse(text)
    assert parsed.names <= {"a", "b", "w.params", "w.layers", "p.tp", "m.weights"}
    with contextlib.suppress(ex.ExpressionError):  # zero division, sqrt(-1), 'lora' + 1: refused, never raw
        parsed.evaluate(ENV)


@settings(max_examples=300, deadline=None)
@given(CONTEXTS, EXPRESSIONS, st.sampled_from(sorted(REFUSED)))
def test_every_refused_node_anywhere_in_a_valid_tree_is_refused(context, inner, construct):
    valid = context.replace("HOLE", f"({inner})")
    assume(_depth(ast.parse(valid, mode="eval")) <= ex.MAX_DEPTH - 4)
    ex.parse(valid)
    mutated = context.replace("HOLE", f"({REFUSED[construct].replace('X', inner)})")
    ast.parse(mutated, mode="eval")  # valid Python: the whitelist, not the parser, must refuse it
    with pytest.raises(ex.ExpressionError) as refused:
        ex.parse(mutated)
    assert "syntax error" not in str(refused.value)


@pytest.mark.parametrize(("text", "message"), [
    ("~w.x", "operator Invert is not allowed"),
    ("a is b", "comparison Is is not allowed"),
    ("a is not b", "comparison IsNot is not allowed"),
    ("1 < a is b", "comparison Is is not allowed"),
    ("a & b", "operator BitAnd is not allowed"),
    ("a @ b", "operator MatMult is not allowed"),
    ("(q := 1)", "NamedExpr is not allowed"),
    ("f'{a}'", "JoinedStr is not allowed"),
    ("(lambda: 1)", "Lambda is not allowed"),
    ("{a: 1}", "Dict is not allowed"),
    ("max(a, key=b)", "keyword arguments are not allowed"),
    ("[a]", "lists may hold constants only"),
    ("a + None", "constant None is not a number"),
    ("(a + 1).real", "attribute access is not allowed"),
])
def test_each_check_of_the_whitelist_names_what_it_refuses(text, message):
    with pytest.raises(ex.ExpressionError, match=re.escape(message)):
        ex.parse(text)


@pytest.mark.parametrize(("text", "message"), [("~a", "operator Invert cannot be evaluated"),
                                               ("a is b", "comparison Is cannot be evaluated")])
def test_the_evaluator_refuses_operators_it_does_not_know_even_unchecked(text, message):
    """Behind the check, the evaluator itself never reads `~x` as `x` nor fails with a raw KeyError."""
    with pytest.raises(ex.ExpressionError, match=message):
        ex._closure(ast.parse(text, mode="eval").body)


def test_template_renders_units_and_refuses_format_tricks():
    assert render("{m.total|GB} at {x|pct}", {"m": {"total": 12.3e9}, "x": 0.4}) == "12.3 GB at 40%"
    for bad in ("{m.__class__}", "{0}", "{m[0]}", "{m.total!r}", "{m.total|evil}"):
        with pytest.raises(TemplateError):
            placeholders(bad)
