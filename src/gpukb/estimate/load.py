"""Serving under load (workload request_rate): each option's latencies at the rate, the highest rate that meets
the targets, and the replicas the rate needs.

After the rules have estimated each plan's decode step, this step reads that estimate's terms (the weights' read,
the compute rate, the KV cache per token, the element-wise and tensor-parallel costs, the host's floor) into a
step-time model, takes the engine's scheduler from kb/frameworks and the KV-cache pool the planner gives it, and
simulates one replica (gpukb.estimate.loadsim). Data-parallel replicas share the requests: a Poisson stream split
at random over dp replicas is dp Poisson streams of rate / dp (an even split of a constant stream is constant),
so one replica is simulated at rate / dp. An ask sizes each GPU type in passes: where one replica meets the targets
at no rate, the next tensor-parallel size is tried (raise_for_load); the plan then gives the highest rate one
replica meets them at, and the last pass lays out ceil(rate / that) replicas.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..answer.summary import Miss
from ..engine.trace import Collector, Value
from . import loadsim
from .planner import Raise, kv_pool, next_tensor_parallel

if TYPE_CHECKING:
    from ..answer.answer import Answer
    from ..answer.workload import ResolvedWorkload
    from ..knowledge.kb import KnowledgeBase

RULE = "planner.load@1"
FIELDS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s", "max_rate", "utilisation")
TARGETS = {"ttft_p50_ms": "ttft_p50_s", "ttft_p99_ms": "ttft_p99_s", "tpot_p50_ms": "tpot_p50_s",
           "tpot_p99_ms": "tpot_p99_s"}
SOURCES = ("vllm-v1-scheduler", "vllm-arg-utils-batch-defaults", "zhong-2024-distserve")
# the step model's terms shown with each load step: (value name, StepCost field)
STEP_TERMS = (("step_weights_s", "weights_s"), ("step_tp_allreduce_s", "tp_fixed_s"),
              ("step_tp_token_s", "tp_token_s"), ("step_floor_s", "floor_s"), ("step_host_s", "host_s"),
              ("step_host_per_sequence_s", "host_sequence_s"))


@dataclass(frozen=True)
class Replica:
    """What one replica of a GPU type's plan sustains: its step model, scheduler bounds, capacity and the highest
    rate meeting the targets (both requests/s per replica)."""

    cost: loadsim.StepCost
    limits: loadsim.Limits
    capacity: float
    batch: int
    max_rate: float


@dataclass
class LoadCache:
    """Per ask: the replicas already simulated, keyed by GPU type and layout, so the sizing pass's bisection is
    not run again when the replicas are laid out."""

    trace: loadsim.Trace | None = None
    replicas: dict[tuple[str, int, int], Replica] = field(default_factory=dict)
    runs: dict[tuple[str, int, int, int], loadsim.Run] = field(default_factory=dict)  # the layout's, at dp replicas


def targets_s(w: ResolvedWorkload) -> dict[str, float]:
    return {name: getattr(w, ms) / 1000 for ms, name in TARGETS.items() if getattr(w, ms)}


def step_cost(values: dict[str, Any], w: dict[str, Any], m: dict[str, Any], p: dict[str, Any],
              q: dict[str, Any]) -> loadsim.StepCost:
    """The decode rule's terms for this plan as a step-time model (rec.throughput.decode computes the same step
    at the plan's concurrency)."""
    compute, read = values["compute_rate"], values["read_rate"]
    per_token_kv = m["kv_cache"] / (w["batch_size"] * w["seq_len"])  # the replica's KV cache per context token
    tp, layers, hidden = p["tp"], w["layers"], w["hidden_size"]
    # a batch under load routes its tokens to nearly every expert: a step reads all the weights it would prefill
    weights = values["prefill_weight_bytes"] if w["experts"] > 1 else values["weight_bytes_read"]
    return loadsim.StepCost(
        weights_s=weights / read, prefill_weights_s=values["prefill_weight_bytes"] / values["prefill_read_rate"],
        linear_s=2 * (w["active_params"] - w["embedding_params"]) / compute,
        logits_s=2 * w["vocab_size"] * hidden / compute, context_read_s=per_token_kv / read,
        context_flop_s=2 * layers * hidden / compute, elementwise_s=values["elementwise_s"],
        prefill_elementwise_s=values["prefill_elementwise_s"],
        tp_fixed_s=2 * layers * values["allreduce_s"] if tp > 1 else 0.0,
        tp_token_s=2 * layers * hidden * 4 * (tp - 1) / tp / values["link"] if tp > 1 else 0.0,
        floor_s=max(values["launch_s"], q["decode_step_floor"]), host_s=w["step_host_s"],
        host_sequence_s=w["step_host_per_sequence_s"])


