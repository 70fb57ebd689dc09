"""Error bands: how far each number an answer predicts has missed the published measurements.

`gpukb validate` predicts every point of kb/measurements/; the ratios predicted / measured of the points
that speak about an option field (training tokens/s, time to train, TTFT, time per output token, memory
per GPU, ...) give that field's band: the central interval of the ratios at the stated coverage (policy
band-coverage) and their median, the bias. The interval is split-conformal: the ⌊(n+1)·α/2⌋-th and
⌈(n+1)·(1−α/2)⌉-th smallest of n ratios, so with exchangeable points a new point falls inside with
probability at least the coverage. A field with fewer points than policy band-min-points has no band
and says so. Where the points allow, a regime has a band of its own (multi-node vs single-node
training, batch-1 vs batched decode); a regime with too few points uses the field's pooled band.

The table is derived from the knowledge base itself, once per knowledge base (kept with it, and in
the packaged copy of kbcache), never typed: attaching bands to an answer is a few dict lookups.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any, Protocol


class Point(Protocol):
    """A validation point (gpukb.estimate.validation.Point) as the bands read it."""

    quantity: str
    ratio: float | None  # predicted / measured; None: no prediction
    source: str
    regime: str

COVERAGE_POLICY = "band-coverage"
MIN_POINTS_POLICY = "band-min-points"
CALIBRATION_POLICY = "band-calibration-floor"
ALL = ""  # the regime of a pooled band

# validation quantity -> (task group, option fields it measures with the exponent that turns the
# quantity's ratio into the field's: time per output token is the inverse of decode tokens/s).
# Every FLOP/s and MFU figure is gpukb's tokens/s in the source's own FLOP count, so it measures tokens/s;
# cost and energy are the time to train times figures the answer states (prices, power, grid intensity).
QUANTITY_FIELDS: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {
    **{q: ("training", (("tokens_per_s", 1), ("mfu", 1)))
       for q in ("training_tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu")},
    "gpu_hours": ("training", (("time_to_train_s", 1), ("cost_usd", 1), ("energy_kwh", 1), ("co2_kg", 1))),
    "decode_tokens_per_s": ("inference", (("tpot_s", -1),)),
    "decode_tokens_per_s_total": ("inference", (("tokens_per_s", 1), ("usd_per_million_tokens", -1))),
    "ttft_s": ("inference", (("ttft_s", 1),)),
    "peak_memory_per_gpu": ("any", (("per_gpu_bytes", 1),)),
    "fewest_gpus": ("any", (("count", 1),)),
}
# the option fields that carry a band, in the order they are shown
FIELDS = ("tokens_per_s", "mfu", "time_to_train_s", "cost_usd", "energy_kwh", "co2_kg", "ttft_s", "tpot_s",
          "usd_per_million_tokens", "per_gpu_bytes", "count")


def regime(kind: str, nodes: int, batch_size: int) -> str:
    """The regime a prediction belongs to: it errs differently across nodes and across decode batch sizes."""
    if kind == "training":
        return "multi-node" if nodes > 1 else "single-node"
    if kind == "inference":
        return "batch-1" if batch_size <= 1 else "batched"
    return ALL


@dataclass(frozen=True)
class Band:
    """The spread of predicted / measured for one field (and regime) over the points that measure it."""

    field: str
    task: str  # training | inference | any
    regime: str  # ALL for the pooled band
    points: int
    sources: int
    coverage: float
    low: float | None  # ratio predicted / measured at the lower end of the central interval; None: too few points
    high: float | None
    bias: float | None  # the median ratio

    @property
    def banded(self) -> bool:
        return self.low is not None

    @property
    def ratios(self) -> tuple[float, float]:
        """The interval of predicted / measured a band spans, widened to hold 1: where every point erred one way
        (GPU-hours all under-predicted: 0.32-0.97) the band still holds the estimate itself, and the bias (the
        median) says which way the points lean, rather than a band lying wholly beside its estimate."""
        assert self.low is not None and self.high is not None
        return min(self.low, 1.0), max(self.high, 1.0)

    def around(self, value: float) -> tuple[float, float]:
        """The interval the true value lies in, for a prediction `value`: value / high .. value / low, holding value."""
        low, high = self.ratios
        return value / high, value / low


def _ranks(n: int, coverage: float) -> tuple[int, int]:
    """The 1-based ranks of the ends of the split-conformal central interval of n ratios."""
    alpha = 1 - coverage
    low = min(max(math.floor((n + 1) * alpha / 2), 1), n)
    high = min(max(math.ceil((n + 1) * (1 - alpha / 2)), 1), n)
    return low, high


def interval(ratios: Iterable[float], coverage: float) -> tuple[float, float]:
    """The split-conformal central interval of `ratios` at `coverage` (order statistics, no interpolation)."""
    ordered = sorted(ratios)
    low, high = _ranks(len(ordered), coverage)
    return ordered[low - 1], ordered[high - 1]


def usable(p: Point) -> bool:
    """A point that speaks about an option field with a ratio a band can hold (finite and positive): a wrong
    measurement is refused before it has a ratio (validation marks it invalid), this keeps any other out too."""
    return p.ratio is not None and p.quantity in QUANTITY_FIELDS and math.isfinite(p.ratio) and p.ratio > 0


# (field, task, regime) -> the ratios predicted / measured of that field and the source of each
Samples = dict[tuple[str, str, str], list[tuple[float, str]]]


def samples(points: Iterable[Point]) -> Samples:
    out: Samples = {}
    for p in points:
        if not usable(p):
            continue
        assert p.ratio is not None
        task, fields = QUANTITY_FIELDS[p.quantity]
        for field, power in fields:
            for reg in {ALL, p.regime}:
                out.setdefault((field, task, reg), []).append((p.ratio ** power, p.source))
    return out


def derive(drawn: Samples, coverage: float, min_points: int) -> dict[tuple[str, str, str], Band]:
    table = {}
    for (field, task, reg), values in drawn.items():
        ratios = [r for r, _ in values]
        enough = len(ratios) >= min_points
        low, high = interval(ratios, coverage) if enough else (None, None)
        table[(field, task, reg)] = Band(field, task, reg, len(ratios), len({s for _, s in values}), coverage,
                                         low, high, median(ratios) if enough else None)
    return table


def pick(table: Mapping[tuple[str, str, str], Band], field: str, task: str, reg: str) -> Band | None:
    """The band of a field in a regime: its own where it has enough points, else the pooled one."""
    groups = (task, "any") if task != "any" else ("any",)
    for group in groups:
        own, pooled = table.get((field, group, reg)), table.get((field, group, ALL))
        for band in (own, pooled):
            if band is not None and band.banded:
                return band
        if own or pooled:
            return own or pooled  # too few points: the answer says how many there are
    return None


@dataclass(frozen=True)
class Calibration:
    """Leave-one-source-out: each source's points against bands drawn from the other sources' points only."""

    coverage: float  # the stated coverage
    checked: dict[str, tuple[int, int]]  # field -> (points inside their band, points with a band)

    @property
    def inside(self) -> int:
        return sum(i for i, _ in self.checked.values())

    @property
    def total(self) -> int:
        return sum(n for _, n in self.checked.values())

    @property
    def share(self) -> float:
        return self.inside / self.total if self.total else 1.0


def _kth(ordered: list[float], removed: list[float], k: int) -> float:
    """The k-th smallest (1-based) of the multiset `ordered` less the multiset `removed` (both sorted), by a
    binary search over `ordered`: O(log² n), where building the rest would be O(n)."""
    lo, hi = 0, len(ordered) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        value = ordered[mid]
        if bisect.bisect_right(ordered, value) - bisect.bisect_right(removed, value) >= k:
            hi = mid
        else:
            lo = mid + 1
    return ordered[lo]


def calibrate(points: list[Point], coverage: float, min_points: int) -> Calibration:
    """Each source's points against the bands of the other sources' points. The held-out band of a field is
    read from the field's sorted ratios less the source's own, never rebuilt: near-linear in the points,
    where deriving every table again per source was quadratic (4,000 points took 24 s)."""
    drawn = samples(points)
    ordered = {key: sorted(r for r, _ in values) for key, values in drawn.items()}
    own: dict[str, dict[tuple[str, str, str], list[float]]] = {}  # source -> key -> its ratios
    for key, values in drawn.items():
        for ratio, source in values:
            own.setdefault(source, {}).setdefault(key, []).append(ratio)
    for keys in own.values():
        for ratios in keys.values():
            ratios.sort()

    def held_out(key: tuple[str, str, str], source: str) -> tuple[int, tuple[float, float] | None]:
        """(points left, their interval where they are enough) of a field without the source's points."""
        everything, removed = ordered.get(key, []), own.get(source, {}).get(key, [])
        n = len(everything) - len(removed)
        if n < max(min_points, 1):
            return n, None
        low, high = _ranks(n, coverage)
        return n, (_kth(everything, removed, low), _kth(everything, removed, high))

    def band(field: str, task: str, reg: str, source: str) -> tuple[float, float] | None:
        """As pick() reads the held-out table: a regime's own band, else the pooled one, per task group."""
        for group in ((task, "any") if task != "any" else ("any",)):
            found = [held_out((field, group, r), source) for r in (reg, ALL)]
            for _, spread in found:
                if spread is not None:
                    return spread
            if any(n > 0 for n, _ in found):
                return None  # too few points left: no band, as pick() would say
        return None

    checked: dict[str, list[int]] = {}
    for p in sorted(points, key=lambda p: p.source):
        if not usable(p):
            continue
        assert p.ratio is not None
        task, fields = QUANTITY_FIELDS[p.quantity]
        field, power = fields[0]  # a point is one check, on the first field it measures
        spread = band(field, task, p.regime, p.source)
        if spread is None:
            continue
        count = checked.setdefault(field, [0, 0])
        count[0] += spread[0] <= p.ratio ** power <= spread[1]
        count[1] += 1
    return Calibration(coverage, {f: (i, n) for f, (i, n) in sorted(checked.items())})


