import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gpukb.core.ranges import RANGES
from gpukb.core.units import parse_quantity


@pytest.mark.parametrize(("text", "dimension", "expected"), [
    ("80 GB", "bytes", 80e9),
    ("24 GiB", "bytes", 24 * 2**30),
    ("3.35 TB/s", "bandwidth", 3.35e12),
    ("900 GB/s", "bandwidth", 900e9),
    ("989.4 TFLOPS", "flops", 989.4e12),
    ("4.5 PFLOPS", "flops", 4.5e15),
    ("700 W", "watts", 700.0),
    (1.5e9, "bytes", 1.5e9),
])
def test_human_units_become_si(text, dimension, expected):
    assert parse_quantity(text, dimension) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "dimension", "message"), [
    ("80 GB/s", "bytes", "cannot read '80 GB/s' as bytes"),
    ("fast", "bandwidth", "write it like '3.35 TB/s'"),
    (-1, "bytes", "must not be negative"),
    (True, "flops", "expected a flops quantity"),
])
def test_bad_quantities_say_what_to_write(text, dimension, message):
    with pytest.raises(ValueError, match=message):
        parse_quantity(text, dimension)


@given(st.floats(min_value=0, max_value=1e6, allow_nan=False), st.sampled_from(["", "K", "M", "G", "T", "P"]))
def test_decimal_prefixes_scale_exactly(number, prefix):
    scale = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}[prefix]
    low, high = RANGES["bytes"]
    assume(number == 0 or low <= number * scale <= high)
    assert parse_quantity(f"{number!r} {prefix}B", "bytes") == pytest.approx(number * scale)


@pytest.mark.parametrize(("value", "dimension"), [
    ("5e-324 GB", "bytes"), (5e-324, "bytes"), ("1e-310 TB/s", "bandwidth"), ("0.5 B", "bytes"),
    ("900 PB", "bytes"), ("1e30 TFLOPS", "flops"), ("1 KFLOPS", "flops"), ("1e9 KW", "watts"),
])
def test_absurd_quantities_are_refused_naming_the_range(value, dimension):
    """Positive and finite is not enough: a subnormal divides to infinity, 900 PB is no GPU's memory."""
    low, high = RANGES[dimension]
    with pytest.raises(ValueError, match=re.escape(f"plausible range of {dimension}, {low:g} to {high:g}")):
        parse_quantity(value, dimension)


def test_zero_stays_zero():
    assert parse_quantity(0, "bandwidth") == 0.0
