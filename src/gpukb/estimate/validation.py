"""`gpukb validate`: every published measurement in kb/measurements/ predicted through ask().

Accuracy is reported the way the field does: the median error exp(median |ln(predicted/measured)|) − 1
and the share of points within ±25%, overall and per quantity. A point gpukb cannot answer is a miss
(with its reason): it counts as outside ±25% and as an infinite error in the median.

The energy and emissions of a training run (quantities training_energy_kwh, training_co2_kg) are derived
from the same run's GPU-hours, already a point of its own: counted in the overall median they would count
that run two or three times. They are footprints, validated as their own quantities with their own gate
(policy validation-footprint-within-25: the share of them within ±25%), beside the performance gates.
"""

from __future__ import annotations

import math
import threading
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from statistics import median
from typing import Any

from ..answer import bands
from ..answer.answer import Answer, Option
from ..answer.workload import ResolvedWorkload
from ..core import ranges
from ..core.errors import ASK_ERRORS, WorkloadError
from ..knowledge.kb import KnowledgeBase
from ..knowledge.sandbox import sandboxed
from ..knowledge.schema import ENERGY_QUANTITIES, LOAD_QUANTITIES, Measurement
from ..language import expr
from .energy import SCOPE_VALUE
from .resolve import workload_fact

THRESHOLD_POLICIES = {"median_error": "validation-median-error", "within_25": "validation-within-25",
                      "band_calibration": bands.CALIBRATION_POLICY,
                      "footprint_within_25": "validation-footprint-within-25"}
FOOTPRINTS = ENERGY_QUANTITIES  # a run's energy and CO₂: checked by their own gate, outside the overall median
STEP_POLICY = "validation-median-step"  # how much worse than its base a change may make the median error
BAND = 0.25
# the trace values behind each quantity: the rules that computed them are shown with the point
VALUES_BEHIND = {
    "training": ("tokens_per_s", "efficiency", "utilisation", "time_to_train_s", "mfu", "flop_per_token"),
    "decode": ("tokens_per_s", "tpot_s", "ttft_s", "step_time_s", "bytes_per_step"),
    "memory": ("per_gpu_bytes", "weights", "activations", "optimizer", "gradients", "kv_cache", "total"),
    "rl": ("step_time_s", "generation_s", "reference_s", "reward_s", "critic_s", "training_s", "sync_s", "switch_s",
           "offload_s", "waves"),
    # not gpu_hours: the point takes the source's own GPU-hours, so the rules that time the run do not move it
    "energy": ("gpu_kwh", "it_kwh", "energy_kwh", "co2_kg"),
    "load": ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "request_throughput", "utilisation"),
}
# a phase quantity -> the RL phases (RlEstimate.phases) that make it up: a framework's "training" timer counts the
# update, its "logprobs" timer the policy's old log-probs and the reference's; gpukb's training phase holds the update
# and the old log-probs' pass, the reference, reward and critic phases the rest
RL_PHASES = {"rl_generation_time_s": ("generation",),
             "rl_training_time_s": ("training", "reference", "reward", "critic")}
KIND_OF = {
    "training_tokens_per_s_per_gpu": "training", "model_tflops_per_gpu": "training",
    "hardware_tflops_per_gpu": "training", "mfu": "training", "gpu_hours": "training",
    "decode_tokens_per_s": "decode", "decode_tokens_per_s_total": "decode", "ttft_s": "decode",
    "peak_memory_per_gpu": "memory", "fewest_gpus": "memory", "rl_step_time_s": "rl", "rl_generation_time_s": "rl",
    "rl_training_time_s": "rl",
    "training_energy_kwh": "energy", "training_co2_kg": "energy",
    **{q: "load" for q in LOAD_QUANTITIES},
}


@dataclass(frozen=True)
class Point:
    id: str
    quantity: str
    measured: float  # in the canonical unit of the quantity (see schema.UNITS)
    predicted: float | None
    ratio: float | None  # predicted / measured
    source: str
    gpu: str
    rules: tuple[str, ...] = ()
    reason: str = ""  # why there is no prediction
    framework: str = ""  # the run's stack (its workload's framework)
    regime: str = ""  # gpukb.answer.bands.regime: multi-node / single-node training, batch-1 / batched decode
    invalid: bool = False  # the measurement itself is wrong (a value no run has, a workload gpukb refuses): a defect

    @property
    def log_error(self) -> float:
        return abs(math.log(self.ratio)) if self.ratio else math.inf

    @property
    def within(self) -> bool:
        return self.ratio is not None and abs(self.ratio - 1) <= BAND


