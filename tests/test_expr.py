import contextlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpukb import expr as ex
from gpukb.template import TemplateError, placeholders, render


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


@given(st.text(max_size=60))
def test_arbitrary_text_never_escapes_the_whitelist(text):
    try:
        parsed = ex.parse(text)
    except ex.ExpressionError:
        return
    with contextlib.suppress(ex.ExpressionError):
        parsed.evaluate({})


def test_template_renders_units_and_refuses_format_tricks():
    assert render("{m.total|GB} at {x|pct}", {"m": {"total": 12.3e9}, "x": 0.4}) == "12.3 GB at 40%"
    for bad in ("{m.__class__}", "{0}", "{m[0]}", "{m.total!r}", "{m.total|evil}"):
        with pytest.raises(TemplateError):
            placeholders(bad)
