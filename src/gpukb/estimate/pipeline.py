"""ask(): workload in, Answer out, through one fresh rules-engine session."""

from __future__ import annotations

import gc
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..answer.answer import Answer, BandSource, build_answer
from ..answer.launch import launch_commands, model_reference
from ..answer.misses import nearest_misses
from ..answer.summary import Miss, summarize
from ..answer.workload import RL_TASKS, ResolvedWorkload, Workload, parse_workload
from ..core.errors import EngineError
from ..engine.engine import ENGINE
from ..engine.trace import Collector, Value
from .deadline import sized_for_deadline
from .load import LoadCache, load_misses, raise_for_load, record_load
from .planner import NO_LIMIT, Raise, Replicas, Sized, batch_feeds, plan_gpu, replica_cache
from .resolve import gpu_fact, policy_fact, resolve
from .rl import ask_rl
from .sla import fewest_meeting, has_targets
from .validation import BandsOf

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

LARGEST_CLUSTER = "largest-cluster"  # the policy: the most GPUs of one type a training cluster is built of
EFFICIENCY_FLOOR = "scaling-efficiency-floor"  # the policy: below it a cluster is not grown to meet a deadline


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

    def run(raised: dict[str, Raise], finish: Callable[[Collector], None] | None,
            sizes: dict[str, Sized | Replicas] | None = None) -> Answer:
        return _ask_once(kb, resolved, wfields, raised, finish, sizes or {}, bands, load)

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
        most = min(resolved.gpu_count or NO_LIMIT, round(kb.policy(LARGEST_CLUSTER)))
        facts = {g: gpu_fact(kb, kb.gpus[g], resolved.precision, resolved.kv_cache_precision, resolved.systems)
                 for g in resolved.gpus}
        node_of = {g: f["gpus_per_node"] for g, f in facts.items()}
        fed = {g: batch_feeds(resolved, f) for g, f in facts.items()}  # a global batch feeds only so many GPUs
        return sized_for_deadline(resolved.tokens, resolved.deadline_days * 86400, most,
                                  lambda sizes: run({}, None, sizes), node_of, kb.policy(EFFICIENCY_FLOOR), fed)
    return run({}, None)


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
              load: LoadCache | None = None) -> Answer:
    """One rules-engine session; `raised` sets tensor-parallel sizes per GPU type (latency targets), `sizes`
    training GPU counts (a deadline), `finish` adds steps that look at the whole answer (gpukb.estimate.sla)."""
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
        plans = [plan_gpu(c, resolved, wfact, policy, memory, g, plan_cache, raised.get(g["gpu"]), sizes.get(g["gpu"]))
                 for g in gpus]
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