@dataclass(frozen=True)
class Summary:
    points: int
    median_error: float  # exp(median |ln ratio|) - 1; inf when most points miss
    within_25: float  # share of points with |ratio - 1| <= 0.25
    bias: float | None = None  # the median ratio predicted / measured: below 1 under-predicts; None without ratios

    @property
    def inside(self) -> int:
        """How many points are within ±25%: printed with the share, since 79.8% rounds to an 80% goal."""
        return round(self.within_25 * self.points)

    @staticmethod
    def of(points: list[Point]) -> Summary:
        if not points:
            return Summary(0, 0.0, 1.0)
        errors = [p.log_error for p in points]
        ratios = [p.ratio for p in points if p.ratio is not None]
        return Summary(len(points), math.exp(median(errors)) - 1 if median(errors) < math.inf else math.inf,
                       sum(p.within for p in points) / len(points), median(ratios) if ratios else None)


@dataclass
class Validation:
    points: list[Point]
    overall: Summary  # the performance points: every quantity but the footprints
    by_quantity: dict[str, Summary]
    thresholds: dict[str, float] = field(default_factory=dict)
    by_framework: dict[str, Summary] = field(default_factory=dict)  # the performance points of each framework
    bands: bands.Bands | None = None  # the error bands these points give, and their calibration
    footprints: Summary = field(default_factory=lambda: Summary.of([]))  # energy and CO₂ points, their own gate

    @property
    def footprints_passed(self) -> bool:
        return self.footprints.within_25 >= self.thresholds.get("footprint_within_25", 0.0)

    @property
    def invalid(self) -> list[Point]:
        """Points whose measurement is wrong: lint reports each, and validation fails while any is left."""
        return [p for p in self.points if p.invalid]

    @property
    def passed(self) -> bool:
        if self.invalid:
            return False
        calibrated = self.bands is None or self.bands.calibration.share >= self.thresholds.get("band_calibration", 0.0)
        return (self.overall.median_error <= self.thresholds.get("median_error", math.inf)
                and self.overall.within_25 >= self.thresholds.get("within_25", 0.0) and calibrated
                and self.footprints_passed)

    def to_json(self) -> dict[str, Any]:
        return {
            "points": [{**asdict(p), "rules": list(p.rules)} for p in self.points],
            "median_error": _finite(self.overall.median_error),
            "within_25": self.overall.within_25,
            "by_quantity": {q: {"points": s.points, "median_error": _finite(s.median_error), "within_25": s.within_25,
                                "bias": s.bias}
                            for q, s in self.by_quantity.items()},
            "by_framework": {f: {"points": s.points, "median_error": _finite(s.median_error), "within_25": s.within_25}
                             for f, s in self.by_framework.items()},
            "footprints": {"quantities": list(FOOTPRINTS), "points": self.footprints.points,
                           "median_error": _finite(self.footprints.median_error),
                           "within_25": self.footprints.within_25, "passed": self.footprints_passed},
            "thresholds": self.thresholds,
            **(_bands_json(self.bands) if self.bands else {}),
            "invalid": [p.id for p in self.invalid],
            "passed": self.passed,
        }


