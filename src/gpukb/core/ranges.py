"""The plausible range of every kind of number gpukb reads: one table, each quantity stated once.

Positive and finite is not enough: 5e-324 tokens/s divides to infinity, 1e-310 days overflows the
ceiling of a GPU count, a subnormal peak memory has no logarithm. A value outside its quantity's range
is a typo or an attack, never a datasheet figure or a measurement: each bound sits orders of magnitude
beyond any real value, so it never judges a real figure, and any product or quotient of in-range values
stays finite and normal. The table lives here, not in kb/, because it guards the reading of kb/ itself:
a change to kb/ cannot widen it.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import AfterValidator

# quantity -> (smallest, largest) plausible value, in SI or the unit named
RANGES: dict[str, tuple[float, float]] = {
    "bytes": (1.0, 1e16),                # one byte .. 10 PB (a GPU holds 10-300 GB, a node some TB)
    "bandwidth": (1e6, 1e15),            # bytes/s: 1 MB/s .. 1 PB/s (a PCIe link 16 GB/s, HBM 8 TB/s)
    "flops": (1e9, 1e18),                # FLOP/s of one device: 1 GFLOP/s .. 1 EFLOP/s (a B200 is 4.5e15 in FP8)
    "watts": (1.0, 1e6),                 # one device or node: 1 W .. 1 MW
    "seconds": (1e-7, 1e10),             # 100 ns (below a kernel launch) .. 300 years
    "milliseconds": (1e-9, 1e9),         # latency targets (a time over one stays finite); 1 ps .. 11 days
    "request_rate": (1e-6, 1e6),         # requests per second arriving at a service: one a week .. a million
    "days": (1e-3, 1e4),                 # deadlines: 86 s .. 27 years
    "hours": (1e-3, 1e12),               # GPU-hours of a run
    "tokens_per_s": (1e-3, 1e9),         # one stream's or one GPU's tokens per second
    "tokens": (1.0, 1e16),               # a run's or a window's tokens
    "fraction": (1e-6, 1.0),             # a share (utilisation, headroom, MFU)
    "ratio": (1e-3, 1e3),                # a factor between two like quantities
    "count": (1e-3, 1e12),               # GPUs, layers, parameters, combinations, ...
    "gpus": (1.0, 1e7),                  # GPUs in one run
    "bits": (1.0, 64.0),                 # storage bits per value
    "bytes_per_value": (1e-3, 1e3),      # bytes held per parameter, logit or activation unit
    "usd": (1e-6, 1e10),                 # a price or a cost
    "usd_per_hour": (1e-4, 1e6),         # a rental price
    "kwh": (1e-3, 1e12),                 # a run's electricity
    "kg_co2": (1e-3, 1e12),              # a run's emissions
    "gco2_per_kwh": (1.0, 3000.0),       # a grid's intensity (coal is ~1,000)
}


class OutOfRange(ValueError):
    """A number outside the plausible range of its quantity."""


def check(value: float, quantity: str, zero: bool = False, scale: float = 1.0) -> float:
    """`value` if `value · scale` lies in the range of `quantity` (or is 0 where `zero` allows it); else OutOfRange
    naming the range in the value's own unit."""
    low, high = RANGES[quantity]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OutOfRange(f"expected a number, got {value!r}")
    if value == 0 and zero:
        return value
    scaled = value * scale
    if not (math.isfinite(scaled) and low <= scaled <= high):
        raise OutOfRange(f"{value:g} is outside the plausible range of {quantity.replace('_', ' ')}, "
                         f"{low / scale:g} to {high / scale:g}{' (or 0)' if zero else ''}")
    return value


def bounded(quantity: str, zero: bool = False, scale: float = 1.0) -> Any:
    """A pydantic annotation: the field's value (when not None) lies in the range of `quantity`."""
    return AfterValidator(lambda v: v if v is None else check(v, quantity, zero, scale))


# The largest dimension of a model, a catalog entry's or a workload's: a tenth of these already makes the
# largest published model (hidden 16,384, 126 layers, 256,000-token vocabulary) look small, and products of
# them (layers x hidden^2 x ...) stay far inside a float.
ARCHITECTURE: dict[str, int] = {
    "params": 10**13, "layers": 1000, "hidden_size": 262_144, "heads": 4096, "kv_heads": 4096, "head_dim": 65_536,
    "intermediate_size": 1_048_576, "vocab_size": 10_000_000, "context_length": 10_000_000, "experts": 4096,
}

# How far a measurement may lie beyond the simplest physical bound of its GPU before lint calls it impossible
# (gpukb.estimate.validation.unphysical): decode that reads the weights faster than the memory bandwidth, a
# first token sooner than the prompt's FLOPs at the fastest datasheet rate. Published runs reach at most 0.85 of
# these bounds; speculative decoding or a datasheet's rounding might pass one, but not twice over.
PHYSICS_SLACK = 2.0
# Peak memory per GPU against the GPU's memory: a figure in GiB mistaken for GB is 7% more; 25% more is not a run.
MEMORY_SLACK = 1.25