def limits(kb: KnowledgeBase, w: ResolvedWorkload, wfact: dict[str, Any], m: dict[str, Any], p: dict[str, Any],
           policy: dict[str, Any]) -> loadsim.Limits | None:
    """The engine's scheduler bounds on this plan's replica; None for an engine with no scheduler in kb/frameworks."""
    framework = kb.frameworks.get(w.framework)
    sched = framework.scheduler if framework else None
    if sched is None:
        return None
    seqs, budget = sched.max_num_seqs, sched.max_batched_tokens
    for tier in sched.tiers:  # the engine reads the device's memory at start
        if p["capacity_bytes"] >= tier.min_memory_gib * 2**30 and not any(p["gpu"].startswith(g) for g in tier.except_gpus):
            seqs, budget = tier.max_num_seqs or seqs, tier.max_batched_tokens or budget
    rest = p["per_gpu_bytes"] - p["kv_cache"]
    pool = kv_pool(wfact, rest, p["capacity_bytes"], policy["runtime_overhead"]) or max(0.0, p["usable_bytes"] - rest)
    per_token = m["kv_cache"] / (wfact["batch_size"] * wfact["seq_len"]) / (p["tp"] * p["pp"])  # bytes per GPU
    blocks = int(pool / (per_token * sched.kv_block_tokens)) if per_token > 0 else 10**9
    return loadsim.Limits(seqs, budget, blocks * sched.kv_block_tokens, sched.kv_block_tokens,
                          sched.admission == "reserve_full", sched.prefill == "separate")


def replica(cache: LoadCache, w: ResolvedWorkload, key: tuple[str, int, int], cost: loadsim.StepCost,
            bounds: loadsim.Limits, dp: int) -> Replica:
    """A GPU type's replica, simulated once an ask; its run at the rate (over dp replicas) is the search's first
    probe."""
    if key not in cache.replicas:
        trace = _trace(cache, w)
        ceiling, batch = loadsim.capacity(cost, bounds, w.prompt_len or 1, w.output_len or 1)
        rate = (w.request_rate or 0.0) / dp
        cache.runs[(*key, dp)] = at_rate = loadsim.simulate(cost, bounds, trace, rate)
        best = loadsim.max_rate(cost, bounds, trace, targets_s(w), ceiling, (rate, at_rate))
        cache.replicas[key] = Replica(cost, bounds, ceiling, batch, best)
    return cache.replicas[key]


def _trace(cache: LoadCache, w: ResolvedWorkload) -> loadsim.Trace:
    if cache.trace is None:
        cache.trace = loadsim.make_trace(w.prompt_len or 1, w.output_len or 1, w.prompt_shape, w.output_shape, w.arrival,
                                         wanted=w.num_prompts)
    return cache.trace