def _bands_json(b: bands.Bands) -> dict[str, Any]:
    cal = b.calibration
    return {
        "bands": [{"field": x.field, "task": x.task, "regime": x.regime or "all", "points": x.points,
                   "sources": x.sources, "coverage": x.coverage, "low": x.low, "high": x.high, "bias": x.bias,
                   # what answers use: the interval widened to hold 1, so every band holds its estimate
                   "interval": list(x.ratios) if x.banded else None}
                  for _, x in sorted(b.table.items())],
        "calibration": {"coverage": cal.coverage, "inside": cal.inside, "checked": cal.total, "share": cal.share,
                        "by_field": {f: {"inside": i, "checked": n} for f, (i, n) in cal.checked.items()}},
    }


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def workload_of(m: Measurement, kb: KnowledgeBase) -> dict[str, Any]:
    """The measurement's run as an ask(): exactly its GPUs (placement 'all') unless it asks for the fewest. Its
    models are catalog models or config files inside the checkout (knowledge.sandbox: nothing downloaded, no
    file of the machine read); WorkloadError otherwise."""
    workload = dict(sandboxed(kb, m.workload))
    if m.quantity == "fewest_gpus":
        workload.pop("gpu_count", None)
    elif workload.get("gpu_count"):
        workload["placement"] = "all"
    return workload


def _value(step_values: list[Any], name: str) -> float | None:
    return next((v["value"] for v in step_values if v["name"] == name), None)


def _traced(option: Option, name: str) -> float | None:
    """A value computed for this option by a rule (the last step that computed it)."""
    for step in reversed(option.trace):
        value = _value(step.values, name)
        if value is not None:
            return float(value)
    return None


def predict(m: Measurement, answer: Answer, kb: KnowledgeBase | None = None) -> tuple[float, Option]:
    """The prediction for a measurement, in the canonical unit of its quantity. FLOP/s and MFU are gpukb's
    tokens/s times the source's own FLOPs per token where the measurement states them (with kb given):
    sources count attention and the logits their own ways, and a figure is only comparable in its own count."""
    if not answer.options:
        why = "; ".join(f.message for o in answer.rejected for f in o.findings)[:300]
        raise LookupError(f"no option fits{': ' + why if why else ''}")
    option = answer.options[0]
    q = m.quantity
    if q == "fewest_gpus":
        return float(option.count), option
    if q == "peak_memory_per_gpu":  # an allocator's peak holds no CUDA context or NCCL buffers: the runtime overhead
        allocator = m.memory_counter == "allocator"
        return float(option.per_gpu_bytes - (option.memory.overhead if allocator else 0)), option
    if q in ENERGY_QUANTITIES:
        return _energy_as_published(m, option), option
    if q == "ttft_s":
        return _need(option.ttft_s, "time to first token"), option
    if q == "request_throughput":
        return _need(_traced(option, q), "requests completed per second (give request_rate)"), option
    if q in LOAD_QUANTITIES:
        return _need(getattr(option.load, q) if option.load else None, "latency under load (give request_rate)"), option
    if q == "rl_step_time_s":
        return _need(option.rl.step_time_s if option.rl else None, "RL step time"), option
    if q in RL_PHASES:
        phases = option.rl.phases if option.rl else {}
        return _need(sum(phases.get(p, 0.0) for p in RL_PHASES[q]) or None, q.removesuffix("_s").replace("_", " ")), option
    if q == "decode_tokens_per_s":
        return 1 / _need(option.tpot_s, "time per output token"), option
    if q == "decode_tokens_per_s_total":
        total = _need(option.tokens_per_s, "decode throughput")
        return (total / option.count if m.unit == "tokens/s/GPU" else total), option
    tokens_per_s = _need(option.tokens_per_s, "training throughput")
    if q == "training_tokens_per_s_per_gpu":
        return tokens_per_s / option.count, option
    if q == "gpu_hours":
        return _need(option.time_to_train_s, "time to train (give tokens)") * option.count / 3600, option
    counted = "flop_per_token" if q == "hardware_tflops_per_gpu" else "model_flop_per_token"
    per_token = _need(_traced(option, counted), "FLOP per token")
    if m.flop_per_token and kb is not None:
        per_token_as_published = float(_parsed(m.flop_per_token).evaluate(workload_fact(kb, answer.workload)))
    else:
        per_token_as_published = per_token
    if q == "mfu":
        return _need(option.mfu, "model FLOPs utilisation") * per_token_as_published / per_token, option
    return tokens_per_s / option.count * per_token_as_published, option


