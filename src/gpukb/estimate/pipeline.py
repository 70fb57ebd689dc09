"""ask(): workload in, Answer out, through one fresh rules-engine session."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..answer.answer import Answer, BandSource, Option, build_answer
from ..answer.launch import launch_commands, model_reference
from ..answer.misses import nearest_misses
from ..answer.summary import Miss, summarize
from ..answer.workload import RL_TASKS, ResolvedWorkload, Workload, parse_workload
from ..core.errors import EngineError
from ..engine.engine import ENGINE
from ..engine.trace import Collector, Value
from .deadline import sized_for_deadline
from .load import LoadCache, load_misses, raise_for_load, record_load
from .planner import NO_LIMIT, SHARDED, Laid, Raise, Replicas, Sized, batch_feeds, deeper_depths, plan_gpu, replica_cache
from .resolve import gpu_fact, policy_fact, resolve
from .rl import ask_rl
from .sla import fewest_meeting, has_targets
from .validation import BandsOf

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

LARGEST_CLUSTER = "largest-cluster"  # the policy: the most GPUs of one type a training cluster is built of
EFFICIENCY_FLOOR = "scaling-efficiency-floor"  # the policy: below it a cluster is not grown to meet a deadline
# Pipeline depths a model-parallel layout is also planned at beyond the smallest group that holds the replica
# (planner.deeper_depths): a deeper pipeline holds more of the replica per data-parallel rank in fewer bytes and
# sends less gradient traffic per GPU, at a larger bubble; the rules' estimate decides, over a bounded few.
DEEPER = 3


def ask(kb: KnowledgeBase, workload: Workload | dict[str, Any], bands: bool = True) -> Answer:
    """The answer; with `bands`, each option's predicted numbers carry their error bands (gpukb.answer.bands, derived
    once per knowledge base, when an option's bands are first read: a process without the packaged copy that
    never reads them never derives them). `gpukb validate` asks without them: its points are what the bands
    are made of."""
    table = BandsOf(kb) if bands else None
    with _cycle_collector_paused():
        return _ask(kb, workload, table)


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cycle collector waits until the ask is over.

    An ask makes some ten thousand short-lived dicts and lists, nearly all freed by reference counting,
    yet every few hundred of them triggered a collection, and now and then a full one that walked the
    whole knowledge base too: a fifth of a warm ask, and pauses of 3-7x the median ask. Paused, the
    collector runs once the ask is over, over the little that is left. It is only paused if it was
    running (an application that turned it off keeps it off); with asks in several threads, the first
    to finish resumes it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _ask(kb: KnowledgeBase, workload: Workload | dict[str, Any], bands: BandSource | None) -> Answer:
    w = parse_workload(workload)
    if w.task in RL_TASKS:  # several models, each asked as its own job, then placed together (gpukb.estimate.rl)
        answer = ask_rl(kb, w, lambda fields: _answer(kb, parse_workload(fields), None))
        return answer.model_copy(update={"summary": summarize(answer, (), False, round(kb.policy(LARGEST_CLUSTER)))})
    answer = _answer(kb, w, bands)
    # nothing fits: the nearest miss per GPU type and the smallest change that makes it fit (a few more asks)
    misses: Sequence[Miss] = ()
    if not answer.options:  # a rate no option carries within its targets has misses of its own (gpukb.estimate.load)
        misses = load_misses(answer) if w.request_rate else None
        if misses is None:
            misses = nearest_misses(w, answer, lambda fields: _answer(kb, parse_workload(fields), bands))
    horizon = w.deadline_days is None and answer.workload.deadline_days is not None
    summary = summarize(answer, misses, horizon, round(kb.policy(LARGEST_CLUSTER)))
    return answer.model_copy(update={"summary": summary})


def _answer(kb: KnowledgeBase, w: Workload, bands: BandSource | None) -> Answer:
    resolved, wfields = resolve(kb, w)

    load = LoadCache() if resolved.request_rate else None
    subsets: dict[tuple[str, ...], ResolvedWorkload] = {}  # one workload object per subset: the planner caches by it

    def run(raised: dict[str, Raise], finish: Callable[[Collector], None] | None,
            sizes: dict[str, Sized | Replicas] | None = None, laid: dict[str, Laid] | None = None,
            gpus: Sequence[str] | None = None) -> Answer:
        """One session; `gpus`, where given, plans those GPU types alone (a layout tried on some of them)."""
        on = resolved
        if gpus is not None and list(gpus) != resolved.gpus:
            key = tuple(gpus)
            on = subsets.get(key) or subsets.setdefault(key, resolved.model_copy(update={"gpus": list(gpus)}))
        return _ask_once(kb, on, wfields, raised, finish, sizes or {}, bands, load, laid or {})

    # a request rate: each GPU type gets the tensor parallelism whose replica meets the targets at some rate, then
    # the replicas that carry the rate (gpukb.estimate.load)
    if load is not None:
        raised = raise_for_load(resolved, run, load, _widest(kb, resolved))
        first = run(raised, None)
        sizes = _replicas_for(resolved, first, load)
        return run(raised, None, sizes) if sizes else first
    # latency targets: the fewest GPUs that meet them, by raising tensor parallelism where they are missed
    if has_targets(resolved):
        return fewest_meeting(resolved, run, _widest(kb, resolved))
    # a deadline (or the pre-training horizon): per GPU type, the cluster that trains the tokens in time; with
    # placement 'all' the user's gpu_count is the plan, and the deadline only says whether it is met
    if resolved.task != "inference" and resolved.deadline_days and resolved.tokens and resolved.placement != "all":
        return _sized(kb, resolved, run)
    if resolved.task != "inference" and resolved.placement == "all" and _compares_layouts(kb, resolved):
        return _pinned(resolved, run)
    return run({}, None)


def _compares_layouts(kb: KnowledgeBase, w: ResolvedWorkload) -> bool:
    """Whether both layout orders are planned: the framework lays runs out model-parallel (kb/frameworks
    training_layout) and the workload pins neither tensor nor pipeline parallelism nor ZeRO-2/3."""
    framework = kb.frameworks.get(w.framework or "")
    layout = framework.training_layout if framework else None
    return (layout is not None and layout.order == "model_parallel" and not w.tensor_parallel
            and not w.pipeline_parallel and (w.zero_stage or 0) <= 1)


def _pinned(w: ResolvedWorkload, run: Callable[..., Answer]) -> Answer:
    """The user's cluster (placement 'all') laid out both ways, the model-parallel way at a few pipeline depths
    (_deeper): each GPU type keeps the layout the rules estimate runs the most tokens/s on it."""
    ours = {o.gpu: o for o in run({}, None).options}
    theirs = {o.gpu: o for o in run({}, None, None, dict.fromkeys(w.gpus, Laid("model_parallel"))).options}
    tried = _deeper(w, theirs, run, lambda gpu: None, lambda gpu, o: True, w.gpu_count or 0)
    laid: dict[str, Laid] = {}
    for gpu in w.gpus:
        ranked = _ranked(ours.get(gpu), tried.get(gpu, []), lambda o: -(o.tokens_per_s or 0.0))
        if ranked:
            laid[gpu] = _laid(ranked, tried.get(gpu, []), rate=True)
    return run({}, None, None, laid)


def _sized(kb: KnowledgeBase, w: ResolvedWorkload, run: Callable[..., Answer]) -> Answer:
    """Each GPU type sized to the deadline (gpukb.estimate.deadline). Where the framework lays runs out model-parallel
    (_compares_layouts), both orders are sized, the model-parallel one also at a few deeper pipelines on its cluster
    (_deeper), and each GPU type keeps the layout that meets the deadline in the fewest GPU-hours, or misses it by
    least: the rules, not the order, decide. Where a deeper pipeline is the best model-parallel layout, its cluster
    is sized again from there (tightened toward the deadline, or grown while it gains)."""
    most = min(w.gpu_count or NO_LIMIT, round(kb.policy(LARGEST_CLUSTER)))
    facts = {g: gpu_fact(kb, kb.gpus[g], w.precision, w.kv_cache_precision, w.systems) for g in w.gpus}
    node_of = {g: f["gpus_per_node"] for g, f in facts.items()}
    held = {g: f["gpus_per_node"] for g, f in facts.items() if not f["scales_out"]}  # no network: one node at most
    deadline_s = (w.deadline_days or 0) * 86400

    def sized(order: str, keep: dict[str, Sized], depths: dict[str, int] | None = None,
              start: dict[str, int] | None = None) -> Answer:
        gpus = list(start) if start else w.gpus
        fed = {g: batch_feeds(w, facts[g], order) for g in gpus}  # a global batch feeds only so many GPUs
        # the scaling-efficiency floor stops a sharded cluster at its communication wall (ZeRO's collectives grow
        # with the ranks); a model-parallel one, whose data-parallel traffic per GPU does not, grows while it gains
        floor = kb.policy(EFFICIENCY_FLOOR) if order == "sharded" else 0.0
        every = {g: Laid(order, (depths or {}).get(g, 0)) for g in gpus}
        return sized_for_deadline(w.tokens or 0, deadline_s, most,
                                  lambda sizes: run({}, None, sizes, every, gpus), node_of, floor, fed, keep, start,
                                  held)

    def key(o: Option) -> tuple[int, float]:
        """Meeting the deadline first; of those that meet it, the fewer GPU-hours (the options' own, as the answer
        ranks them); of those that miss it, the shorter run."""
        t = o.time_to_train_s or math.inf
        return (0, o.gpu_hours or math.inf) if t <= deadline_s else (1, t)

    sharded: dict[str, Sized] = {}
    first = sized("sharded", sharded)
    if not _compares_layouts(kb, w):
        return first
    parallel: dict[str, Sized] = {}
    second = sized("model_parallel", parallel)
    ours = {o.gpu: o for o in first.options}
    # a model-parallel plan that needed more GPUs than its size (no group held the replica there) is no cluster; a
    # GPU type never resized keeps the count memory needs (it met the deadline, or its systems hold no more)
    theirs = {o.gpu: o for o in second.options if o.gpu not in parallel or o.count <= parallel[o.gpu].count}
    tried = _deeper(w, theirs, run, parallel.get,
                    lambda gpu, o: o.count <= (parallel[gpu] if gpu in parallel else theirs[gpu]).count)
    # the cluster was sized for the smallest group: where a deeper pipeline does better on it, it is sized again
    # from there (a faster layout meets the deadline on fewer GPUs, or grows further before it stops gaining)
    size_of: dict[str, Sized] = dict(parallel)
    deeper = {gpu: best for gpu, listed in tried.items() if (best := min(listed, key=lambda item: key(item[1])))[0] > 0}
    if deeper:
        again: dict[str, Sized] = {}
        resized = {o.gpu: o for o in sized("model_parallel", again, {g: d for g, (d, _) in deeper.items()},
                                          {g: o.count for g, (_, o) in deeper.items()}).options}
        for gpu, (depth, before) in deeper.items():
            after = resized.get(gpu)
            if gpu in again and after is not None and after.count <= again[gpu].count and key(after) <= key(before):
                size_of[gpu] = again[gpu]
                tried[gpu] = [(d, after if d == depth else o) for d, o in tried[gpu]]
    chosen: dict[str, Sized | Replicas] = {}
    laid: dict[str, Laid] = {}
    for gpu in w.gpus:
        ranked = _ranked(ours.get(gpu), tried.get(gpu, []), key)
        if ranked and ranked[0][0] != 0:
            if gpu in size_of:
                chosen[gpu] = size_of[gpu]
        elif gpu in sharded:
            chosen[gpu] = sharded[gpu]
        if ranked:
            laid[gpu] = _laid(ranked, tried.get(gpu, []))
    return run({}, None, chosen, laid)


_FIRST = -1  # _ranked's mark of the model-parallel plan at the smallest group (depth 0 in Laid.pp)


def _deeper(w: ResolvedWorkload, theirs: dict[str, Option], run: Callable[..., Answer],
            size_of: Callable[[str], Sized | None], holds: Callable[[str, Option], bool],
            cluster: int = 0) -> dict[str, list[tuple[int, Option]]]:
    """Per GPU type, its model-parallel plans: `theirs` (the smallest group that holds the replica) and the same
    cluster (`size_of`, or the user's) at the deeper pipelines planner.deeper_depths picks with DEEPER, one session per
    depth over the GPU types that have one, each kept where `holds` (it fits the cluster). On a pinned `cluster`
    (gpu_count) the shallowest depth whose group uses every GPU is tried too (_filling). As (Laid.pp, option), the
    first marked _FIRST."""
    tried = {gpu: [(_FIRST, o)] for gpu, o in theirs.items()}
    depths = {gpu: deeper_depths(w.layers, o.strategy.pipeline_parallel, DEEPER) for gpu, o in theirs.items()}
    if cluster:
        depths = {gpu: _filling(w.layers, theirs[gpu], d, cluster) for gpu, d in depths.items()}
    for k in range(max(map(len, depths.values()), default=0)):
        at = {gpu: d[k] for gpu, d in depths.items() if len(d) > k}
        if not at:
            break
        sizes = {gpu: size for gpu in at if (size := size_of(gpu)) is not None}
        for o in run({}, None, sizes, {gpu: Laid("model_parallel", d) for gpu, d in at.items()}, list(at)).options:
            if holds(o.gpu, o) and o.strategy.pipeline_parallel not in {p.strategy.pipeline_parallel for _, p in tried[o.gpu]}:
                tried[o.gpu].append((at[o.gpu], o))
    return tried


def _filling(layers: int, first: Option, depths: tuple[int, ...], cluster: int) -> tuple[int, ...]:
    """`depths` and, where neither the smallest group nor any of them divides the pinned cluster, the shallowest
    deeper pipeline whose tp x pp group does (no GPU left idle): Llama 3.1 405B on 16,384 H100s holds its replica
    on tp 8 x pp 6 groups, which leave 16 GPUs idle, and trained on tp 8 x pp 16 (meta-llama-3-herd-paper §3.3.2).
    The rules' tokens/s then decide between them (_pinned)."""
    s = first.strategy
    tp, pp = s.tensor_parallel * s.context_parallel, s.pipeline_parallel
    if any(cluster % (tp * d) == 0 for d in (pp, *depths)):
        return depths
    fills = next((d for d in range(pp + 1, layers + 1) if cluster % (tp * d) == 0), None)
    return depths if fills is None else (*depths, fills)


def _ranked(sharded: Option | None, tried: list[tuple[int, Option]],
            key: Callable[[Option], Any]) -> list[tuple[int, Option]]:
    """A GPU type's layouts, best first by `key`: the sharded one (marked 0) first among equals, then the
    model-parallel ones (_deeper) shallowest first."""
    listed = ([(0, sharded)] if sharded is not None else []) + list(tried)
    return sorted(listed, key=lambda item: key(item[1]))


def _laid(ranked: list[tuple[int, Option]], tried: list[tuple[int, Option]], rate: bool = False) -> Laid:
    """The order (and pipeline depth) of a GPU type's best layout, with the nearest alternative it beat."""
    mark, rest = ranked[0][0], ranked[1:]
    order = "model_parallel" if mark else "sharded"
    depths = tuple(sorted(o.strategy.pipeline_parallel for _, o in tried))
    if not rest:
        return Laid(order, max(mark, 0))
    other_mark, other = rest[0]
    s = other.strategy
    return Laid(order, max(mark, 0), "model_parallel" if other_mark else "sharded",
                other_s=0.0 if rate else other.time_to_train_s or 0.0,
                other_rate=(other.tokens_per_s or 0.0) if rate else 0.0,
                other_tp=s.tensor_parallel if other_mark else 0, other_pp=s.pipeline_parallel if other_mark else 0,
                depths=depths, other_count=other.count, other_gpu_hours=other.gpu_hours or 0.0)


def _widest(kb: KnowledgeBase, resolved: ResolvedWorkload) -> dict[str, int]:
    """The widest tensor-parallel group each GPU type's system allows: a node, or its scale-up domain where that
    spans nodes; a system without a network between nodes holds no more than one node."""
    facts = {g: gpu_fact(kb, kb.gpus[g], resolved.precision, resolved.kv_cache_precision, resolved.systems)
             for g in resolved.gpus}
    return {g: max(f["gpus_per_node"], kb.gpus[g].scale_up_domain * kb.gpus[g].devices) if f["scales_out"]
            else f["gpus_per_node"] for g, f in facts.items()}


def _replicas_for(w: ResolvedWorkload, answer: Answer, load: LoadCache) -> dict[str, Sized | Replicas]:
    """Per GPU type whose replica meets the targets at some rate, the replicas the workload's rate needs (placement
    'all' keeps the user's gpu_count)."""
    if w.placement == "all":
        return {}
    sizes: dict[str, Sized | Replicas] = {}
    for option in (*answer.options, *answer.rejected):
        s = option.strategy
        one = load.replicas.get((option.gpu, s.tensor_parallel, s.pipeline_parallel))
        if one is None or one.max_rate <= 0 or option.count != s.data_parallel * s.tensor_parallel * s.pipeline_parallel:
            continue
        needed = max(1, math.ceil((w.request_rate or 0.0) / one.max_rate - 1e-9))
        if needed != s.data_parallel:
            group = s.tensor_parallel * s.pipeline_parallel
            sizes[option.gpu] = Replicas(needed * group, needed, w.request_rate or 0.0, one.max_rate)
    return sizes


def _ask_once(kb: KnowledgeBase, resolved: ResolvedWorkload, wfields: dict[str, Any], raised: dict[str, Raise],
              finish: Callable[[Collector], None] | None, sizes: dict[str, Sized | Replicas], bands: BandSource | None,
              load: LoadCache | None, laid: dict[str, Laid]) -> Answer:
    """One rules-engine session; `raised` sets tensor-parallel sizes per GPU type (latency targets), `sizes`
    training GPU counts (a deadline), `laid` the order each GPU type's training layouts are tried in (planner.Laid),
    `finish` adds steps that look at the whole answer (gpukb.estimate.sla)."""
    c = Collector(kb, len(resolved.gpus))
    policy = c.new_fact("policy", policy_fact(kb), 0)
    wfact = c.new_fact("workload", wfields, 0)
    gpus = [c.new_fact("gpu", gpu_fact(kb, kb.gpus[g], resolved.precision, resolved.kv_cache_precision, resolved.systems), 0)
            for g in resolved.gpus]
    with ENGINE.session(kb, c, wfact) as session:
        # Stage 1: requirement rules derive one replica's memory from the workload.
        session.assert_facts([policy, wfact, *gpus])
        memories = c.of_kind("memory")
        if len(memories) != 1:
            rules = sorted({c.step_of(m).rule for m in memories if c.step_of(m)})  # type: ignore[union-attr]
            raise EngineError(f"expected exactly one memory breakdown for task '{resolved.task}', "
                              f"rules produced {len(memories)} ({', '.join(rules) or 'none'})")
        memory = memories[0]
        # Stage 2: the planner places the replica on each candidate GPU type; later rules diagnose
        # the plans, propose remedies and estimate throughput.
        plan_cache = replica_cache(memory, wfact)
        plans = [plan_gpu(c, resolved, wfact, policy, memory, g, plan_cache, raised.get(g["gpu"]), sizes.get(g["gpu"]),
                          laid.get(g["gpu"], SHARDED)) for g in gpus]
        fleet = _fleet(c, plans)
        session.assert_facts([*plans, fleet])
    if load is not None:
        record_load(c, kb, resolved, policy, load)
    if finish is not None:
        finish(c)
    prices = {g: kb.gpus[g].price.usd / kb.gpus[g].devices for g in resolved.gpus if kb.gpus[g].price}  # per device
    catalog = kb.models.get(resolved.model) if not resolved.config_file else None
    model_ref = model_reference(resolved, catalog.hf_repo if catalog else None)
    reserve = policy["reserve_fraction"]
    answer = build_answer(c, kb.version, kb.content_hash, resolved, memory, prices,
                        launch=lambda strategy, plan, capacity: launch_commands(
                            model_ref, resolved, strategy, reserve, plan, kb.gpus[plan["gpu"]].fp8_flops is not None,
                            capacity),
                        largest_cluster=round(kb.policy(LARGEST_CLUSTER)), bands=bands)
    answer._replica = (memory, wfact)
    answer._load = load
    return answer


def _fleet(c: Collector, plans: list[dict[str, Any]]) -> dict[str, Any]:
    largest = max(plans, key=lambda p: (p["usable_bytes"], p["gpu"]))
    fields = {"candidates": len(plans), "max_usable_bytes": largest["usable_bytes"], "largest_gpu": largest["gpu"],
              "fitting": sum(1 for p in plans if p["fits"])}
    (fact,) = c.record(
        rule="planner.fleet@1", stage="requirements", title="Summary of the candidate GPU types",
        inputs={f"p{i}": p for i, p in enumerate(plans)},
        values=[Value(name=k, value=v, expr="max(p.usable_bytes)" if k == "max_usable_bytes" else None)
                for k, v in fields.items()],
        claims=(), sources=[],
        sentence=f"{fields['fitting']} of {fields['candidates']} GPU types can hold the workload; the largest "
                 f"single GPU ({largest['gpu']}) has {largest['usable_bytes'] / 1e9:,.1f} GB usable.",
        outputs=[("fleet", fields)], title_zh="候选 GPU 型号汇总",
        sentence_zh=f"{fields['candidates']} 种 GPU 型号中有 {fields['fitting']} 种能容纳该工作负载；单卡最大的"
                    f"（{largest['gpu']}）可用 {largest['usable_bytes'] / 1e9:,.1f} GB。")
    return fact