def raise_for_load(w: ResolvedWorkload, run: Callable[[dict[str, Raise], None], Answer], cache: LoadCache,
                   widest: dict[str, int]) -> dict[str, Raise]:
    """Per GPU type whose replica meets the targets at no rate (a request alone is too slow), the next larger
    tensor-parallel size, asked again until one meets them or none is larger: the sizes to plan with."""
    raised: dict[str, Raise] = {}
    answer = run(raised, None)
    while True:
        more: dict[str, Raise] = {}
        for option in (*answer.options, *answer.rejected):
            s = option.strategy
            one = cache.replicas.get((option.gpu, s.tensor_parallel, s.pipeline_parallel))
            if one is None or one.max_rate > 0 or (option.gpu in raised and raised[option.gpu].tp != s.tensor_parallel):
                continue
            bigger = next_tensor_parallel(w, s.tensor_parallel, widest.get(option.gpu, 8))
            if bigger is not None:
                targets = ", ".join(f"{ms} {getattr(w, ms):g}" for ms in TARGETS if getattr(w, ms))
                more[option.gpu] = Raise(
                    bigger, f"Tensor parallelism raised to {bigger}: at tp={s.tensor_parallel} one replica misses "
                            f"{targets} at any request rate.",
                    f"张量并行提高到 {bigger}：tp={s.tensor_parallel} 时单个副本在任何请求速率下都达不到 {targets}。")
        if not more:
            return raised
        raised.update(more)
        answer = run(raised, None)


def record_load(c: Collector, kb: KnowledgeBase, w: ResolvedWorkload, policy: dict[str, Any], cache: LoadCache) -> None:
    """One load step per estimated plan: its figures at the rate (a 'load' fact), and a finding that rejects it
    where its replicas cannot carry the rate at the targets."""
    wfact = c.of_kind("workload")[0]
    for estimate in c.of_kind("estimate"):
        step = c.step_of(estimate)
        if step is None:
            continue
        facts = c.matched[step.step - 1]
        m, p = facts["m"], facts["p"]
        bounds = limits(kb, w, wfact, m, p, policy)
        if bounds is None:
            _record_unmodelled(c, w, p, estimate, sorted(f.id for f in kb.frameworks.values() if f.scheduler))
            continue
        values = {v["name"]: v["value"] for v in step.values}
        key = (p["gpu"], p["tp"], p["pp"])
        one = replica(cache, w, key, step_cost(values, wfact, m, p, policy), bounds, p["dp"])
        if (*key, p["dp"]) not in cache.runs:
            cache.runs[(*key, p["dp"])] = loadsim.simulate(one.cost, one.limits, _trace(cache, w),
                                                           (w.request_rate or 0.0) / p["dp"])
        _record(c, w, p, estimate, one, cache.runs[(*key, p["dp"])])


def _record(c: Collector, w: ResolvedWorkload, p: dict[str, Any], estimate: dict[str, Any], one: Replica,
            run: loadsim.Run) -> None:
    rate, dp = w.request_rate or 0.0, p["dp"]
    fig = loadsim.figures(run)
    targets = targets_s(w)
    fields: dict[str, Any] = {"gpu": p["gpu"], **{name: getattr(fig, name) for name in FIELDS[:6]},
                              "max_rate": one.max_rate * dp, "utilisation": rate / dp / one.capacity,
                              "replicas": dp, "capacity": one.capacity * dp, "batch": one.batch,
                              "finished": run.finished, "preemptions": run.preemptions, "requests": run.requests,
                              # what a benchmark reports as its request throughput: requests over the run's span
                              "request_throughput": len(run.e2e) / run.makespan_s * dp if run.makespan_s else 0.0,
                              "meets": loadsim.meets(fig, targets) and rate <= one.max_rate * dp * (1 + 1e-9)}
    outputs: list[tuple[str, dict[str, Any]]] = [("load", fields)]
    if not fields["meets"]:
        outputs.append(("finding", {"finding": "compute", "severity": "error", "gpu": p["gpu"], "rejects": True,
                                    "value": rate, "limit": fields["max_rate"]}))
    text = _Text(w, p, fields, one, targets)
    c.record(rule=RULE, stage="recommendations", title="Latency under load: the engine's scheduler simulated at the "
             "request rate", title_zh="负载下的延迟：按请求速率模拟推理引擎的调度器",
             inputs={"e": estimate, "p": p}, values=text.values(), claims=(), sources=SOURCES,
             sentence=text.en(), sentence_zh=text.zh(), outputs=outputs)