def _energy_as_published(m: Measurement, option: Option) -> float:
    """The energy (or CO₂) of the source's own GPU-hours, in the part of the estimate its figure counts
    (GPU boards, servers or the facility): the point checks gpukb's power, PUE and grid intensity; whether
    gpukb predicts the GPU-hours themselves is what the run's gpu_hours point checks."""
    assert m.energy_scope is not None and m.gpu_hours is not None  # the schema requires both
    hours = _need(_traced(option, "gpu_hours"), "energy estimate (give tokens)")
    kwh = m.gpu_hours * _need(_traced(option, SCOPE_VALUE[m.energy_scope]), "energy estimate") / hours
    if m.quantity == "training_energy_kwh":
        return kwh
    return kwh * _need(option.co2_kg, "CO₂ estimate") / _need(option.energy_kwh, "energy estimate")


_parsed = lru_cache(maxsize=256)(expr.parse)  # a measurement's FLOP formula, checked when its file loaded


def _need(value: float | None, what: str) -> float:
    if value is None:
        raise LookupError(f"the answer has no {what}")
    return value


def _rules(option: Option, kind: str) -> tuple[str, ...]:
    names = VALUES_BEHIND[kind]
    return tuple(dict.fromkeys(s.rule for s in option.trace if any(v["name"] in names for v in s.values)))


def unphysical(kb: KnowledgeBase, m: Measurement, w: ResolvedWorkload) -> str | None:
    """Why the measured value cannot be a run of its workload on its GPU, where it is beyond the simplest physical
    bound by more than core.ranges' slack: one stream decoding faster than the GPUs' memory bandwidth reads the
    weights it needs per token; all streams decoding faster than that times the batch, or than the fastest
    datasheet FLOP/s allow at 2 FLOP per parameter per token; a first token sooner than the prompt's FLOPs take;
    peak memory above the GPU's or below its share of the weights. None where it may be a run."""
    gpu = kb.gpus.get(w.gpus[0]) if len(w.gpus) == 1 else None
    if gpu is None:
        return None  # lint's M001/M002 say what is wrong with the workload
    count, devices = w.gpu_count or 1, gpu.devices
    bandwidth = gpu.memory_bandwidth / devices
    peak = max(f for f in (gpu.bf16_flops, gpu.fp16_flops, gpu.fp8_flops, gpu.fp32_flops, 0.0) if f is not None) / devices
    weight_bytes = kb.dtypes["nf4" if w.task == "qlora" and "nf4" in kb.dtypes else w.precision].bytes
    read = w.active_params * weight_bytes  # the bytes of weights one decode step reads
    value, slack, where = m.canonical, ranges.PHYSICS_SLACK, f"{count} × {gpu.id}"
    if m.quantity == "decode_tokens_per_s" and value > slack * (bound := count * bandwidth / read):
        return (f"{value:g} tokens/s for one stream is more than {slack:g}× the {bound:.4g} tokens/s that {where}'s "
                f"memory bandwidth ({count * bandwidth:.4g} B/s) allows, reading {read:.4g} bytes of weights per token")
    if m.quantity == "decode_tokens_per_s_total":
        bound = min(max(w.batch_size, 1) * count * bandwidth / read, count * peak / (2 * w.active_params))
        if m.unit == "tokens/s/GPU":
            bound /= count
        if value > slack * bound:
            return (f"{value:g} {m.unit} is more than {slack:g}× the {bound:.4g} that {where} can decode (memory "
                    f"bandwidth for {max(w.batch_size, 1)} streams, or 2 FLOP per parameter at {peak:.4g} FLOP/s)")
    if m.quantity == "ttft_s" and peak:
        prompt = w.prompt_len or w.seq_len
        floor = 2 * w.active_params * prompt / (count * peak)
        if value < floor / slack:
            return (f"{value:g} s to the first token is less than 1/{slack:g} of the {floor:.4g} s that {where} take "
                    f"for the {prompt:,}-token prompt's 2 FLOP per parameter per token at {peak:.4g} FLOP/s")
    if m.quantity == "peak_memory_per_gpu":
        memory = max(gpu.memory, gpu.memory_reported or 0.0) / devices
        if value > ranges.MEMORY_SLACK * memory:
            return f"{value:.4g} bytes is more than {gpu.id}'s memory ({memory:.4g} bytes) holds"
        floor = w.params * weight_bytes / count  # the weights, sharded over every GPU at most
        if w.offload != "optimizer+params" and value < floor / slack:
            return (f"{value:.4g} bytes is less than 1/{slack:g} of the {floor:.4g} bytes of weights each of "
                    f"{where} holds at least")
    return None


