"""Fewest GPUs of each type that fit one model replica, and how to split it.

Per-GPU memory is written as expressions (below) over the replica's memory breakdown `m`, the
workload `w` and the layout (dp, tp, pp, zero_stage, checkpointing, offload, ep). Every term is
linear in 1/dp (training) or 1/(tp*pp) (inference), so the fewest GPUs follow in closed form:
per_gpu(n) = A + B/n fits when n >= B / (usable - A). A and B are read off the expressions
themselves (evaluated at n = 1 and n = 2), so the expressions stay the single source of truth.

Strategies are tried least intrusive first: no tensor parallelism before tensor parallelism
inside one NVLink domain, no recomputation before activation checkpointing, ZeRO stages 0..3;
offload only when nothing else fits within gpu_count, and only as far as the servers' CPU memory holds
the offloaded state (HOST; more data-parallel ranks shard it). Expert parallelism (ep) is the
workload's pin, with data parallelism in whole groups of ep.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from operator import itemgetter
from typing import Any, NamedTuple

from ..answer.workload import ResolvedWorkload
from ..core.words import offload
from ..engine.trace import Collector, Value
from ..knowledge.citations import cited
from ..language import expr as ex
from .systems import rental

# Expert parallelism (GShard, Lepikhin et al. 2020; DeepSpeed-MoE, Rajbhandari et al. 2022) gives each of
# ep data-parallel GPUs 1/ep of the routed experts: the experts' share of a part, w.expert_params * w.experts
# / w.params of the parameters, is divided by ep where ZeRO does not already shard the part over dp.
_UNSHARDED = "(1 - w.expert_params * w.experts / w.params * (1 - 1 / ep))"
# A pipeline stage holds its layers' share of the replica; where pp does not divide the layers the fullest holds
# ceil(layers / pp) of them (planner.stage_imbalance), and that GPU is the one that must fit.
_FULLEST = "(ceil(w.layers / pp) * pp / w.layers if pp > 1 else 1)"
PARTS: dict[str, ex.Expr] = {name: ex.parse(text) for name, text in {
    # ZeRO (Rajbhandari et al. 2020): stage 1 shards optimizer states, 2 also gradients, 3 also weights.
    # Tensor/pipeline parallelism split weights over tp*pp GPUs (Narayanan et al. 2021).
    # Parameter offload (ZeRO-Infinity) keeps about two layers' weights resident for prefetching; ZeRO-3 / FSDP
    # hold the gathered layer and the prefetched next beside the shards (policy zero3-gathered-layers), or as
    # many as the framework lets stay gathered (kb/frameworks zero3_live_params), offloaded or not.
    "weights": "m.weights / w.layers * max(2, w.gathered_layers) / tp if offload == 'optimizer+params' "
               f"else m.weights * (1 if zero_stage >= 3 or ep == 1 else {_UNSHARDED}) "
               f"/ (tp * pp) * {_FULLEST} / (dp * cp if zero_stage >= 3 else 1)"
               " + (w.gathered_layers * m.weights / w.layers / tp if zero_stage >= 3 else 0)",
    # ZeRO-Offload (Ren et al. 2021) streams gradients to CPU memory as the backward pass makes them:
    # about two layers' worth (the buckets in flight) stay on the GPU
    "gradients": "m.gradients / w.layers * 2 / tp if offload != 'none' "
                 f"else m.gradients * (1 if zero_stage >= 2 or ep == 1 else {_UNSHARDED}) "
                 f"/ (tp * pp) * {_FULLEST} / (dp * cp if zero_stage >= 2 else 1)",
    "optimizer": "0 if offload != 'none' "
                 f"else m.optimizer * (1 if zero_stage >= 1 or ep == 1 else {_UNSHARDED}) "
                 f"/ (tp * pp) * {_FULLEST} / (dp * cp if zero_stage >= 1 else 1)",
    # Korthikanti et al. 2022: tensor + sequence parallelism divide activations by tp; with 1F1B
    # pipelining the first stage still holds pp micro-batches of L/pp layers, i.e. all L layers, and with
    # the interleaved schedule (v chunks per rank) 1 + (pp-1)/(pp·v) times that (§4.2.3). Context
    # parallelism gives each of cp GPUs 1/cp of every sequence's tokens (Megatron-Core; Llama 3 §3.3.2). An uneven
    # split's fullest stage holds ceil(L/pp) layers of each of its micro-batches (_FULLEST).
    "activations": "(m.activations_checkpointed if checkpointing else m.activations) / (tp * cp)"
                   " * (1 + (pp - 1) / (pp * w.virtual_pipeline_stages) if w.virtual_pipeline_stages > 1 else 1)"
                   f" * {_FULLEST}",
    "kv_cache": "m.kv_cache / (tp * pp)",
    # ZeRO-1/2 reduce and gather through fixed-size buckets (kb/frameworks comm_buffer_bytes; DeepSpeed's),
    # allocated whenever the stage is on, one GPU or many: a term independent of dp keeps A + B/dp exact
    "overhead": "m.overhead + (w.comm_buffer_bytes if 1 <= zero_stage <= 2 else 0)",
}.items()}
PER_GPU = ex.parse("weights + gradients + optimizer + activations + kv_cache + overhead")
# What offload moves to CPU memory, per GPU: ZeRO-Offload (Ren et al. 2021) keeps the fp32 master weights,
# optimizer states and the streamed gradients there, ZeRO-Infinity also the 16-bit weights; with ZeRO each
# data-parallel rank holds its shard. A server has only so much of it (policy host-memory-per-gpu).
HOST = ex.parse("(m.optimizer + m.gradients + (m.weights if offload == 'optimizer+params' else 0)) / (tp * pp) "
                "/ (dp * cp if zero_stage >= 1 else 1) if offload != 'none' else 0")
# The runtime overhead (CUDA context, workspaces, NCCL buffers; counted in every plan's memory) lives
# inside the reserve, as in vLLM's gpu_memory_utilization: the headroom is the larger of the two, not
# their sum. So usable = capacity − reserve + the part of the overhead the reserve already holds.
USABLE = ex.parse("g.memory_bytes * (1 - p.reserve_fraction) + min(p.runtime_overhead, g.memory_bytes * p.reserve_fraction)")
# The card's edge: the reported memory less what the caching allocator still needs once it has released its cache
# (policy edge-reserve-fraction). A plan the reserve refuses but this holds runs, at the edge, and is said to.
EDGE = ex.parse("g.memory_bytes * (1 - p.edge_reserve_fraction)")
NODE_SIZE = 8  # GPUs per server in the standard HGX/OAM and workstation builds; larger counts are whole nodes
# Tensor-parallel sizes for inference, smallest first. vLLM's distributed-serving guide: tensor parallel
# within a node, pipeline parallel across nodes (source vllm-distributed-serving-docs). Sizes beyond the
# scale-up domain (NVLink) run over PCIe inside the node; beyond the node only where NVLink spans more.
TP_SIZES = (1, 2, 4, 8, 16, 32, 64, 72)
NO_LIMIT = 1_000_000
SOURCES = ["rajbhandari-2020-zero", "korthikanti-2022-activation-recomputation", "narayanan-2021-megatron",
           "lepikhin-2021-gshard"]
CLAIMS = ["art.capacity.redundancy", "art.capacity.multi-gpu-beyond"]
# the model-parallel order's pipeline depths (pipeline_depths)
DEPTH_SOURCES = ["megatron-core-transformer-config", "meta-llama-3-herd-paper"]


class Layout(NamedTuple):
    """How one replica is laid out over GPUs, bar the data-parallel degree: the planner's own
    strategy, not answer.Strategy (the Answer's description of a chosen plan). A named tuple: the
    planner keys its caches by layouts thousands of times an ask, and a tuple hashes in C."""

    tp: int
    pp: int
    zero_stage: int
    checkpointing: bool
    offload: str
    ep: int = 1  # expert parallelism: a divisor of dp (and of the experts)
    cp: int = 1  # context parallelism: GPUs that share each sequence

    @property
    def group(self) -> int:
        """GPUs per data-parallel rank: one replica's tensor, pipeline and context-parallel shards."""
        return self.tp * self.pp * self.cp

    def env(self, dp: int) -> dict[str, Any]:
        return {"dp": dp, "tp": self.tp, "pp": self.pp, "zero_stage": self.zero_stage,
                "checkpointing": self.checkpointing, "offload": self.offload, "ep": self.ep, "cp": self.cp}


# The layout names each part's expression reads: a part's value depends on the replica (the same
# for a whole ask) and on these alone, so it is computed once per combination of their values.
_SPLIT_NAMES = ("dp", "tp", "pp", "zero_stage", "checkpointing", "offload", "ep", "cp")
_PART_READS = {name: tuple(n for n in _SPLIT_NAMES if n in e.names) for name, e in PARTS.items()}
# (name, expression, the values it reads from a split tuple as a dict key), for parts_of's inner loop
_PART_PLAN = tuple((name, e, itemgetter(*positions) if positions else (lambda split: ()))
                   for name, e in PARTS.items()
                   for positions in [tuple(_SPLIT_NAMES.index(n) for n in _PART_READS[name])])


def _linear(one: float, two: float) -> tuple[float, float]:
    """(A, B) of a quantity A + B/n from its values at n = 1 and n = 2."""
    b = 2 * (one - two)
    return one - b, b


class PlanCache:
    """What the GPU types of one ask share: the replica and the workload are the same for all of them,
    so the per-GPU memory of a layout, A + B/n, and the parts of a chosen split are computed once."""

    def __init__(self) -> None:
        self.splits: dict[tuple[Layout, bool | None], tuple[float, float]] = {}  # None: the CPU-memory split
        self.part_values: dict[str, dict[Any, float]] = {name: {} for name in PARTS}  # part -> its reads -> bytes
        self.totals: dict[tuple[Layout, int], float] = {}  # (layout, dp) -> the sum of its parts
        self._searched_for: object = None  # the workload of the ask whose searches _searched holds
        self._searched: dict[tuple[Any, ...], tuple[Candidate, int]] = {}

    def searches(self, w: object) -> dict[tuple[Any, ...], tuple[Candidate, int]]:
        """The plan searches of one ask, by what a search reads of a GPU type: GPU types alike in memory, host
        memory, node and bounds (an 80 GB card in eight-GPU nodes) share one. Kept for one workload object at a
        time: the searches also read the workload's pins, which asks sharing this replica may not."""
        if self._searched_for is not w:
            self._searched_for, self._searched = w, {}
        return self._searched

    def total(self, layout: Layout, dp: int, base: dict[str, Any]) -> float:
        """The sum of a split's parts: the closest miss compares it over every layout tried, for each GPU type
        that fits none."""
        key = (layout, dp)
        found = self.totals.get(key)
        if found is None:
            found = self.totals[key] = sum(self.parts_of(layout, dp, base).values())
        return found

    def split(self, layout: Layout, base: dict[str, Any], inference: bool) -> tuple[float, float]:
        """(A, B) with per_gpu(n) = A + B/n, n = dp (training) or the tp*pp shard count (inference)."""
        key = (layout, inference)
        if key not in self.splits:
            if inference:
                one = sum(self.parts_of(Layout(1, 1, 0, False, "none"), 1, base).values())
                two = sum(self.parts_of(Layout(2, 1, 0, False, "none"), 1, base).values())
            else:
                one, two = self.total(layout, 1, base), self.total(layout, 2, base)
            self.splits[key] = _linear(one, two)
        return self.splits[key]

    def host_split(self, layout: Layout, base: dict[str, Any]) -> tuple[float, float]:
        """(A, B) with CPU memory per GPU = A + B/dp for an offloading layout (HOST)."""
        key = (layout, None)
        if key not in self.splits:
            one = float(HOST.evaluate({**base, **layout.env(1)}))
            two = float(HOST.evaluate({**base, **layout.env(2)}))
            self.splits[key] = _linear(one, two)
        return self.splits[key]

    def parts_of(self, layout: Layout, dp: int, base: dict[str, Any]) -> dict[str, float]:
        """Per-GPU bytes of each part under this split, as the PARTS expressions give them."""
        split = (dp, *layout)
        env: dict[str, Any] | None = None
        parts = {}
        known = self.part_values
        for name, expression, reads in _PART_PLAN:
            values, key = known[name], reads(split)
            value = values.get(key)
            if value is None:
                env = env or {**base, **dict(zip(_SPLIT_NAMES, split, strict=True))}
                try:  # run, not evaluate: one call less (the menu evaluates these hundreds of times an ask)
                    value = values[key] = float(expression.run(env))
                except (ex.ExpressionError, ArithmeticError, TypeError, ValueError):
                    value = values[key] = float(expression.evaluate(env))  # raises, naming the expression
            parts[name] = value
        return parts


# The replica (m) and workload (w) fields that the planner's expressions read. A PlanCache's figures
# depend on their values and the layouts alone, so asks that give them the same values share one.
_REPLICA_READS = tuple(sorted({name.partition(".")[::2] for e in (*PARTS.values(), HOST) for name in e.names
                               if "." in name}))


def replica_cache(memory: dict[str, Any], wfact: dict[str, Any]) -> PlanCache:
    """The PlanCache of asks with this replica: the per-GPU memory of a layout was an eighth of a warm ask
    on one GPU type, and sweeps, latency targets (which re-run the session) and asks over other GPU types
    repeat a replica. Keyed by the repr of each field read (or its absence), which tells 1 from 1.0 and
    True and 0.0 from -0.0, so a shared figure is the one the expressions would give."""
    base = {"m": memory, "w": wfact}
    return _replica_cache(repr([(tail in base[head], base[head].get(tail)) for head, tail in _REPLICA_READS]))


@lru_cache(maxsize=64)
def _replica_cache(_key: str) -> PlanCache:
    return PlanCache()


def _menu(w: ResolvedWorkload, scale_up_domain: int, offloads: tuple[str, ...], order: str = "sharded",
          stages: int = 0) -> tuple[Layout, ...]:
    """The training strategies for GPUs with this scale-up domain, least intrusive first, in the framework's order
    (kb/frameworks training_layout: 'sharded' or 'model_parallel'); `stages`, in the model-parallel order, the fewest
    pipeline stages a layout may have (0: any). Their (A, B) are computed when a search reaches them
    (PlanCache.split): most searches stop or prune early."""
    # a pinned ZeRO-2 or 3 is a sharded run, whatever the framework
    model_parallel = order == "model_parallel" and (w.zero_stage or 0) <= 1
    return _layouts(w.heads, w.tensor_parallel, w.pipeline_parallel, w.expert_parallel, w.activation_checkpointing,
                    w.zero_stage, scale_up_domain, offloads, w.context_parallel, w.layers if model_parallel else 0,
                    stages if model_parallel else 0)


def pipeline_depths(layers: int) -> range:
    """The pipeline stages a model-parallel layout may have: any count up to the layers, each stage holding at least
    one. Megatron-Core splits the layers evenly unless told the first and last stages' counts
    (num_layers_in_first_pipeline_stage / num_layers_in_last_pipeline_stage, megatron-core-transformer-config), so a
    depth that does not divide them runs unevenly: Llama 3.1 405B's 126 layers trained on 16 stages, one layer fewer
    on the first and the last (meta-llama-3-herd-paper §3.3.2). The fullest stage sets the pace (stage_imbalance)."""
    return range(1, layers + 1)


def stage_imbalance(layers: int, pp: int) -> float:
    """The fullest pipeline stage's layers over the mean, ceil(layers / pp) / (layers / pp): every stage waits for
    it, so a pipeline computes at this multiple of its even share; 1.0 where pp divides the layers."""
    return math.ceil(layers / pp) * pp / layers if layers > 0 and pp > 1 else 1.0


def deeper_depths(layers: int, pp: int, count: int) -> tuple[int, ...]:
    """The pipeline depths above `pp` a model-parallel search tries beyond the smallest group that holds the replica,
    shallowest first: the next `count` that each put fewer layers on the fullest stage (a depth whose fullest stage
    holds as many layers as a shallower one's adds bubble and saves no memory), and the even splits the search tried
    when only divisors were allowed (the first divisor from `pp` up and the `count` after it), so that no even split
    it found is lost to an uneven one it ranks worse."""
    above = range(pp + 1, layers + 1)
    uneven = [d for d in above if math.ceil(layers / d) < math.ceil(layers / (d - 1))][:count]
    even = [d for d in above if layers % d == 0][:count + (layers % pp != 0)]
    return tuple(sorted({*uneven, *even}))


# The same for every ask with these pins, so made once: the 32 named tuples of a menu were 1.3% of an ask.
@lru_cache(maxsize=256)
def _layouts(heads: int, tensor_parallel: int | None, pipeline_parallel: int | None, expert_parallel: int | None,
             activation_checkpointing: bool | None, zero_stage: int | None, scale_up_domain: int,
             offloads: tuple[str, ...], context_parallel: int | None = None, layers: int = 0,
             stages: int = 0) -> tuple[Layout, ...]:
    """`layers` > 0: the model-parallel order (Narayanan et al. 2021, takeaways 1 and 2): tensor parallelism inside
    the node up to its size, then pipeline stages across nodes, the smallest group that holds the replica, with
    the optimizer states sharded over the data-parallel ranks (ZeRO-1, Megatron's distributed optimizer) and
    never ZeRO-2 or 3; every group without full activation recomputation before any with it, which costs a
    forward pass more per step (Korthikanti et al. 2022), more than a deeper pipeline's bubble; any pipeline depth
    up to the layers (pipeline_depths), at least `stages` of them where given (a deeper layout the search
    tries, gpukb.estimate.pipeline). 0: the sharded
    order, ZeRO's stages over data parallelism and tensor parallelism in a node, recomputation before a wider
    tensor-parallel group."""
    max_tp = scale_up_domain if tensor_parallel is None else tensor_parallel
    tps = [tensor_parallel] if tensor_parallel else [t for t in (1, 2, 4, 8) if t <= max_tp and heads % t == 0]
    ckpts = [activation_checkpointing] if activation_checkpointing is not None else [False, True]
    if layers:
        zeros = [zero_stage] if zero_stage is not None else [0, 1]
        pps = [pipeline_parallel] if pipeline_parallel else list(pipeline_depths(layers)[max(stages, 1) - 1:])
        # pipeline stages only once tensor parallelism fills the node (or where the workload pins either)
        groups = [(tp, pp) for pp in pps for tp in tps if pp == 1 or tp == tps[-1] or pipeline_parallel]
    else:
        zeros = [zero_stage] if zero_stage is not None else [0, 1, 2, 3]
        groups = [(tp, pipeline_parallel or 1) for tp in tps]
    # expert parallelism only where the workload pins it: it shards nothing ZeRO-3 does not, so the search
    # for the fewest GPUs never needs it, and it takes a framework with MoE layers (Megatron-Core, DeepSpeed)
    # context parallelism, too, only as a pin: it is how long sequences are trained, not a way to need fewer GPUs
    ep, cp = expert_parallel or 1, context_parallel or 1
    order = ((off, tp, pp, ckpt) for off in offloads for ckpt in ckpts for tp, pp in groups) if layers else \
        ((off, tp, pp, ckpt) for off in offloads for tp, pp in groups for ckpt in ckpts)
    return tuple(Layout(tp, pp, zero, ckpt, off, ep, cp) for off, tp, pp, ckpt in order for zero in zeros
                 if not (off == "optimizer+params" and zero != 3) and not ((ep > 1 or cp > 1) and off != "none"))


def _round_count(n: int, node: int) -> int:
    """Past one node, whole nodes: a plan is laid out on the system's nodes."""
    return n if n <= node else node * math.ceil(n / node)


@dataclass(frozen=True)
class Candidate:
    layout: Layout
    dp: int
    count: int
    fits: bool


LeastDp = Callable[[Layout], int | None]


def _least_dp(split: tuple[float, float], usable: float, host: tuple[float, float] | None, host_usable: float) -> int | None:
    """The fewest data-parallel ranks at which a layout's GPU memory A + B/dp fits, and, for a layout that
    offloads, its CPU memory A' + B'/dp too; None when no number does."""
    a, b = split
    if a >= usable:
        return None
    dp = 1 if b <= 0 else max(1, math.ceil(b / (usable - a)))
    if host is not None:
        ha, hb = host
        if ha >= host_usable and (ha > host_usable or hb > 0):
            return None
        dp = max(dp, 1 if hb <= 0 else math.ceil(hb / (host_usable - ha)))
    return dp


def _fewest_training(menu: tuple[Layout, ...], fewest_dp: LeastDp, limit: int,
                     zero_pinned: bool = False, node: int = NODE_SIZE, dp_max: int = 0) -> Candidate | None:
    """The layout needing the fewest GPUs (the first, least intrusive, among equals); `dp_max` (0: none) the most
    data-parallel ranks the global batch feeds."""
    best: tuple[int, Layout, int] | None = None
    for layout in menu:
        if best is not None and layout.group * layout.ep >= best[0]:
            continue  # it needs at least tp*pp*cp*ep GPUs, so it cannot need fewer than the best so far
        dp = fewest_dp(layout)
        if dp is None:
            continue
        dp = -(-dp // layout.ep) * layout.ep  # a whole number of expert-parallel groups
        group = layout.group
        count = _round_count(dp * group, node)
        dp = count // group
        if dp % layout.ep or (dp_max and dp > dp_max):
            continue
        if layout.zero_stage > 0 and dp == 1 and layout.offload == "none" and not zero_pinned:
            continue  # ZeRO on one data-parallel rank shards nothing; the zero-stage-0 layout covers it
        if count <= limit and (best is None or count < best[0]):
            best = (count, layout, dp)
    return None if best is None else Candidate(best[1], best[2], best[0], True)


def _least_intrusive_at(menu: tuple[Layout, ...], fewest_dp: LeastDp, count: int, dp_max: int = 0) -> Candidate | None:
    """placement 'all': the first (least intrusive) layout that fits on exactly `count` GPUs with no more
    data-parallel ranks than `dp_max` (0: no limit), the most the global batch feeds."""
    for layout in menu:
        group = layout.group
        dp = count // group
        if dp < 1 or dp % layout.ep or (dp_max and dp > dp_max):
            continue
        least = fewest_dp(layout)
        if least is not None and least <= dp:
            return Candidate(layout, dp, dp * group, True)
    return None


def _most_fed(menu: tuple[Layout, ...], fewest_dp: LeastDp, count: int, dp_max: int) -> Candidate | None:
    """`count` GPUs the global batch cannot feed with any layout of the menu: the layout that keeps the most of them
    busy, dp_max ranks (whole expert-parallel groups) of its group (the first, least intrusive, among equals)."""
    best: Candidate | None = None
    for layout in menu:
        group = layout.group
        dp = min(count // group, dp_max) // layout.ep * layout.ep
        if dp < 1 or (best is not None and dp * group <= best.count):
            continue
        least = fewest_dp(layout)
        if least is not None and least <= dp:
            best = Candidate(layout, dp, dp * group, True)
    return best


def _inference_candidate(w: ResolvedWorkload, a: float, b: float, usable: float, limit: int,
                         tp_floor: int = 1, node: int = NODE_SIZE) -> Candidate | None:
    """The fewest shards that hold the replica: tensor parallel inside one node first, then pipeline
    stages; `tp_floor` raises the tensor-parallel size (more GPUs, shorter prefill and decode steps)."""
    if a >= usable:
        return None
    shards = max(1, math.ceil(b / (usable - a)))
    max_tp = max(min(node, w.tensor_parallel or node), tp_floor)
    if w.tensor_parallel:  # a pinned tensor-parallel size is exact
        tp: int | None = w.tensor_parallel
    else:
        need = max(tp_floor, min(shards, max_tp))
        tp = next((t for t in TP_SIZES if t >= need and w.heads % t == 0 and t <= max_tp), None)
    if tp is None:
        return None
    pp = w.pipeline_parallel or max(1, math.ceil(shards / tp))
    count = tp * pp
    return Candidate(Layout(tp, pp, 0, False, "none"), 1, count, True) if count <= limit else None


def next_tensor_parallel(w: ResolvedWorkload, tp: int, widest: int) -> int | None:
    """The next larger tensor-parallel size for inference that divides the attention heads, stays within `widest`
    (the GPU type's node, or its scale-up domain where that spans nodes) and gpu_count; None when there is none
    or the size is pinned."""
    if w.tensor_parallel:
        return None
    most = min(widest, (w.gpu_count or NO_LIMIT) // (w.pipeline_parallel or 1))
    return next((t for t in TP_SIZES if tp < t <= most and w.heads % t == 0), None)


@dataclass(frozen=True)
class Raise:
    """Why an inference plan uses more tensor parallelism than memory needs: the latency targets its
    smaller sizes missed (gpukb.estimate.sla), as sentences in English and Chinese."""

    tp: int
    because: str
    because_zh: str


@dataclass(frozen=True)
class Sized:
    """Why a training plan uses more GPUs than memory needs: a deadline (gpukb.estimate.deadline). `tried` is the
    search's list of (GPUs, seconds to train) for this GPU type, filled as it goes; the sentences read it
    when the trace is read, so they name every count tried before this one."""

    count: int
    deadline_s: float
    tokens: int
    tried: list[tuple[int, float]]
    fed: int = 0  # where the count is the most GPUs the global batch keeps busy (batch_feeds), that number; else 0

    def because(self, zh: bool = False, ran: int = 0) -> str:
        """`ran`: the GPUs the plan runs on, where whole model-parallel groups leave some of `count` over (0: count)."""
        days = f"{self.deadline_s / 86400:g}"
        count = ran or self.count
        first: dict[int, float] = {}  # each count once: a plan of whole model-parallel groups may repeat one
        for n, t in self.tried:
            if n != count:
                first.setdefault(n, t)
        before = first.items()
        if zh:
            shown = "；".join(f"{n} 块 GPU 需 {t / 86400:,.1f} 天" for n, t in before)
            text = (f"为在 {days} 天内训练完 {self.tokens:,} 个 token，定为 {count} 块 GPU"
                    + (f"（{shown}）。" if shown else "。"))
            return text + (f"全局批次最多让 {self.fed} 块 GPU 工作，集群不再扩大。" if self.fed else "")
        shown = "; ".join(f"{n} GPU(s) take {t / 86400:,.1f} days" for n, t in before)
        text = (f"Sized to {count} GPUs to train {self.tokens:,} tokens within {days} days"
                + (f" ({shown})." if shown else "."))
        return text + (f" The global batch keeps at most {self.fed} GPUs busy: the cluster grows no further."
                       if self.fed else "")


@dataclass(frozen=True)
class Laid:
    """The order a training plan's layouts were tried in (_menu). Where the framework lays runs out model-parallel
    (kb/frameworks training_layout) both orders are planned, the model-parallel one at a few pipeline depths, and the
    rules' estimate keeps one (gpukb.estimate.pipeline). `pp`: the fewest pipeline stages the model-parallel order
    may use (0: the smallest group that holds the replica). The nearest alternative the estimate passed over:
    `other_order` (its order; "" where nothing was compared), its tensor and pipeline sizes in the model-parallel order
    (`other_tp`, `other_pp`), and `other_s`, what it took to train on `other_count` GPUs in `other_gpu_hours`
    (a deadline's sizing), or `other_rate`, its tokens/s (a pinned cluster); `depths`, the pipeline depths the
    model-parallel order was planned at."""

    order: str = "sharded"
    pp: int = 0
    other_order: str = ""
    other_s: float = 0.0
    other_rate: float = 0.0
    other_tp: int = 0
    other_pp: int = 0
    depths: tuple[int, ...] = ()
    other_count: int = 0
    other_gpu_hours: float = 0.0

    def because(self, zh: bool = False, pp: int = 0) -> str:
        """The sentence for a plan laid out at pipeline depth `pp`."""
        if not self.other_order:
            return ""
        if self.other_s:  # a deadline's cluster: what the answer ranks by, GPU-hours, beside the time
            other = (f"{self.other_count:,} GPUs for {self.other_s / 86400:,.1f} days, "
                     f"{self.other_gpu_hours:,.0f} GPU-hours")
            other_zh = (f"{self.other_count:,} 块 GPU 需 {self.other_s / 86400:,.1f} 天，"
                        f"共 {self.other_gpu_hours:,.0f} GPU 时")
        else:
            other, other_zh = f"{self.other_rate:,.0f} tokens/s", f"每秒 {self.other_rate:,.0f} 个 token"
        depths = ", ".join(map(str, self.depths))
        depths_zh = "、".join(map(str, self.depths))
        several = len(self.depths) > 1
        if self.order == "model_parallel":
            if zh:
                at = f"，在所试的流水线深度（{depths_zh}）中取 pp={pp}" if several else ""
                alt = (f"次优的 tp={self.other_tp}、pp={self.other_pp}" if self.other_order == "model_parallel"
                       else "按数据并行加 ZeRO 分片的布局")
                return f"按模型并行布局（节点内张量并行、跨节点流水线并行、ZeRO-1）{at}，胜过{alt}（{other_zh}）。"
            at = f" at pp={pp}, the best of the pipeline depths tried ({depths})," if several else ","
            alt = (f"the next best, tp={self.other_tp} and pp={self.other_pp}" if self.other_order == "model_parallel"
                   else "the layout of ZeRO's stages over data parallelism")
            return (" Laid out model-parallel (tensor parallelism in the node, pipeline stages across nodes, ZeRO-1)"
                    f"{at} it beats {alt} ({other}).")
        best = f"tp={self.other_tp}, pp={self.other_pp}"
        if zh:
            best_zh = f"tp={self.other_tp}、pp={self.other_pp}"
            which = f"所试流水线深度 {depths_zh} 中最好的 {best_zh}" if several else best_zh
            return f"按数据并行加 ZeRO 分片布局，胜过模型并行布局（{which}，{other_zh}）。"
        which = f"at best {best} of the pipeline depths {depths} tried" if several else best
        return f" Laid out as ZeRO's stages over data parallelism, it beats the model-parallel layout ({which}: {other})."


SHARDED = Laid()


@dataclass(frozen=True)
class Replicas:
    """Why a serving plan has more data-parallel replicas than memory needs: the request rate (gpukb.estimate.load)
    and the highest rate one replica meets the latency targets at."""

    count: int  # GPUs: replicas x the replica's GPUs
    replicas: int
    rate: float
    per_replica: float

    def because(self, zh: bool = False) -> str:
        if zh:
            return (f"每秒 {self.rate:g} 个请求需要 {self.replicas} 个副本：一个副本在延迟目标内最多承载每秒 "
                    f"{self.per_replica:,.2f} 个。")
        return (f"{self.replicas} replicas for {self.rate:g} requests/s: one replica carries at most "
                f"{self.per_replica:,.2f} requests/s within the latency targets.")


class _Box(NamedTuple):
    """What bounds a plan's GPU count: `box`, the GPUs of one node (a system with no network between nodes)
    or one box of consumer cards, 0 for none; `boxed` when that is tighter than gpu_count; `limit`, the most
    GPUs a plan may use; `every`, the count a plan must use (placement 'all', or a deadline's count), or None;
    `dp_max`, the most data-parallel ranks a training step's global batch feeds (0: no global batch given)."""

    box: int
    boxed: bool
    limit: int
    every: int | None
    dp_max: int = 0


def _box(w: ResolvedWorkload, gpu: dict[str, Any], policy: dict[str, Any], size: Sized | Replicas | None) -> _Box:
    # a plan stays inside one node of a system with no network between nodes (kb/systems network_bandwidth
    # null: workstations, single instances); where no system holds the GPU, consumer cards stay inside one box
    # (policy consumer-nodes: their driver licence excludes data-centre deployment): a tighter limit than
    # gpu_count, or the only one
    if gpu["system"]:
        box = 0 if gpu["scales_out"] else gpu["gpus_per_node"]
    else:
        box = NODE_SIZE * int(policy["consumer_nodes"]) if gpu["consumer"] else 0
    boxed = bool(box) and box < (w.gpu_count or NO_LIMIT)
    limit = box if boxed else (w.gpu_count or NO_LIMIT)
    every = size.count if size is not None else (limit if w.placement == "all" else None)
    if every and isinstance(size, Replicas):
        # replicas for a request rate: never past gpu_count. Replicas share no traffic (a load balancer splits the
        # requests), so on a system they may span nodes that have no network between them: the box bounds each
        # replica's own GPUs (limit), not how many replicas there are. A consumer card no system holds stays in its box
        every = min(every, w.gpu_count or NO_LIMIT, NO_LIMIT if gpu["system"] else limit)
    elif every and boxed:  # a deadline's cluster of consumer cards is still one box
        every = min(every, box)
    return _Box(box, boxed, limit, every, ranks_fed(w))


def ranks_fed(w: ResolvedWorkload) -> int:
    """The most data-parallel ranks a training step's global batch feeds: each rank takes micro_batch_size
    sequences at a time, so global_batch_size / micro_batch_size of them (with expert parallelism, whole groups of
    ep); 0 where no global batch is given, or for inference. A rank beyond it would run a step on sequences the
    batch does not have (bottleneck.interconnect.step's accumulation max(1, gbs / (mbs * dp)) would stop at 1)."""
    if w.task == "inference" or not w.global_batch_size:
        return 0
    ep = w.expert_parallel or 1  # at least one expert-parallel group, which every plan has
    return max(1, w.global_batch_size // w.micro_batch_size // ep) * ep


def batch_feeds(w: ResolvedWorkload, gpu: dict[str, Any], order: str = "sharded") -> int:
    """The most GPUs of this type a training step's global batch keeps busy: ranks_fed data-parallel ranks of the
    widest model-parallel group (tp * pp * cp) the planner's menu (in the framework's `order`) tries; NO_LIMIT
    without a global batch."""
    ranks = ranks_fed(w)
    if not ranks:
        return NO_LIMIT
    return ranks * max(layout.group for layout in _menu(w, gpu["scale_up_domain"], ("none",), order))


def _search(w: ResolvedWorkload, gpu: dict[str, Any], cache: PlanCache, base: dict[str, Any], usable: float,
            bounds: _Box, raised: Raise | None, order: str = "sharded", stages: int = 0) -> tuple[Candidate, int]:
    """The chosen layout and GPU count (the closest miss when none fits), and how many strategies were tried:
    without offload first, then offloading (unless the workload pins it); training layouts in `order`, with at least
    `stages` pipeline stages in the model-parallel one (_menu)."""
    inference = w.task == "inference"
    node = gpu["gpus_per_node"]
    host_usable = gpu["host_memory_per_gpu"]
    limit, every, dp_max = bounds.limit, bounds.every, bounds.dp_max
    offload_sets = [(w.offload,)] if w.offload else [("none",), ("optimizer", "optimizer+params")]
    chosen: Candidate | None = None
    tried: list[Layout] = []
    for offloads in offload_sets:
        if inference:
            layout = Layout(1, 1, 0, False, "none")
            tried.append(layout)
            best = _inference_candidate(w, *cache.split(layout, base, True), usable, limit,
                                         raised.tp if raised else 1, node)
        else:
            menu = _menu(w, gpu["scale_up_domain"], offloads, order, stages)
            tried += menu

            def fewest_dp(layout: Layout) -> int | None:
                host = cache.host_split(layout, base) if layout.offload != "none" else None
                return _least_dp(cache.split(layout, base, False), usable, host, host_usable)

            best = (_least_intrusive_at(menu, fewest_dp, every, dp_max) if every else None) \
                or (_most_fed(menu, fewest_dp, every, dp_max) if every and dp_max else None) \
                or _fewest_training(menu, fewest_dp, limit, zero_pinned=w.zero_stage is not None, node=node,
                                    dp_max=dp_max)
        if best:
            chosen = best
            break
    if chosen is not None and every:
        chosen = _use_all(chosen, every, dp_max)
    if chosen is None:  # the closest miss: the layout with the least memory per GPU at the limit
        # with no gpu_count limit only the unshardable part can fail to fit: show it at one node
        chosen = _closest_miss(w, base, tried, limit if w.gpu_count or bounds.boxed else node, inference, cache, node,
                               dp_max)
    return chosen, len(tried)


class _Pool(NamedTuple):
    """An inference plan's memory once its serving engine's KV-cache pool is applied: the parts (the KV cache
    cut to the sequences the pool holds), bytes per GPU, sequences at once, the pool (0: none applied), fits."""

    parts: dict[str, float]
    per_gpu: float
    concurrency: int
    pool: float
    fits: bool
    share: int  # the requests in flight each data-parallel replica serves
    in_flight: int  # the sequences decoding at once over all replicas


def _pooled(w: ResolvedWorkload, wfact: dict[str, Any], policy: dict[str, Any], gpu: dict[str, Any], chosen: Candidate,
            parts: dict[str, float], per_gpu: float, fits: bool, usable: float, host: float) -> _Pool:
    # a serving engine that pre-allocates its KV cache in the memory left (kb/frameworks kv_cache_memory_fraction,
    # kv_cache_free_memory_fraction) does not fail a batch it cannot hold: it runs the sequences its pool holds and
    # queues the rest. Its pool, not the allocator reserve, bounds it.
    # Data-parallel serving replicas (placement 'all') share the requests in flight: each decodes its share of the
    # batch, ceil(batch / dp), and holds that share's KV cache; a replica beyond the batch stands idle.
    inference = w.task == "inference"
    share = -(-w.batch_size // chosen.dp) if inference else 0
    if inference and share < w.batch_size and parts["kv_cache"] > 0:
        parts = {**parts, "kv_cache": parts["kv_cache"] * share / w.batch_size}
        per_gpu = float(PER_GPU.evaluate(parts))
        fits = chosen.fits and per_gpu <= usable and host <= gpu["host_memory_per_gpu"]
    concurrency, pool = (share, 0.0) if inference else (0, 0.0)
    if inference and not fits and share:
        pool = kv_pool(wfact, per_gpu - parts["kv_cache"], gpu["memory_bytes"], policy["runtime_overhead"])
        held = min(share, int(pool * share // parts["kv_cache"])) if parts["kv_cache"] > 0 else 0
        if held >= 1:
            parts = {**parts, "kv_cache": parts["kv_cache"] * held / share}
            per_gpu, concurrency, fits = float(PER_GPU.evaluate(parts)), held, True
    # the sequences decoding at once over all replicas: never more than the requests in flight
    in_flight = min(w.batch_size, chosen.dp * concurrency) if inference else 0
    return _Pool(parts, per_gpu, concurrency, pool, fits, share, in_flight)


class _Fed(NamedTuple):
    """What a training step's global batch did to a plan: `ranks`, the most data-parallel ranks it feeds (ranks_fed;
    0: no global batch); `uncapped`, the plan the search makes without that limit where it has more ranks (None where
    the limit changed nothing); `idle`, the GPUs of placement 'all' (gpu_count) or of a deadline's count that the
    batch leaves without work even at the widest model-parallel group the planner tries."""

    ranks: int = 0
    uncapped: Candidate | None = None
    idle: int = 0


_NOT_FED = _Fed()


def _ungrouped(w: ResolvedWorkload, chosen: Candidate, bounds: _Box, fed: _Fed) -> int:
    """The GPUs of a training plan's gpu_count (placement 'all') that whole data-parallel ranks of its tp x pp group
    leave over (Megatron runs world sizes that tp x pp divides): the group the rules find fastest need not divide
    the user's count."""
    if w.task == "inference" or w.placement != "all" or not chosen.fits or bounds.every != bounds.limit:
        return 0
    return max(0, bounds.every - chosen.count - fed.idle)


def _plan_fields(collector: Collector, w: ResolvedWorkload, gpu: dict[str, Any], chosen: Candidate, bounds: _Box,
                 memory: _Pool, usable: float, host: float, fed: _Fed) -> dict[str, Any]:
    """The plan fact's fields. The GPUs placement 'all' gives that the global batch cannot feed, or that whole
    model-parallel groups leave over (_ungrouped), are rented beside the plan's and stand idle (idle_gpus)."""
    rented = chosen.count + (fed.idle if w.placement == "all" else 0) + _ungrouped(w, chosen, bounds, fed)
    s, node, per_gpu, fits = chosen.layout, gpu["gpus_per_node"], memory.per_gpu, memory.fits
    return {
        "gpu": gpu["gpu"], "count": chosen.count, "dp": chosen.dp, "tp": s.tp, "pp": s.pp, "ep": s.ep, "cp": s.cp,
        "zero_stage": s.zero_stage if chosen.dp > 1 or s.offload != "none" or w.zero_stage is not None else 0,
        "checkpointing": s.checkpointing,
        "offload": s.offload, **memory.parts, "per_gpu_bytes": per_gpu, "usable_bytes": usable,
        "capacity_bytes": gpu["memory_bytes"], "fits": fits, "fill": per_gpu / gpu["memory_bytes"],
        "nodes": math.ceil(chosen.count / node), "tp_over_pcie": s.tp > 1 and gpu["scale_up_domain"] < s.tp,
        "limit": bounds.limit if w.gpu_count or bounds.boxed else 0, "host_bytes": host,
        "box_limit": bounds.box if bounds.boxed else 0, "devices": gpu["devices"], "concurrency": memory.concurrency,
        "in_flight": memory.in_flight,
        # what a plan that does not fit is short of: GPU memory, or CPU memory for its offloaded state
        "short_of": "" if fits else ("host" if per_gpu <= usable and host > gpu["host_memory_per_gpu"] else "gpu"),
        "gpus_per_node": node, "host_memory_per_gpu": gpu["host_memory_per_gpu"],
        **_rented(collector.kb, gpu, chosen.count, host, w.systems, rented,
                  s.group if w.task == "inference" and chosen.dp > 1 else 0),
    }


@dataclass(frozen=True)
class _PlanText:
    """A plan step's values and sentences, written when the trace is read (trace._Deferred)."""

    w: ResolvedWorkload
    gpu: dict[str, Any]
    policy: dict[str, Any]
    chosen: Candidate
    zero: int
    bounds: _Box
    memory: _Pool
    usable: float
    host: float
    strategies: int
    raised: Raise | None
    size: Sized | Replicas | None
    edge: float = 0.0  # the card's edge where the plan needs more than usable to fit there (EDGE); 0 otherwise
    fed: _Fed = _NOT_FED
    laid: Laid = SHARDED

    def batch(self, zh: bool = False) -> str:
        """What the global batch did to the plan: the data parallelism it capped and the layout it took instead,
        the GPUs it leaves idle; nothing where it changed nothing."""
        w, fed, chosen = self.w, self.fed, self.chosen
        free = fed.uncapped
        if free is None:
            return ""
        s, u = chosen.layout, free.layout
        gbs, mbs = w.global_batch_size or 0, w.micro_batch_size
        asked = self.bounds.every or free.count
        placed = "gpu_count" if w.placement == "all" and not isinstance(self.size, Sized) else "deadline"
        if zh:
            text = (f"全局批次 {gbs:,} 条序列、微批次 {mbs} 最多供给 {fed.ranks:,} 个数据并行进程，dp 以此为上限："
                    f"不受此限时方案为 dp={free.dp}、tp={u.tp}、pp={u.pp}，共 {free.count} 块 GPU")
            if chosen.fits and (s.tp, s.pp, s.cp) != (u.tp, u.pp, u.cp):
                text += f"；改用每个副本 {s.group} 块 GPU 的模型并行（tp={s.tp}、pp={s.pp}）"
            if fed.idle:
                who = "gpu_count 给出的" if placed == "gpu_count" else "期限要求的"
                text += (f"；即使用所试最宽的模型并行组，批次也只能让{who} {asked} 块 GPU 中的 {chosen.count} 块工作，"
                         f"{fed.idle} 块空闲" + ("（仍计入租用）" if placed == "gpu_count" else ""))
            return text + "。"
        text = (f" The global batch of {gbs:,} sequences at micro-batch {mbs} feeds at most {fed.ranks:,} data-parallel "
                f"ranks, so dp is capped there: without that cap the plan would be dp={free.dp}, tp={u.tp}, pp={u.pp} "
                f"on {free.count} GPUs")
        if chosen.fits and (s.tp, s.pp, s.cp) != (u.tp, u.pp, u.cp):
            text += f"; each replica takes a larger model-parallel group instead, {s.group} GPUs (tp={s.tp}, pp={s.pp})"
        if fed.idle:
            who = "gpu_count gives" if placed == "gpu_count" else "the deadline asked for"
            text += (f"; even at the widest model-parallel group tried the batch keeps {chosen.count} of the {asked} GPUs "
                     f"{who} busy, and {fed.idle} stand idle" + (" (still rented)" if placed == "gpu_count" else ""))
        return text + "."

    def values(self) -> list[Value]:
        s, host_usable = self.chosen.layout, self.gpu["host_memory_per_gpu"]
        listed = [Value(name="usable_bytes", value=self.usable, expr=USABLE.text)]
        if self.edge:
            listed.append(Value(name="edge_bytes", value=self.edge, expr=EDGE.text))
        listed += [Value(name=n, value=v, expr=PARTS[n].text) for n, v in self.memory.parts.items()]
        listed.append(Value(name="per_gpu_bytes", value=self.memory.per_gpu, expr=PER_GPU.text))
        if s.offload != "none":
            listed.append(Value(name="host_bytes", value=self.host, expr=HOST.text))
            listed.append(Value(name="host_usable", value=host_usable, expr="g.host_memory_per_gpu"))
        if self.fed.uncapped is not None:  # the most data-parallel ranks the global batch feeds, where it capped dp
            listed.append(Value(name="dp_max", value=self.fed.ranks, expr="w.global_batch_size / w.micro_batch_size"))
        return listed + [Value(name=k, value=v, expr=None) for k, v in s.env(self.chosen.dp).items()]

    def offloaded(self, zh: bool = False) -> str:
        if self.chosen.layout.offload == "none":
            return ""
        host_usable = self.gpu["host_memory_per_gpu"]
        if zh:
            return f"；卸载到 CPU 内存的状态每块 GPU {self.host / 1e9:,.1f} GB，服务器每块 GPU 配有 {host_usable / 1e9:,.0f} GB"
        return (f"; the offloaded state takes {self.host / 1e9:,.1f} GB of CPU memory per GPU, of the "
                f"{host_usable / 1e9:,.0f} GB a server has per GPU")

    def sentence(self) -> str:
        w, gpu, s, memory, bounds = self.w, self.gpu, self.chosen.layout, self.memory, self.bounds
        inference, fits, per_gpu, usable = w.task == "inference", memory.fits, memory.per_gpu, self.usable
        verdict = "fits" if fits else "does not fit"
        if self.edge:
            verdict = (f"fits at the card's edge, within the {self.edge / 1e9:,.1f} GB the caching allocator reaches "
                       f"once it releases its cache (the reported memory less {self.policy['edge_reserve_fraction']:.1%}, "
                       "policy edge-reserve-fraction)")
        text = (f"{gpu['gpu']}: {self.chosen.count} GPU(s) (dp={self.chosen.dp}, tp={s.tp}, pp={s.pp}, "
                f"{f'ep={s.ep}, ' if s.ep > 1 else ''}"
                f"{f'cp={s.cp}, ' if s.cp > 1 else ''}"
                f"ZeRO-{self.zero}, checkpointing {'on' if s.checkpointing else 'off'}, offload {s.offload}) "
                f"need {per_gpu / 1e9:,.1f} GB per GPU against {usable / 1e9:,.1f} GB usable "
                f"({gpu['memory_bytes'] / 1e9:,.1f} GB less the {self.policy['reserve_fraction']:.0%} reserve, which holds "
                f"the runtime overhead){self.offloaded()}: {verdict}.")
        dp, share, in_flight = self.chosen.dp, memory.share, memory.in_flight
        if inference and dp > 1:
            text += (f" The {dp} replicas share the {w.batch_size} sequence(s) in flight: {share} per replica, each "
                     f"holding its share's KV cache" + (f"; {dp - in_flight} replica(s) stand idle." if dp > in_flight
                                                        else "."))
        if memory.pool:
            text += (f" {w.framework} pre-allocates its KV cache in what is left ({memory.pool / 1e9:,.1f} GB per GPU): "
                     f"it holds {memory.concurrency} of the {share} sequences at once and queues the rest.")
        if not fits:
            text += (f" This is the closest of {self.strategies} strategies within "
                     f"{_within(bounds.limit, bounds.boxed, gpu)}."
                     if w.gpu_count or bounds.boxed else
                     " Memory that no sharding divides (activations of one micro-batch, runtime overhead) alone exceeds it.")
        elif bounds.boxed:
            text += f" At most {bounds.box} GPUs: {_box_words(gpu)}."
        if gpu["devices"] > 1:
            text += (f" {gpu['name']} is {gpu['devices']} devices to the framework, planned as such: GPU counts are "
                     f"devices of {gpu['memory_bytes'] / 1e9:,.1f} GB, {gpu['devices']} per package.")
        if self.raised is not None and inference:
            text += f" {self.raised.because}"
        text += self.batch()
        if left := _ungrouped(w, self.chosen, bounds, self.fed):
            text += (f" Whole groups of {s.group} GPUs (tp x pp) use {self.chosen.count} of the {bounds.every} GPUs of "
                     f"gpu_count; {left} stand idle (still rented).")
        if self.size is not None:
            text += f" {self.size.because(ran=self.chosen.count) if isinstance(self.size, Sized) else self.size.because()}"
        return text + self.laid.because(pp=s.pp)

    def sentence_zh(self) -> str:
        w, gpu, s, memory, bounds = self.w, self.gpu, self.chosen.layout, self.memory, self.bounds
        inference, fits = w.task == "inference", memory.fits
        text = (f"{gpu['gpu']}：{self.chosen.count} 块 GPU（dp={self.chosen.dp}、tp={s.tp}、pp={s.pp}、"
                f"{f'ep={s.ep}、' if s.ep > 1 else ''}"
                f"{f'cp={s.cp}、' if s.cp > 1 else ''}"
                f"ZeRO-{self.zero}、激活重计算{'开' if s.checkpointing else '关'}、{offload('zh', s.offload)}），"
                f"每块 GPU 需要 {memory.per_gpu / 1e9:,.1f} GB，可用 {self.usable / 1e9:,.1f} GB"
                f"（{gpu['memory_bytes'] / 1e9:,.1f} GB 减去 {self.policy['reserve_fraction']:.0%} 的预留，"
                f"运行时开销计入预留之内）{self.offloaded(zh=True)}："
                + (f"超出预留后的可用量，但在显存边缘放得下：缓存分配器释放缓存后可用到 {self.edge / 1e9:,.1f} GB"
                   f"（报告显存减去 {self.policy['edge_reserve_fraction']:.1%}，策略 edge-reserve-fraction）。" if self.edge
                   else f"{'放得下' if fits else '放不下'}。"))
        dp, share, in_flight = self.chosen.dp, memory.share, memory.in_flight
        if inference and dp > 1:
            text += (f"{dp} 个副本分担在途的 {w.batch_size} 条序列：每个副本 {share} 条，各自只存放其份额的 KV 缓存"
                     + (f"；{dp - in_flight} 个副本空闲。" if dp > in_flight else "。"))
        if memory.pool:
            text += (f"{w.framework} 在剩余显存中预先分配 KV 缓存（每块 GPU {memory.pool / 1e9:,.1f} GB）："
                     f"{share} 条序列中同时容纳 {memory.concurrency} 条，其余排队等待。")
        if self.raised is not None and inference:
            text += self.raised.because_zh
        text += self.batch(zh=True)
        if left := _ungrouped(w, self.chosen, bounds, self.fed):
            text += (f"按每组 {s.group} 块 GPU（tp×pp）整组部署，gpu_count 的 {bounds.every} 块 GPU 中用到 "
                     f"{self.chosen.count} 块，{left} 块空闲（仍计入租用）。")
        if self.size is not None:
            text += self.size.because(zh=True, ran=self.chosen.count) if isinstance(self.size, Sized) \
                else self.size.because(zh=True)
        text += self.laid.because(zh=True, pp=s.pp)
        if not fits:
            text += (f"这是{_within(bounds.limit, bounds.boxed, gpu, zh=True)}以内 {self.strategies} 种策略中最接近的一种。"
                     if w.gpu_count or bounds.boxed else
                     "任何切分都分不掉的显存（一个微批次的激活值、运行时开销）本身就已超出。")
        elif bounds.boxed:
            text += f"最多 {bounds.box} 块 GPU：{_box_words(gpu, zh=True)}。"
        if gpu["devices"] > 1:
            text += (f"{gpu['name']} 对框架而言是 {gpu['devices']} 个设备，按设备规划：GPU 数指每个 "
                     f"{gpu['memory_bytes'] / 1e9:,.1f} GB 的设备，每个封装 {gpu['devices']} 个。")
        return text


def plan_gpu(collector: Collector, w: ResolvedWorkload, wfact: dict[str, Any], policy: dict[str, Any],
             memory: dict[str, Any], gpu: dict[str, Any], cache: PlanCache, raised: Raise | None = None,
             size: Sized | Replicas | None = None, laid: Laid = SHARDED) -> dict[str, Any]:
    """Choose the plan for one GPU type, record it as a trace step, and return the plan fact.

    `cache` is shared by the GPU types of one ask (same workload and replica); `raised` sets the
    smallest tensor-parallel size for an inference plan that latency targets require; `size` (training)
    the GPUs a deadline needs (gpukb.estimate.deadline): the least intrusive layout on that many, as placement 'all';
    `laid` the order its training layouts are tried in (Laid, _menu).
    In parts: what bounds the count (_box), the search (_search), the memory of the choice with a serving
    engine's KV-cache pool (_pooled), the fields (_plan_fields) and the values and sentences (_PlanText).
    """
    bounds = _box(w, gpu, policy, size)
    base = {"m": memory, "w": wfact}
    usable = float(USABLE.evaluate({"g": gpu, "p": policy}))
    edge = float(EDGE.evaluate({"g": gpu, "p": policy}))
    order = (laid.order, laid.pp)  # only training searches read it (_menu)
    chosen, strategies = _searched(w, gpu, cache, base, usable, bounds, raised, order)
    at_edge = False
    if w.task != "inference" and not chosen.fits and edge > usable \
            and not _short_of_host(chosen, cache, base, usable, gpu):
        # refused within the reserve: a plan that fits at the card's edge is that plan, said to be at the edge
        nearer, more = _searched(w, gpu, cache, base, edge, bounds, raised, order)
        if nearer.fits:
            chosen, strategies, at_edge = nearer, strategies + more, True
    limit = edge if at_edge else usable
    fed = _fed(w, gpu, cache, base, limit, bounds, raised, chosen, order)
    parts = cache.parts_of(chosen.layout, chosen.dp, base)
    per_gpu = float(PER_GPU.evaluate(parts))
    host = float(HOST.evaluate({**base, **chosen.layout.env(chosen.dp)}))
    fits = chosen.fits and per_gpu <= limit and host <= gpu["host_memory_per_gpu"]
    pooled = _pooled(w, wfact, policy, gpu, chosen, parts, per_gpu, fits, limit, host)
    at_edge = at_edge and pooled.fits and pooled.per_gpu > usable
    # at the edge, what the plan may use is the edge: usable_bytes stays the bound the plan was held to
    fields = {**_plan_fields(collector, w, gpu, chosen, bounds, pooled, edge if at_edge else usable, host, fed),
              "edge_bytes": edge, "at_edge": at_edge}
    text = _PlanText(w, gpu, policy, chosen, fields["zero_stage"], bounds, pooled, usable, host, strategies, raised, size,
                     edge if at_edge else 0.0, fed, laid)
    (plan,) = collector.record(
        rule="planner.fewest-gpus@1", stage="requirements",
        title="Fewest GPUs that hold one replica, least intrusive strategy first",
        inputs={"m": memory, "g": gpu, "w": wfact, "p": policy}, values=text.values, claims=cited(collector.kb, CLAIMS),
        sources=[*SOURCES, *(BOX_SOURCES if bounds.boxed and gpu["consumer"] else ()),
                 *(DEPTH_SOURCES if laid.order == "model_parallel" and w.task != "inference" else ())],
        sentence=text.sentence,
        outputs=[("plan", fields)], title_zh="能放下一个副本的最少 GPU 数，先试侵入性最小的策略",
        sentence_zh=text.sentence_zh)
    return plan


def _searched(w: ResolvedWorkload, gpu: dict[str, Any], cache: PlanCache, base: dict[str, Any], usable: float,
              bounds: _Box, raised: Raise | None, order: tuple[str, int] = ("sharded", 0)) -> tuple[Candidate, int]:
    """_search, once per ask for each set of the values it reads of a GPU type; `order`, the layout order and the
    fewest pipeline stages (Laid.order, Laid.pp)."""
    key = (gpu["gpus_per_node"], gpu["host_memory_per_gpu"], gpu["scale_up_domain"], usable, bounds,
           raised.tp if raised else None, order)
    searches = cache.searches(w)
    found = searches.get(key)
    if found is None:
        found = searches[key] = _search(w, gpu, cache, base, usable, bounds, raised, *order)
    return found


def _fed(w: ResolvedWorkload, gpu: dict[str, Any], cache: PlanCache, base: dict[str, Any], usable: float,
         bounds: _Box, raised: Raise | None, chosen: Candidate, order: tuple[str, int] = ("sharded", 0)) -> _Fed:
    """The global batch's limit on data parallelism, and what it changed: the same search without it says."""
    if not bounds.dp_max:
        return _NOT_FED
    free, _ = _searched(w, gpu, cache, base, usable, bounds._replace(dp_max=0), raised, order)
    if not free.fits or free.dp <= bounds.dp_max:
        return _Fed(bounds.dp_max)
    return _Fed(bounds.dp_max, free, max(0, free.count - chosen.count) if bounds.every and chosen.fits else 0)


def _short_of_host(chosen: Candidate, cache: PlanCache, base: dict[str, Any], usable: float,
                   gpu: dict[str, Any]) -> bool:
    """Whether a plan that does not fit holds the GPU memory and lacks only the CPU memory its offload needs."""
    per_gpu = float(PER_GPU.evaluate(cache.parts_of(chosen.layout, chosen.dp, base)))
    return per_gpu <= usable and float(HOST.evaluate({**base, **chosen.layout.env(chosen.dp)})) > gpu["host_memory_per_gpu"]


def _rented(kb: Any, gpu: dict[str, Any], count: int, host_per_gpu: float, allowed: tuple[str, ...],
            wanted: int | None = None, replica: int = 0) -> dict[str, Any]:
    """The plan fields of the nodes it rents (gpukb.estimate.systems) for `wanted` GPUs (the plan's `count`, or more
    where the plan leaves some of the user's idle); `replica`, the GPUs of one serving replica where the plan is
    several (they may rent separate instances). A GPU no system holds rents its GPUs one by one at the lowest
    dated per-GPU price of its catalog entry, as the instance it was quoted for."""
    wanted = max(count, wanted or count)
    if not gpu["system"]:
        return {"system": "", "system_name": gpu["price_instance"], "gpus_rented": wanted, "nodes_rented": wanted,
                "idle_gpus": wanted - count, "usd_per_node_hour": gpu["usd_per_gpu_hour"],
                "price_source": gpu["price_source"], "price_as_of": gpu["price_as_of"], "price_region": ""}
    rent = rental(kb, kb.systems[gpu["system"]], math.ceil(wanted / gpu["devices"]), host_per_gpu * gpu["devices"],
                  allowed, math.ceil(replica / gpu["devices"]) if wanted == count else 0)
    price = rent.system.price
    rented = rent.gpus * gpu["devices"]
    return {"system": rent.system.id, "system_name": rent.system.name, "gpus_rented": rented, "nodes_rented": rent.nodes,
            "idle_gpus": rented - count, "usd_per_node_hour": price.usd_per_node_hour if price else 0.0,
            "price_source": price.source if price else "", "price_as_of": price.as_of.isoformat() if price else "",
            "price_region": price.region if price else ""}


def kv_pool(wfact: dict[str, Any], rest: float, capacity: float, overhead: float) -> float:
    """Bytes per GPU a serving engine gives its KV cache: vLLM's gpu_memory_utilization bounds all it holds
    (the pool is that share of the card less everything else), TensorRT-LLM's free_gpu_memory_fraction takes a
    share of what the weights, activations and runtime leave; 0 for a framework that pre-allocates none."""
    if share := wfact["kv_cache_memory_fraction"]:  # its share holds the runtime overhead, as USABLE's reserve does
        usable = USABLE.evaluate({"g": {"memory_bytes": capacity},
                                  "p": {"reserve_fraction": 1 - share, "runtime_overhead": overhead}})
        return max(0.0, float(usable) - rest)
    return max(0.0, wfact["kv_cache_free_memory_fraction"] * (capacity - rest))


_BOXED = ("policy consumer-nodes: the GeForce driver licence excludes data-centre deployment, and consumer cards "
          "have no NVLink or scale-out network to span servers")
_BOXED_ZH = "策略 consumer-nodes：GeForce 驱动许可不允许数据中心部署，消费级显卡也没有 NVLink 或跨机网络"
BOX_SOURCES = ["nvidia-geforce-driver-license"]


def _box_words(gpu: dict[str, Any], zh: bool = False) -> str:
    """Why a plan stays in one node: its system has no network between nodes, or (no system) consumer cards."""
    if gpu["system"]:
        if zh:
            return f"一个 {gpu['system']} 节点（该系统没有节点间网络，kb/systems）"
        return f"one node of {gpu['system']} (the system has no network between nodes, kb/systems)"
    return f"一台机器（{_BOXED_ZH}）" if zh else f"one box ({_BOXED})"


def _within(limit: int, boxed: bool, gpu: dict[str, Any], zh: bool = False) -> str:
    """What bounded the search: one node of a system without a network (one box of consumer cards), or gpu_count."""
    if boxed:
        return f" {limit} 块 GPU，{_box_words(gpu, zh=True)}" if zh else f"{limit} GPUs, {_box_words(gpu)}"
    return f" gpu_count {limit} " if zh else f"gpu_count {limit}"


def _use_all(chosen: Candidate, gpu_count: int, dp_max: int = 0) -> Candidate:
    """placement 'all': the extra GPUs of gpu_count become data-parallel replicas of the plan, as many as the global
    batch feeds (`dp_max`, 0: no limit)."""
    group, ep = chosen.layout.group, chosen.layout.ep
    dp = max(chosen.dp, min(gpu_count // group, dp_max or NO_LIMIT) // ep * ep)
    return Candidate(chosen.layout, dp, dp * group, chosen.fits)


def _closest_miss(w: ResolvedWorkload, base: dict[str, Any], tried: list[Layout], limit: int,
                  inference: bool, cache: PlanCache, node: int = NODE_SIZE, dp_max: int = 0) -> Candidate:
    best: tuple[float, Layout, int] | None = None  # the Candidate is made for the best alone
    for layout in tried:
        if inference:
            tp = max([t for t in (1, 2, 4, 8) if t <= min(limit, node) and w.heads % t == 0] or [1])
            pp = w.pipeline_parallel or max(1, limit // tp)
            layout = Layout(tp, pp, 0, False, "none")
            dp = 1
        else:  # whole expert-parallel groups; without a gpu_count, as many GPUs as one group needs; no more ranks
            # than the global batch feeds
            dp = max(min(limit // layout.group, dp_max or NO_LIMIT) // layout.ep, 1) * layout.ep
        if dp * layout.group > limit and (w.gpu_count or layout.ep == 1):
            continue
        per_gpu = cache.total(layout, dp, base)
        if best is None or per_gpu < best[0]:
            best = (per_gpu, layout, dp)
    if best is None:  # nothing within the limit: one expert-parallel group (whole groups, as every plan has)
        ep = w.expert_parallel or 1
        return Candidate(Layout(1, 1, 0, True, "none", ep), ep, ep, False)
    _, layout, dp = best
    return Candidate(layout, dp, dp * layout.group, False)