def _record_unmodelled(c: Collector, w: ResolvedWorkload, p: dict[str, Any], estimate: dict[str, Any],
                       modelled: list[str]) -> None:
    """A plan whose engine has no scheduler in kb/frameworks: rejected, naming the engines that have one."""
    c.record(rule=RULE, stage="recommendations", title="Latency under load: no scheduler model for this engine",
             title_zh="负载下的延迟：该推理引擎没有调度器模型", inputs={"e": estimate, "p": p}, values=[], claims=(),
             sources=SOURCES, outputs=[("finding", {"finding": "compute", "severity": "error", "gpu": p["gpu"],
                                                     "rejects": True, "value": w.request_rate or 0.0, "limit": 0.0})],
             sentence=f"{w.framework} has no continuous-batching scheduler in kb/frameworks, so its latency at "
                      f"{w.request_rate:g} requests/s is not simulated; choose framework {', '.join(modelled)}.",
             sentence_zh=f"kb/frameworks 中没有 {w.framework} 的连续批处理调度器，"
                         f"无法模拟每秒 {w.request_rate:g} 个请求下的延迟；请选用 {'、'.join(modelled)}。")


@dataclass(frozen=True)
class _Text:
    w: ResolvedWorkload
    p: dict[str, Any]
    f: dict[str, Any]
    one: Replica
    targets: dict[str, float]

    def values(self) -> list[Value]:
        lim = self.one.limits
        shown = [Value(name=n, value=self.f[n], expr=None)
                 for n in (*FIELDS, "replicas", "capacity", "batch", "preemptions", "request_throughput")]
        cost = self.one.cost
        # the step model's terms, so a latency can be traced to what each step spends (the decode rule's names)
        terms = [Value(name=name, value=getattr(cost, field), expr=None) for name, field in STEP_TERMS]
        return shown + [Value(name="max_num_seqs", value=lim.max_num_seqs, expr=None),
                        Value(name="max_batched_tokens", value=lim.max_batched_tokens, expr=None),
                        Value(name="kv_tokens", value=lim.kv_tokens, expr=None)] + terms

    def _step(self, zh: bool = False) -> str:
        """What one decode step of the run's batch spends: the weights' read, over tensor parallelism the all-reduces
        (two a layer), and the time an engine's host works between steps while the GPU waits."""
        cost, batch = self.one.cost, self.f["batch"]
        tp = cost.tp_fixed_s + cost.tp_token_s * batch
        host = cost.host_s + cost.host_sequence_s * batch
        if zh:
            text = f"每个解码步读取权重需 {_ms(cost.weights_s)}"
            text += f"；批大小为 {batch} 时，" if tp or host else ""
            text += f"张量并行的 all-reduce（每层两次）再加 {_ms(tp)}" if tp else ""
            text += "，" if tp and host else ""
            text += f"两步之间主机还要工作 {_ms(host)}，GPU 空等" if host else ""
            return text + "。"
        text = f" A decode step reads the weights in {_ms(cost.weights_s)}"
        text += f"; at batch {batch}" if tp or host else ""
        text += f" tensor parallelism's all-reduces (two a layer) add {_ms(tp)}" if tp else ""
        text += "," if tp and host else ""
        text += f" the engine's host works {_ms(host)} between steps while the GPU waits" if host else ""
        return text + "."

    def _targets(self, zh: bool = False) -> str:
        return ("、" if zh else ", ").join(f"{ms} {getattr(self.w, ms):g}" for ms in TARGETS if getattr(self.w, ms))

    def en(self) -> str:
        w, f, lim = self.w, self.f, self.one.limits
        text = (f"{self.p['gpu']}: {f['replicas']} replica(s) share {w.request_rate:g} requests/s ({w.arrival} "
                f"arrivals; prompts {w.prompt_len} tokens {w.prompt_shape}, outputs {w.output_len} {w.output_shape}); "
                f"{w.framework}'s scheduler runs at most {lim.max_num_seqs} sequences and {lim.max_batched_tokens} "
                f"tokens a step in a KV cache of {lim.kv_tokens:,} tokens per replica"
                f"{' reserved whole per request' if lim.reserve_full else ''}. Simulated over {f['requests']} "
                f"requests: TTFT P50 {_ms(f['ttft_p50_s'])}, P99 {_ms(f['ttft_p99_s'])}; TPOT P50 {_ms(f['tpot_p50_s'])}, "
                f"P99 {_ms(f['tpot_p99_s'])}; end to end P50 {_sec(f['e2e_p50_s'])}, P99 {_sec(f['e2e_p99_s'])}; "
                f"utilisation {f['utilisation']:.0%} of the {f['capacity']:,.2f} requests/s the replicas sustain "
                f"(batch {f['batch']})")
        text += f", {f['preemptions']} preemption(s)." if f["preemptions"] else "."
        goal = f"meets {self._targets()}" if self.targets else "keeps its queue bounded"
        if f["max_rate"] > 0:
            text += f" The highest rate that {goal} is {f['max_rate']:,.2f} requests/s"
        else:
            text += f" No rate {goal}: the targets are shorter than one request takes alone"
        if not f["meets"]:
            text += f"; {w.request_rate:g} requests/s are too many for {f['replicas']} replica(s): rejected."
        else:
            text += "."
        return text + self._step()

    def zh(self) -> str:
        w, f, lim = self.w, self.f, self.one.limits
        text = (f"{self.p['gpu']}：{f['replicas']} 个副本分担每秒 {w.request_rate:g} 个请求（{_arrival_zh(w.arrival)}；"
                f"提示词 {w.prompt_len} 个 token（{_shape_zh(w.prompt_shape)}），"
                f"输出 {w.output_len} 个（{_shape_zh(w.output_shape)}））；"
                f"{w.framework} 的调度器最多同时运行 {lim.max_num_seqs} 条序列、每步 {lim.max_batched_tokens} 个 token，"
                f"每个副本的 KV 缓存可容纳 {lim.kv_tokens:,} 个 token{'（按请求整段预留）' if lim.reserve_full else ''}。"
                f"模拟 {f['requests']} 个请求：首 token 时间 P50 {_ms(f['ttft_p50_s'])}、P99 {_ms(f['ttft_p99_s'])}；"
                f"每 token 时间 P50 {_ms(f['tpot_p50_s'])}、P99 {_ms(f['tpot_p99_s'])}；端到端 P50 {_sec(f['e2e_p50_s'])}、"
                f"P99 {_sec(f['e2e_p99_s'])}；利用率为副本可承载的每秒 {f['capacity']:,.2f} 个请求的 {f['utilisation']:.0%}"
                f"（批大小 {f['batch']}）")
        text += f"，抢占 {f['preemptions']} 次。" if f["preemptions"] else "。"
        goal = f"达到 {self._targets(zh=True)} " if self.targets else "使队列不无限增长"
        if f["max_rate"] > 0:
            text += f"能{goal}的最高速率为每秒 {f['max_rate']:,.2f} 个请求"
        else:
            text += f"任何速率都不能{goal}：单个请求独占时也超出目标"
        text += f"；{f['replicas']} 个副本承载不了每秒 {w.request_rate:g} 个请求，排除。" if not f["meets"] else "。"
        return text + self._step(zh=True)