def check_point(kb: KnowledgeBase, m: Measurement) -> Point:
    """The point's prediction, or why there is none. Never raises for a wrong measurement: every answer derives
    its bands from these points, and an answer must not depend on a measurement it does not use."""
    gpus = m.workload.get("gpus")
    gpu = ",".join(map(str, gpus)) if isinstance(gpus, list) else ""
    measured = m.canonical
    framework = str(m.workload.get("framework", ""))
    if (wrong := m.implausible()) is not None:
        return Point(m.id, m.quantity, measured, None, None, m.source, gpu, reason=f"{wrong[0]}: {wrong[1]}",
                     framework=framework, invalid=True)
    try:
        answer = kb.ask(workload_of(m, kb), bands=False)  # the bands are made of these points
    except WorkloadError as err:  # lint reports it too (M001)
        return Point(m.id, m.quantity, measured, None, None, m.source, gpu, reason=f"workload: {err}",
                     framework=framework, invalid=True)
    except ASK_ERRORS as err:
        return Point(m.id, m.quantity, measured, None, None, m.source, gpu, reason=str(err), framework=framework)
    if (impossible := unphysical(kb, m, answer.workload)) is not None:  # lint reports it too (M004)
        return Point(m.id, m.quantity, measured, None, None, m.source, gpu, reason=f"value: {impossible}",
                     framework=framework, invalid=True)
    try:
        predicted, option = predict(m, answer, kb)
    except (LookupError, ArithmeticError, expr.ExpressionError) as err:
        return Point(m.id, m.quantity, measured, None, None, m.source, gpu, reason=str(err), framework=framework)
    ratio = predicted / measured
    if not (math.isfinite(ratio) and ratio > 0):  # in-range values make a finite ratio; a zero prediction does not
        return Point(m.id, m.quantity, measured, predicted, None, m.source, gpu, reason=f"predicted {predicted:g}",
                     framework=framework)
    kind = KIND_OF[m.quantity]
    group = {"training": "training", "decode": "inference"}.get(kind, "")
    return Point(m.id, m.quantity, measured, predicted, ratio, m.source, gpu, _rules(option, kind),
                 framework=framework, regime=bands.regime(group, option.strategy.nodes, answer.workload.batch_size))


def validate(kb: KnowledgeBase) -> Validation:
    points = [check_point(kb, m) for _, m in sorted(kb.measurements.items()) if m.status != "deprecated"]
    quantities = sorted({p.quantity for p in points})
    thresholds = {name: kb.policy(pid) for name, pid in THRESHOLD_POLICIES.items() if pid in kb.policies}
    performance = [p for p in points if p.quantity not in FOOTPRINTS]
    frameworks = sorted({p.framework for p in performance})
    derived = _bands(kb, points) if bands.COVERAGE_POLICY in kb.policies else None
    if derived is not None:
        kb.derived.setdefault("bands", derived)  # the same points: answers asked later need not run them again
    return Validation(points, Summary.of(performance),
                      {q: Summary.of([p for p in points if p.quantity == q]) for q in quantities}, thresholds,
                      {f: Summary.of([p for p in performance if p.framework == f]) for f in frameworks}, derived,
                      Summary.of([p for p in points if p.quantity in FOOTPRINTS]))


def _bands(kb: KnowledgeBase, points: list[Point]) -> bands.Bands:
    return bands.compute(points, kb.policy(bands.COVERAGE_POLICY), int(kb.policy(bands.MIN_POINTS_POLICY)))


_BANDS_LOCK = threading.Lock()


def bands_of(kb: KnowledgeBase) -> bands.Bands:
    """The knowledge base's error bands, derived from its validation points on first use and kept with it
    (kb.derived, pickled with the packaged copy): an ask then only looks them up. Validation's own asks
    carry none, so deriving them never asks for them."""
    found = kb.derived.get("bands")
    if found is None:
        with _BANDS_LOCK:
            found = kb.derived.get("bands")
            if found is None:
                points = [check_point(kb, m) for _, m in sorted(kb.measurements.items()) if m.status != "deprecated"]
                found = kb.derived["bands"] = _bands(kb, points)
    return found