@dataclass(frozen=True)
class Bands:
    table: dict[tuple[str, str, str], Band]
    calibration: Calibration
    # (task group, regime) -> the band of each field, picked once: an ask only looks them up
    _picked: dict[tuple[str, str], tuple[tuple[str, Band], ...]] = dataclasses.field(
        default_factory=dict, compare=False, repr=False)

    def picked(self, task_group: str, reg: str) -> tuple[tuple[str, Band], ...]:
        key = (task_group, reg)
        if key not in self._picked:
            self._picked[key] = tuple((f, b) for f in FIELDS if (b := pick(self.table, f, task_group, reg)) is not None)
        return self._picked[key]


def compute(points: list[Point], coverage: float, min_points: int) -> Bands:
    """The bands validation points give, and their leave-one-source-out calibration."""
    return Bands(derive(samples(points), coverage, min_points), calibrate(points, coverage, min_points))


def for_option(bands: Bands, values: Mapping[str, Any], task: str, nodes: int,
               batch_size: int) -> list[tuple[str, Band]]:
    """The band of every field in `values` that has a prediction and points that measured it."""
    task_group = "inference" if task == "inference" else "training"
    return [(f, b) for f, b in bands.picked(task_group, regime(task_group, nodes, batch_size)) if values.get(f)]