def _ms(seconds: float) -> str:
    return "—" if math.isnan(seconds) else f"{seconds * 1000:,.1f} ms"


def _sec(seconds: float) -> str:
    return "—" if math.isnan(seconds) else f"{seconds:,.2f} s"


def _arrival_zh(arrival: str) -> str:
    return "泊松到达" if arrival == "poisson" else "匀速到达"


def _shape_zh(shape: str) -> str:
    return {"fixed": "固定", "exponential": "指数分布的均值", "uniform": "均匀分布的均值"}[shape]


def load_misses(answer: Answer) -> list[Miss] | None:
    """When the rate is what rejects every GPU type: each one's nearest miss, the most requests/s first, with the
    gpu_count that carries the rate where a limit was all that stood in the way. None when something else (memory,
    precision) rejects one of them: the usual nearest misses apply."""
    w = answer.workload
    rate = w.request_rate or 0.0
    if not answer.rejected or any(o.load is None or not o.deciding_finding or o.deciding_finding.rule != RULE
                                  for o in answer.rejected):
        return None
    misses = []
    for o in sorted(answer.rejected, key=lambda o: (-(o.load.max_rate if o.load else 0.0), o.count, o.gpu)):
        assert o.load is not None
        at = (f"at {rate:g} requests/s TTFT P99 {o.load.ttft_p99_s * 1000:,.1f} ms, TPOT P99 "
              f"{o.load.tpot_p99_s * 1000:,.1f} ms", f"每秒 {rate:g} 个请求时首 token 时间 P99 "
              f"{o.load.ttft_p99_s * 1000:,.1f} ms、每 token 时间 P99 {o.load.tpot_p99_s * 1000:,.1f} ms")
        change: dict[str, Any] = {}
        if o.load.max_rate <= 0:
            fix, fix_zh = f"no rate meets the targets ({at[0]})", f"任何速率都达不到目标（{at[1]}）"
        else:
            per_replica = o.load.max_rate / o.strategy.data_parallel
            needed = math.ceil(rate / per_replica - 1e-9) * (o.count // o.strategy.data_parallel)
            fix = f"{o.count} GPU(s) carry {o.load.max_rate:,.2f} of the {rate:g} requests/s within the targets"
            fix_zh = f"{o.count} 块 GPU 在目标内承载每秒 {o.load.max_rate:,.2f} 个请求（要求 {rate:g} 个）"
            if w.gpu_count is not None and needed > w.gpu_count:
                change = {"gpu_count": needed}
                fix += f"; gpu_count {needed} carries it"
                fix_zh += f"；gpu_count 改为 {needed} 即可"
        reason = o.deciding_finding
        misses.append(Miss(gpu=o.gpu, count=o.count, per_gpu_bytes=o.per_gpu_bytes, usable_bytes=o.usable_bytes,
                           rule=reason.rule if reason else RULE, change=change, fix=fix, fix_zh=fix_zh))
    return misses


CURVE_POINTS = 16  # rates simulated for a latency-against-rate curve


@dataclass(frozen=True)
class Curve:
    """An option's latency against the request rate (over all its replicas): P50 and P99 TTFT and TPOT in seconds
    at each rate, and the knee, the rate where the queue starts to grow (the replicas' capacity)."""

    gpu: str
    count: int
    rates: tuple[float, ...]
    ttft_p50_s: tuple[float, ...]
    ttft_p99_s: tuple[float, ...]
    tpot_p50_s: tuple[float, ...]
    tpot_p99_s: tuple[float, ...]
    knee: float
    asked: float


def curve(answer: Answer) -> Curve | None:
    """The first option's curve (the nearest miss's when none fits), from rates a sixteenth of the way to a quarter
    past the knee (or past the rate asked); None for an answer without a request rate."""
    cache = answer._load
    shown = (answer.options or answer.rejected or (None,))[0]
    if not isinstance(cache, LoadCache) or shown is None or cache.trace is None:
        return None
    s = shown.strategy
    one = cache.replicas.get((shown.gpu, s.tensor_parallel, s.pipeline_parallel))
    if one is None:
        return None
    dp, asked = s.data_parallel, answer.workload.request_rate or 0.0
    knee = one.capacity * dp
    top = max(1.25 * knee, 1.1 * asked)
    rates = tuple(top * (i + 1) / CURVE_POINTS for i in range(CURVE_POINTS))
    figs = [loadsim.figures(loadsim.simulate(one.cost, one.limits, cache.trace, r / dp)) for r in rates]
    return Curve(shown.gpu, shown.count, rates, tuple(f.ttft_p50_s for f in figs), tuple(f.ttft_p99_s for f in figs),
                 tuple(f.tpot_p50_s for f in figs), tuple(f.tpot_p99_s for f in figs), knee, asked)