@dataclass(frozen=True, eq=False)
class BandsOf:
    """A knowledge base's error bands, derived when first called (bands_of): what an answer's options keep to
    make their bands when read. Equal for the same knowledge base, so answers from it compare equal."""

    kb: KnowledgeBase

    def __call__(self) -> bands.Bands:
        return bands_of(self.kb)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BandsOf) and other.kb is self.kb

    def __hash__(self) -> int:
        return id(self.kb)


def compare(base: Validation, head: Validation, limit: int = 10) -> list[tuple[str, float | None, float | None]]:
    """Points whose error changed most between two validations: (id, base ratio, head ratio)."""
    old = {p.id: p for p in base.points}
    moved = []
    for p in head.points:
        before = old.get(p.id)
        change = p.log_error - (before.log_error if before else 0.0)
        if before is None or before.ratio != p.ratio:
            moved.append((change, p.id, before.ratio if before else None, p.ratio))
    moved.sort(key=lambda t: -t[0] if math.isfinite(t[0]) else -math.inf)
    return [(pid, b, h) for _, pid, b, h in moved[:limit]]


@dataclass
class Regression:
    """This checkout's accuracy against a base revision's, on the same published points."""

    rev: str
    base_median: float
    head_median: float
    allowed_step: float
    moved: list[tuple[str, float | None, float | None]]

    @property
    def failed(self) -> bool:
        return self.head_median > self.base_median + self.allowed_step

    def to_json(self) -> dict[str, Any]:
        return {"rev": self.rev, "median_error": _finite(self.base_median), "allowed_step": self.allowed_step,
                "failed": self.failed,
                "moved": [{"id": pid, "base_ratio": b, "ratio": h} for pid, b, h in self.moved]}


def against_base(kb: KnowledgeBase, head: Validation, rev: str) -> Regression:
    """Validate the KB of git revision `rev` (this checkout's history) and compare medians."""
    from ..knowledge.loader import read_checkout
    from ..knowledge.versions import revision_tree

    with revision_tree(kb.root, rev) as base_root:
        base = validate(read_checkout(base_root)) if base_root is not None else Validation([], Summary.of([]), {})
    step = kb.policy(STEP_POLICY) if STEP_POLICY in kb.policies else 0.0
    return Regression(rev, base.overall.median_error, head.overall.median_error, step, compare(base, head))


def _pct(x: float) -> str:
    return f"{x:.1%}" if math.isfinite(x) else "∞"


