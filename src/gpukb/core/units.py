"""Human units in YAML ("80 GB", "3.35 TB/s", "989 TFLOPS", "700 W") to SI numbers.

GB/TB are decimal (1e9/1e12), GiB/TiB binary (2**30/2**40): datasheets quote decimal
units, so the catalog keeps them and every output names which one it prints.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any

from pydantic import BeforeValidator, WithJsonSchema

from . import ranges

_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
_NUMBER = r"(?P<num>[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*"
_PATTERNS = {
    "bytes": re.compile(_NUMBER + r"(?P<unit>[KMGTP]?B|[KMGT]iB)$"),
    # networks are sold in bits per second (a "400 Gb/s" adapter): b/s is read as bits, B/s as bytes
    "bandwidth": re.compile(_NUMBER + r"(?P<unit>[KMGTP]?B/s|[KMGT]iB/s|[KMGT]?b/s)$"),
    "flops": re.compile(_NUMBER + r"(?P<unit>[KMGTP]?FLOPS)$"),
    "watts": re.compile(_NUMBER + r"(?P<unit>[K]?W)$"),
}
_EXAMPLES = {"bytes": "80 GB", "bandwidth": "3.35 TB/s", "flops": "989 TFLOPS", "watts": "700 W"}


def parse_quantity(value: Any, dimension: str) -> float:
    """Return the SI value of `value` ("80 GB" -> 8e10); plain numbers are taken as SI. A value other than 0
    lies in the dimension's plausible range (core.ranges): '5e-324 GB' is a typo, not a memory."""
    return ranges.check(_si(value, dimension), dimension, zero=True)


def _si(value: Any, dimension: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f"expected a {dimension} quantity like '{_EXAMPLES[dimension]}', got {value!r}")
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ValueError(f"{dimension} must be a finite number, got {value}")
        if value < 0:
            raise ValueError(f"{dimension} must not be negative, got {value}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a {dimension} quantity like '{_EXAMPLES[dimension]}', got {value!r}")
    match = _PATTERNS[dimension].match(value.strip())
    if not match:
        raise ValueError(f"cannot read {value!r} as {dimension}: write it like '{_EXAMPLES[dimension]}'")
    unit = match["unit"].removesuffix("/s")
    number = float(match["num"])
    if unit.endswith("b"):  # bits: a network's rate, held in bytes/s like every other bandwidth
        unit, number = unit[:-1] + "B", number / 8
    if not math.isfinite(number):  # '1e400 GB'
        raise ValueError(f"{value!r} is not a finite {dimension} quantity")
    if unit in _BINARY:
        return number * _BINARY[unit]
    prefix = unit[:-1] if dimension in ("bytes", "bandwidth", "watts") else unit.removesuffix("FLOPS")
    return number * _PREFIX[prefix]


def _as(dimension: str) -> BeforeValidator:
    return BeforeValidator(lambda v: v if v is None else parse_quantity(v, dimension))


def _schema(dimension: str) -> WithJsonSchema:
    # The JSON Schema describes what YAML authors write: a number in SI, or a string with a unit.
    pattern = _PATTERNS[dimension].pattern.replace("(?P<num>", "(").replace("(?P<unit>", "(")
    return WithJsonSchema({
        "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": "^" + pattern}],
        "description": f"{dimension}, e.g. '{_EXAMPLES[dimension]}' (SI number also accepted)",
    })


Bytes = Annotated[float, _as("bytes"), _schema("bytes")]
Bandwidth = Annotated[float, _as("bandwidth"), _schema("bandwidth")]
Flops = Annotated[float, _as("flops"), _schema("flops")]
Watts = Annotated[float, _as("watts"), _schema("watts")]
