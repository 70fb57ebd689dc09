"""Fuzzing: any workload is an answer or a WorkloadError, never a traceback; any expression is
refused or evaluated within its time bound."""

from __future__ import annotations

import contextlib
import itertools

from cpu_budget import within_cpu_seconds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukb
from gpukb import WorkloadError
from gpukb.answer.workload import Workload
from gpukb.language import expr as ex

KB = gpukb.load_kb()
EXPRESSION_SECONDS = 2.0  # a bounded expression takes microseconds; one that never ends, forever

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**30), 10**30), st.integers(-5, 70_000),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["7B", "1e400", "2T", "-1", "nan", "inf", "llama-2-7b", "lora", "bf16", "h100-sxm-80gb"]),
    st.lists(st.sampled_from(["h100-sxm-80gb", "l40s-48gb", "", "x"]), max_size=3),
    # numbers durable-rules once misread or refused (an exponent without a '.', beyond 64 bits), and an
    # endless iterable (for `gpus`)
    st.sampled_from([1e-05, 1e-07, 5e-324, 2e16, 1e300, -0.0, 2**63, 10**30]),
    st.builds(lambda: itertools.repeat("h100-sxm-80gb")),
)
fields = st.sampled_from([*Workload.model_fields, "colour"])


@st.composite
def workloads(draw):
    base = draw(st.sampled_from([
        {"model": "llama-2-7b", "task": "lora"},
        {"model": "mixtral-8x7b", "task": "inference"},
        {"params": "7B", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000, "task": "pretrain"},
        {},
    ]))
    return {**base, **draw(st.dictionaries(fields, scalars, max_size=4))}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_a_workload_is_answered_or_named_never_a_traceback(workload):
    try:
        KB.ask(workload)
    except WorkloadError as err:
        assert err.field and str(err)


numbers = st.one_of(st.integers(-(10**6), 10**6).map(str), st.sampled_from(["0", "1e59", "1e60", "7", "0.5", "-3"]))
names = st.sampled_from(["w.params", "w.layers", "x", "true", "false"])


def _expressions() -> st.SearchStrategy[str]:
    leaf = st.one_of(numbers, names)

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        return st.one_of(
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "//", "%", "<", "==", " and ", " or "]), inner)
            .map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, st.sampled_from(["0", "2", "8", "0.5", "9", "-1"])).map(lambda t: f"({t[0]}) ** {t[1]}"),
            st.tuples(st.sampled_from(["min", "max", "abs", "ceil", "floor", "sqrt", "log2", "round"]),
                      st.lists(inner, min_size=1, max_size=2)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
            inner.map(lambda e: f"-{e}"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        )

    return st.recursive(leaf, extend, max_leaves=40)


@settings(max_examples=400, deadline=None)
@given(_expressions(), st.one_of(st.integers(-(10**13), 10**13), st.floats(-1e30, 1e30)))
def test_an_expression_is_refused_or_evaluated_within_its_bound(text, x):
    value = None
    with within_cpu_seconds(EXPRESSION_SECONDS, repr(text)), contextlib.suppress(ex.ExpressionError):
        value = ex.parse(text).evaluate({"w": {"params": 7_000_000_000, "layers": 32}, "x": x})
    if isinstance(value, int | float) and not isinstance(value, bool) and value == value:
        assert abs(value) <= ex.MAX_MAGNITUDE