def _bias(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def render_bands(b: bands.Bands, floor: float) -> list[str]:
    """The bands as the answers carry them, then their calibration on held-out sources."""
    cal = b.calibration
    lines = [f"error bands: predicted / measured, {cal.coverage:.0%} central interval (split-conformal, widened to hold "
             "1: every band holds its estimate) and bias (median); a regime with too few points uses its field's pooled band",
             "field                  task      regime      points sources     interval   bias"]
    for (field_, task, reg), x in sorted(b.table.items()):
        spread = "too few points"
        if x.banded:
            low, high = x.ratios
            spread = f"{low:.2f}–{high:.2f}"
        bias = f"{x.bias:.2f}" if x.bias is not None else "—"
        lines.append(f"{field_:22s} {task:9s} {reg or 'all':11s} {x.points:6d} {x.sources:7d} {spread:>12s} {bias:>6s}")
    lines.append(f"held-out coverage (leave-one-source-out: no source sets its own band): {cal.inside} of {cal.total} "
                 f"points inside their {cal.coverage:.0%} bands ({cal.share:.1%}; at least {floor:.0%} required)")
    lines += [f"  {f:24s} {i:3d} of {n:3d} ({i / n:.0%})" for f, (i, n) in cal.checked.items()]
    return lines


def _points_text(v: Validation, width: int) -> str:
    """One row per point: a table where the terminal is wide enough for its six columns, else each point as a
    line of its figures and an indented line of the rules behind them."""
    from rich.console import Console
    from rich.table import Table

    def ratio(p: Point) -> str:
        return ("wrong" if p.invalid else "miss") if p.ratio is None else f"{p.ratio:.2f}" + ("" if p.within else " !")

    def why(p: Point) -> str:
        return ", ".join(p.rules) if p.ratio is not None else p.reason

    def predicted(p: Point) -> str:
        return "—" if p.predicted is None else f"{p.predicted:,.4g}"

    title = "Published measurements against gpukb's predictions (canonical units)"
    if width < 150:
        lines = [title, ""]
        for p in v.points:
            lines += [p.id, f"  {p.quantity}: measured {p.measured:,.4g}, predicted {predicted(p)}, ratio {ratio(p)}",
                      f"  rules: {why(p)}" if p.ratio is not None else f"  why not: {why(p)}"]
        return "\n".join(lines) + "\n"
    table = Table(title=title)
    for name, justify in (("point", "left"), ("quantity", "left"), ("measured", "right"), ("predicted", "right"),
                          ("ratio", "right"), ("rules / why not", "left")):
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for p in v.points:
        table.add_row(p.id, p.quantity, f"{p.measured:,.4g}", predicted(p), ratio(p), why(p))
    console = Console(width=width, record=True, file=__import__("io").StringIO())
    console.print(table)
    return console.export_text()


def render_text(v: Validation, regression: Regression | None = None, width: int = 200) -> str:
    """What a person reads, in `width` columns: one row per point, then the summaries and the verdict."""
    # bias: the median predicted / measured of the quantity's points (below 1: gpukb predicts too little)
    lines = [_points_text(v, width), "",
             "quantity                     points   median error      within ±25%     bias"]
    performance = [(q, s) for q, s in v.by_quantity.items() if q not in FOOTPRINTS]
    footprints = [(q, s) for q, s in v.by_quantity.items() if q in FOOTPRINTS]
    for q, s in [*performance, ("all (performance)", v.overall)]:
        within = f"{s.inside} ({s.within_25:.1%})"
        lines.append(f"{q:28s} {s.points:6d}   {_pct(s.median_error):>12s}   {within:>14s}   {_bias(s.bias):>6s}")
    if footprints:
        lines += ["", "footprints (a run's energy and CO₂ from its own GPU-hours point: outside the overall median)"]
        for q, s in [*footprints, ("all footprints", v.footprints)]:
            within = f"{s.inside} ({s.within_25:.1%})"
            lines.append(f"{q:28s} {s.points:6d}   {_pct(s.median_error):>12s}   {within:>14s}   {_bias(s.bias):>6s}")
    if v.by_framework:
        lines += ["", "framework                    points   median error      within ±25%"]
        for f, s in v.by_framework.items():
            within = f"{s.inside} ({s.within_25:.1%})"
            lines.append(f"{f or '(none)':28s} {s.points:6d}   {_pct(s.median_error):>12s}   {within:>14s}")
    t = v.thresholds
    if v.bands is not None:
        lines += ["", *render_bands(v.bands, t.get("band_calibration", 0.0))]
    lines.append(f"thresholds (kb/policies/): median error ≤ {t.get('median_error', math.inf):.0%}, "
                 f"within ±25% ≥ {t.get('within_25', 0):.0%}"
                 + (f", bands' held-out coverage ≥ {t['band_calibration']:.0%}" if "band_calibration" in t else "")
                 + (f"; footprints within ±25% ≥ {t['footprint_within_25']:.0%}" if "footprint_within_25" in t else "")
                 + f": {'passed' if v.passed else 'FAILED'}")
    if v.invalid:
        lines.append(f"{len(v.invalid)} measurement(s) are wrong, left out of the bands, and fail validation "
                     f"(gpukb lint says where): {', '.join(p.id for p in v.invalid)}")
    if regression is not None:
        lines.append(f"against {regression.rev}: median error {_pct(regression.base_median)} → "
                     f"{_pct(regression.head_median)} (allowed step {regression.allowed_step:.1%}): "
                     f"{'FAILED' if regression.failed else 'ok'}")
        lines += [f"  moved: {pid} {'new' if b is None else f'{b:.2f}'} → {'miss' if h is None else f'{h:.2f}'}"
                  for pid, b, h in regression.moved]
    return "\n".join(lines) + "\n"
