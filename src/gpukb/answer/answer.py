"""The Answer: what ask() returns, built from the facts and trace of one session.

Every part is frozen and every sequence a tuple: answers share findings and trace steps with each
other and with the knowledge base's caches, so none may be changed through one answer.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, computed_field, model_validator

from ..core.fmt import Lang, gb, in_lang
from ..core.words import say
from ..engine.trace import Collector, TraceStep
from .bands import FIELDS, Bands, for_option
from .summary import Summary
from .workload import ResolvedWorkload

MEMORY_PARTS = ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead")


class Memory(BaseModel):
    """Bytes, as integers."""

    model_config = ConfigDict(frozen=True)
    weights: int
    gradients: int
    optimizer: int
    activations: int
    kv_cache: int
    overhead: int
    total: int


class Strategy(BaseModel):
    model_config = ConfigDict(frozen=True)
    data_parallel: int
    tensor_parallel: int
    pipeline_parallel: int
    zero_stage: int
    activation_checkpointing: bool
    offload: str
    nodes: int
    # expert parallelism, where a mixture-of-experts run asks for it; left out of the JSON otherwise
    expert_parallel: int = Field(default=1, exclude_if=lambda v: v == 1)
    # context parallelism, where a long-sequence run asks for it; left out of the JSON otherwise
    context_parallel: int = Field(default=1, exclude_if=lambda v: v == 1)

    def describe(self, lang: Lang = "en") -> str:
        """'data parallel 2, tensor parallel 1, ZeRO-1, activation checkpointing' in the language asked."""
        parts = [say(lang, "data_parallel", n=self.data_parallel), say(lang, "tensor_parallel", n=self.tensor_parallel)]
        if self.pipeline_parallel > 1:
            parts.append(say(lang, "pipeline_parallel", n=self.pipeline_parallel))
        if self.expert_parallel > 1:
            parts.append(say(lang, "expert_parallel", n=self.expert_parallel))
        if self.context_parallel > 1:
            parts.append(say(lang, "context_parallel", n=self.context_parallel))
        parts.append(say(lang, "zero", n=self.zero_stage))
        parts.append(say(lang, "checkpointing" if self.activation_checkpointing else "no_recomputation"))
        if self.offload != "none":
            what = {"optimizer": "优化器状态", "optimizer+params": "优化器状态和参数"} if lang == "zh" else {}
            parts.append(say(lang, "offload", what=what.get(self.offload, self.offload)))
        if self.nodes > 1:
            parts.append(say(lang, "nodes", n=self.nodes))
        return say(lang, "sep").join(parts)

    def tag(self, lang: Lang = "en") -> str:
        """'dp8 ZeRO-3 ckpt': the strategy in a table cell, only what differs from one plain GPU."""
        zh = lang == "zh"
        parts = [f"{name}{n}" for name, n in (("dp", self.data_parallel), ("tp", self.tensor_parallel),
                                             ("pp", self.pipeline_parallel), ("ep", self.expert_parallel),
                                             ("cp", self.context_parallel)) if n > 1]
        parts += [f"ZeRO-{self.zero_stage}"] if self.zero_stage else []
        parts += [("重计算" if zh else "ckpt")] if self.activation_checkpointing else []
        if self.offload != "none":
            parts += [(f"卸载{'优化器和参数' if self.offload == 'optimizer+params' else '优化器'}" if zh
                       else f"offload {self.offload}")]
        parts += [(f"{self.nodes} 个节点" if zh else f"{self.nodes} nodes")] if self.nodes > 1 else []
        return " ".join(parts) or ("单卡" if zh else "plain")


# Fields marked exclude=True are the second language and the titles of rules: they are read by
# `explain(lang=...)` and the command line, and kept out of the JSON, whose shape is a contract.
class Finding(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str
    severity: str
    message: str
    rule: str
    claims: tuple[str, ...]
    gpu: str | None = None
    title: str = Field(default="", exclude=True)
    title_zh: str = Field(default="", exclude=True)
    # the step that wrote the message: its Chinese sentence is written when read (explain(lang="zh")),
    # not for every finding of every ask; kept out of the JSON like the other Chinese texts
    _step: TraceStep | None = PrivateAttr(default=None)

    @property
    def message_zh(self) -> str:
        return self._step.sentence_zh if self._step is not None else ""

    def text(self, lang: Lang = "en") -> str:
        return in_lang(lang, self.message, self.message_zh)


class Remedy(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str
    title: str
    effect: str
    effect_bytes: int
    rule: str
    claims: tuple[str, ...]
    gpu: str | None = None
    title_zh: str = Field(default="", exclude=True)
    effect_zh: str = Field(default="", exclude=True)

    def heading(self, lang: Lang = "en") -> str:
        return in_lang(lang, self.title, self.title_zh)

    def effect_text(self, lang: Lang = "en") -> str:
        return in_lang(lang, self.effect, self.effect_zh)


class RlEstimate(BaseModel):
    """An RL step on one option (tasks grpo, ppo, dpo; gpukb.estimate.rl): seconds per phase, bytes per GPU per role.
    Only the phases and roles the run has are listed."""

    model_config = ConfigDict(frozen=True)
    step_time_s: float
    phases: dict[str, float]  # generation, reference, reward, critic, training, sync
    memory_by_role: dict[str, int]  # policy, reference, reward, critic, rollout: bytes per GPU that holds it
    placement: str  # colocated | split
    trainer_gpus: int
    rollout_gpus: int  # split: GPUs of the rollout engine (0 when colocated)
    bound: str | None  # the phase that takes longest


# the knowledge base's error bands, derived when first called (gpukb.estimate.validation.bands_of)
BandSource = Callable[[], Bands]


class ErrorBand(BaseModel):
    """How far a predicted number may be off, from the published measurements of the same quantity
    (gpukb.answer.bands): the true value lies in [low, high] for `coverage` of the `points` measured runs.
    low and high are None when fewer runs than policy band-min-points measured it: no band is invented."""

    model_config = ConfigDict(frozen=True)
    low: float | None
    high: float | None
    coverage: float
    points: int
    # which points drew it: 'multi-node', 'single-node', 'batch-1', 'batched', or '' for all of the field's
    regime: str = Field(default="", exclude=True)


class Load(BaseModel):
    """Serving under load (workload request_rate): the option's latency percentiles at the rate, in seconds, the
    highest rate its replicas carry within the targets (requests/s), and the share of their capacity the rate uses."""

    model_config = ConfigDict(frozen=True)
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    max_rate: float
    utilisation: float


class Option(BaseModel):
    model_config = ConfigDict(frozen=True, ignored_types=(cached_property,))
    gpu: str
    count: int
    fits: bool
    per_gpu_bytes: int
    usable_bytes: int
    memory: Memory
    strategy: Strategy
    tokens_per_s: float | None
    time_to_train_s: float | None
    efficiency: float | None
    mfu: float | None = None  # training: model FLOPs utilisation (the model's FLOPs, not recomputation)
    # training: the share of wall-clock that trains (interruptions, restarts, checkpoint writes; rec.rank.training),
    # already in time_to_train_s, gpu_hours, cost_usd and energy_kwh
    goodput: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # training: the best MFU published runs on at least this many GPUs report (policies published-mfu-*-gpus); the
    # estimate and its bands never claim more (rec.rank.training)
    mfu_ceiling: float | None = Field(default=None, exclude_if=lambda v: v is None)
    ttft_s: float | None = None  # inference: time to the first token of one prompt
    tpot_s: float | None = None  # inference: time per output token of one stream
    max_concurrency: int | None = None  # inference: most sequences per replica at the requested context
    max_context: int | None = None  # inference: longest context per sequence at the requested concurrency
    launch: dict[str, str] | None = None  # inference: engine name -> command line (gpukb.answer.launch)
    # the system (kb/systems) whose nodes the plan rents, and the CPU memory of one of them; None where no system
    # holds the GPU
    system: str | None = None
    host_memory_bytes: int | None = None
    # at the lowest dated cloud on-demand price of the GPU (rec.cost.*; the source is in the trace)
    usd_per_hour: float | None = None
    cost_usd: float | None = None  # training: to train the workload's tokens
    usd_per_million_tokens: float | None = None  # inference: per million generated tokens
    # RL post-training: what one step costs on the rented nodes (usd_per_hour x step time); left out otherwise
    usd_per_step: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # training with tokens: GPUs x hours to train them (rec.rank.training); left out of the JSON otherwise
    gpu_hours: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # training with a deadline (deadline_days, or the pre-training horizon): whether this option trains in time
    meets_deadline: bool | None = Field(default=None, exclude_if=lambda v: v is None)
    # training with tokens: facility energy and its emissions at the workload's grid (rec.energy.training)
    energy_kwh: float | None = None
    co2_kg: float | None = None
    score: float
    tier: int
    branch: str | None
    findings: tuple[Finding, ...]
    trace: tuple[TraceStep, ...]
    # inference with request_rate: percentiles at the rate, max_rate, utilisation (gpukb.estimate.load)
    load: Load | None = Field(default=None, exclude_if=lambda v: v is None)
    # RL post-training (tasks grpo, ppo, dpo): the step's phases and the memory of each model; left out otherwise
    rl: RlEstimate | None = Field(default=None, exclude_if=lambda v: v is None)

    # what the error bands are drawn from (the knowledge base's bands, the task, the decode batch): they are
    # made when first read (JSON, the command line, the site), so an ask that reads none pays nothing for them,
    # and a knowledge base whose bands were never read (no packaged copy holds them) never derives them
    _banding: tuple[BandSource, str, int] | None = PrivateAttr(default=None)
    _loaded_bands: dict[str, ErrorBand] | None = PrivateAttr(default=None)  # an answer read back from its JSON

    @classmethod
    def read(cls, data: dict[str, Any]) -> Option:
        """An option read back from JSON keeps the bands it was written with (they are computed, not inputs).
        A classmethod called by Answer's reader, not a validator: the ask builds dozens of options, and a
        validator hook on each would cost every ask what only reading JSON needs."""
        written = data.pop("bands", None) or {}
        option = cls.model_validate(data)
        option._loaded_bands = {name: ErrorBand.model_validate(band) for name, band in written.items()}
        return option

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def bands(self) -> dict[str, ErrorBand]:
        """Predicted field name -> its error band from the published measurements (gpukb.answer.bands)."""
        if self._banding is None:
            return self._loaded_bands or {}
        source, task, batch_size = self._banding
        return error_bands(source(), self, task, batch_size)

    @cached_property
    def deciding_finding(self) -> Finding | None:
        """For a rejected option, the finding that rejects it (the first error); else the first finding."""
        return next((f for f in self.findings if f.severity == "error"), self.findings[0] if self.findings else None)


class Answer(BaseModel):
    model_config = ConfigDict(frozen=True)
    # The text renderer (gpukb.answer.answer_text.render_answer), set by the package (gpukb/__init__.py): it
    # reads an Answer, so this module never imports it.
    renderer: ClassVar[Callable[[Answer, Lang], str]]
    kb_version: str
    kb_hash: str
    workload: ResolvedWorkload
    memory: Memory
    options: tuple[Option, ...]
    rejected: tuple[Option, ...]
    findings: tuple[Finding, ...]
    remedies: tuple[Remedy, ...]
    trace: tuple[TraceStep, ...]
    # the decision first: fastest, cheapest, fewest GPUs, the article's pick; or, when nothing fits, the
    # nearest misses and what makes them fit (gpukb.answer.summary). Set by ask() once the options are ranked.
    summary: Summary | None = None
    # the replica's memory fact and the workload fact its session asserted: gpukb.estimate.rl plans several
    # models on the same GPUs from them; not part of the JSON
    _replica: tuple[dict[str, Any], dict[str, Any]] | None = PrivateAttr(default=None)
    # under load: the replicas simulated (gpukb.estimate.load.LoadCache), for the latency-against-rate curve
    _load: Any = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _read_options(cls, data: Any) -> Any:
        """Options read back from JSON (dicts carrying their bands) become Options that keep those bands."""
        if isinstance(data, dict):
            for name in ("options", "rejected"):
                if any(isinstance(o, dict) for o in data.get(name) or ()):
                    data = {**data, name: tuple(Option.read(dict(o)) if isinstance(o, dict) else o for o in data[name])}
        return data

    @property
    def best(self) -> Option | None:
        return self.options[0] if self.options else None

    def explain(self, lang: Lang = "en") -> str:
        """The reasoning chain for the best option and why not the others, in English or Chinese (`"zh"`)."""
        return Answer.renderer(self, lang)


def _memory(fields: dict[str, Any], total: float | None = None) -> Memory:
    parts = {p: round(fields.get(p, 0)) for p in MEMORY_PARTS}
    return Memory(**parts, total=round(total if total is not None else sum(parts.values())))


def _finding(c: Collector, fact: dict[str, Any]) -> Finding:
    step = c.step_of(fact)
    assert step is not None
    finding = Finding(kind=fact["finding"], severity=fact["severity"], message=step.sentence, rule=step.rule,
                      claims=[cl.id for cl in step.claims], gpu=fact.get("gpu") or None,
                      title=step.title, title_zh=step.title_zh)
    finding._step = step
    return finding


def _lineage(c: Collector, facts: list[dict[str, Any]]) -> list[TraceStep]:
    """Every step that contributed to `facts`, followed back through the facts each step matched, in
    firing order. A plain walk: each step is visited once per option, as it is listed once per option."""
    numbers: set[int] = set()
    todo = [fact["by"] for fact in facts if fact["by"]]
    while todo:  # iterative: a long chain of rules must not hit Python's recursion limit
        n = todo.pop()
        if n not in numbers:
            numbers.add(n)
            todo += [by for fact in c.matched[n - 1].values() if (by := fact["by"])]
    return [c.steps[n - 1] for n in sorted(numbers)]


_SEVERITY = {"error": 0, "warning": 1, "info": 2}


def _remedy(c: Collector, fact: dict[str, Any]) -> Remedy:
    step = c.step_of(fact)
    assert step is not None
    if fact.get("step_time_after") is not None:
        change = f"{fact['step_time_before']:,.1f} s → {fact['step_time_after']:,.1f} s"
        effect = f"RL step time {change}" + (f" on {fact['gpu']}" if fact.get("gpu") else "")
        effect_zh = (f"{fact['gpu']} 上" if fact.get("gpu") else "") + f"RL 每步时间 {change}"
    elif fact.get("efficiency_after") is not None:
        change = f"{fact['efficiency_before']:.0%} → {fact['efficiency_after']:.0%}"
        effect = f"scaling efficiency {change}" + (f" on {fact['gpu']}" if fact.get("gpu") else "")
        effect_zh = (f"{fact['gpu']} 上" if fact.get("gpu") else "") + f"扩展效率 {change}"
    elif fact.get("gpu"):  # a change to that GPU type's plan: what each of its GPUs holds less
        saved = gb(fact.get("effect_bytes", 0))
        effect, effect_zh = f"saves about {saved} per GPU on {fact['gpu']}", f"{fact['gpu']} 上每块 GPU 约节省 {saved}"
    else:
        saved = gb(fact.get("effect_bytes", 0))
        effect, effect_zh = f"saves about {saved}", f"约节省 {saved}"
    return Remedy(id=fact["remedy"], title=fact["title"], effect=effect, effect_bytes=round(fact.get("effect_bytes", 0)),
                  rule=step.rule, claims=[cl.id for cl in step.claims], gpu=fact.get("gpu") or None,
                  title_zh=fact.get("title_zh", ""), effect_zh=effect_zh)


def _improves(fact: dict[str, Any]) -> bool:
    if fact.get("step_time_after") is not None:
        return fact["step_time_after"] < fact["step_time_before"]
    if fact.get("efficiency_after") is not None:
        return fact["efficiency_after"] > fact["efficiency_before"]
    return fact.get("effect_bytes", 0) > 0


DEFAULT_TIER = 1  # options no decision-tree branch prefers; a preferred option has tier 0 (marked, never ranked up)


def _late(o: Option) -> bool:
    """With a deadline, options that miss it rank after those that meet it, whatever the objective."""
    return o.meets_deadline is False


def option_sort_key(o: Option, price: float) -> tuple[Any, ...]:
    """objective 'speed': effective tokens/s first (= shorter time to train), then fewer GPUs, then tokens/s
    per dollar where a dated price is known, then the id for a stable order. The article's pick (tier 0)
    is marked, not ranked above faster options. With a deadline each GPU type is sized to just meet it, so
    the times are alike: what differs is each GPU's speed, and the fewest GPU-hours come first."""
    per_dollar = o.score / (o.count * price) if price else 0.0
    effort = o.gpu_hours if o.meets_deadline and o.gpu_hours else 0.0
    return (_late(o), effort, -o.score, o.count, -per_dollar, o.gpu)


def gpus_sort_key(o: Option, price: float) -> tuple[Any, ...]:
    """objective 'gpus': the fewest GPUs first, then the 'speed' order."""
    return (_late(o), o.count, *option_sort_key(o, price)[1:])


def latency_sort_key(o: Option, price: float) -> tuple[Any, ...]:
    """With latency targets (ttft_ms, tpot_ms) every option left meets them: the fewest GPUs first, then the
    usual order (effective tokens/s, tokens/s per dollar, the id)."""
    return gpus_sort_key(o, price)


def cost_sort_key(o: Option, usd_per_million_tokens: float | None) -> tuple[Any, ...]:
    """objective 'cost': cheapest per token first (the same order as the cost to train a token count),
    options without a dated cloud price last; then effective tokens/s, fewer GPUs, the id."""
    priced = usd_per_million_tokens is not None
    return (_late(o), not priced, usd_per_million_tokens if priced else 0.0, -o.score, o.count, o.gpu)


CEILED = ("mfu", "tokens_per_s")  # training fields whose bands stop at the published MFU ceiling (Option.mfu_ceiling)


def error_bands(bands: Bands, option: Option, task: str, batch_size: int) -> dict[str, ErrorBand]:
    """An option's predicted numbers with their bands, in the numbers' own units."""
    values = {name: getattr(option, name) for name in FIELDS}
    out = {}
    for name, band in for_option(bands, values, task, option.strategy.nodes, batch_size):
        low, high = band.around(values[name]) if band.banded else (None, None)
        if high is not None and name in CEILED and option.mfu_ceiling and option.mfu:
            # no band reaches past what published runs at this scale reach: the MFU ceiling, and the
            # throughput it allows (the estimate is held to it already, so the band still holds its estimate)
            high = min(high, values[name] * option.mfu_ceiling / option.mfu)
        out[name] = ErrorBand(low=low, high=high, coverage=band.coverage, points=band.points, regime=band.regime)
    return out


def _per_million(cost: dict[str, Any], load: dict[str, Any] | None, workload: ResolvedWorkload) -> float:
    """Dollars per million output tokens: at the fixed batch's throughput, or under load at the request rate (the
    replicas are paid for whether busy or not)."""
    if load is None or not workload.request_rate or not workload.output_len:
        return cost["usd_per_million_tokens"]
    return cost["usd_per_hour"] / (workload.request_rate * workload.output_len * 3600) * 1e6


def build_answer(c: Collector, kb_version: str, kb_hash: str, workload: ResolvedWorkload,
                 memory: dict[str, Any], prices: dict[str, float],
                 launch: Callable[[Strategy, dict[str, Any], int | None], dict[str, str]] | None = None,
                 largest_cluster: int = 0, bands: BandSource | None = None) -> Answer:
    of_kind: dict[str, list[dict[str, Any]]] = {}
    for fact in c.facts.values():
        of_kind.setdefault(fact["kind"], []).append(fact)
    findings = sorted(of_kind.get("finding", []),
                      key=lambda f: (_SEVERITY[f["severity"]], f.get("gpu", ""), f["finding"], f["fid"]))
    per_gpu: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for kind in ("estimate", "comm", "rank", "preference", "remedy", "capacity", "cost", "energy", "load"):
        for fact in of_kind.get(kind, []):
            per_gpu.setdefault(fact.get("gpu") or "", {}).setdefault(kind, []).append(fact)
    finding_of = {f["fid"]: _finding(c, f) for f in findings}  # frozen models: options share them with the answer
    by_gpu: dict[str, list[dict[str, Any]]] = {}
    for f in findings:
        by_gpu.setdefault(f.get("gpu") or "", []).append(f)
    options, rejected = [], []
    deadline_s = (workload.deadline_days or 0) * 86400 if workload.task != "inference" else 0
    per_token: dict[str, float] = {}  # dollars per million tokens, for objective 'cost'
    for plan in of_kind.get("plan", []):
        gpu = plan["gpu"]
        facts = per_gpu.get(gpu, {})
        rank = (facts.get("rank") or [None])[0]
        capacity = (facts.get("capacity") or [None])[0]
        cost = (facts.get("cost") or [None])[0]
        energy = (facts.get("energy") or [None])[0]
        load = (facts.get("load") or [None])[0]
        own = by_gpu.get(gpu, [])
        fits = plan["fits"] and not any(f.get("rejects") for f in own)
        related = [plan, *own, *(f for kind in ("estimate", "comm", "rank", "preference", "capacity", "cost",
                                                "energy", "load")
                                 for f in facts.get(kind, []))]
        strategy = Strategy(data_parallel=plan["dp"], tensor_parallel=plan["tp"], pipeline_parallel=plan["pp"],
                            zero_stage=plan["zero_stage"], activation_checkpointing=plan["checkpointing"],
                            offload=plan["offload"], nodes=plan["nodes"], expert_parallel=plan["ep"],
                            context_parallel=plan["cp"])
        values = dict(
            gpu=gpu, count=plan["count"], fits=fits, per_gpu_bytes=round(plan["per_gpu_bytes"]),
            system=plan["system"] or None,
            # the rented node's, not the reference system's the plan was laid out on (a 2-GPU pod is not a DGX)
            host_memory_bytes=round(c.kb.systems[plan["system"]].host_memory) if plan["system"] else None,
            usable_bytes=round(plan["usable_bytes"]), memory=_memory(plan, plan["per_gpu_bytes"]),
            strategy=strategy,
            launch=(launch(strategy, plan, capacity["max_concurrency"] if capacity else None) or None) if launch else None,
            tokens_per_s=rank["tokens_per_s"] if rank else None,
            time_to_train_s=(rank.get("time_to_train_s") or None) if rank else None,
            efficiency=rank.get("efficiency") if rank else None,
            mfu=rank.get("mfu") if rank else None,
            goodput=rank.get("goodput") if rank else None,
            mfu_ceiling=rank.get("mfu_ceiling") if rank else None,
            ttft_s=rank.get("ttft_s") if rank else None,
            tpot_s=rank.get("tpot_s") if rank else None,
            max_concurrency=capacity["max_concurrency"] if capacity else None,
            max_context=capacity["max_context"] if capacity else None,
            usd_per_hour=cost["usd_per_hour"] if cost else None,
            cost_usd=(cost["cost_usd"] or None) if cost and workload.task != "inference" else None,
            usd_per_million_tokens=_per_million(cost, load, workload) if cost and workload.task == "inference" else None,
            load=Load(**{name: load[name] for name in Load.model_fields}) if load else None,
            gpu_hours=(rank.get("gpu_hours") or None) if rank else None,
            meets_deadline=(rank["time_to_train_s"] <= deadline_s if rank and fits and rank.get("time_to_train_s")
                            else None) if deadline_s else None,
            energy_kwh=energy["energy_kwh"] if energy else None,
            co2_kg=energy["co2_kg"] if energy else None,
            score=rank["score"] if rank and fits else 0.0,
            tier=min((p["tier"] for p in facts.get("preference", [])), default=DEFAULT_TIER),
            branch=min(((p["tier"], p["branch"]) for p in facts.get("preference", [])), default=(0, None))[1],
            findings=[finding_of[f["fid"]] for f in own],
            trace=_lineage(c, related),
        )
        option = Option(**values)
        if bands is not None and fits:
            option._banding = (bands, workload.task, workload.batch_size)
        (options if fits else rejected).append(option)
        if cost:
            per_token[gpu] = option.usd_per_million_tokens or cost["usd_per_million_tokens"]
    if workload.objective == "cost":
        options.sort(key=lambda o: cost_sort_key(o, per_token.get(o.gpu)))
    elif workload.objective == "gpus":
        options.sort(key=lambda o: gpus_sort_key(o, prices.get(o.gpu, 0.0)))
    elif workload.task == "inference" and (workload.ttft_ms or workload.tpot_ms or workload.request_rate):
        options.sort(key=lambda o: latency_sort_key(o, prices.get(o.gpu, 0.0)))
    else:
        options.sort(key=lambda o: option_sort_key(o, prices.get(o.gpu, 0.0)))
    if largest_cluster:  # clusters larger than any built (policy largest-cluster) follow, whatever their speed
        options.sort(key=lambda o: o.count > largest_cluster)
    rejected.sort(key=lambda o: o.gpu)
    remedies: dict[tuple[str, str], Remedy] = {}
    best = options[0].gpu if options else ""
    for fact in sorted(of_kind.get("remedy", []), key=lambda r: (-r.get("effect_bytes", 0), r["remedy"], r.get("gpu", ""))):
        # GPU-specific remedies are listed for the best option only; general ones once; one that changes
        # nothing (no bytes saved, no efficiency gained) is no remedy
        if (fact.get("gpu") and fact["gpu"] != best) or not _improves(fact):
            continue
        key = (fact["remedy"], fact.get("gpu") or "")
        remedies.setdefault(key, _remedy(c, fact))
    replica = dict(memory)
    if workload.activation_checkpointing:  # pinned on: the replica is the checkpointed one
        replica["activations"] = memory["activations_checkpointed"]
    return Answer(
        kb_version=kb_version, kb_hash=kb_hash, workload=workload, memory=_memory(replica, memory["total"]),
        options=options, rejected=rejected, findings=[finding_of[f["fid"]] for f in findings],
        remedies=list(remedies.values()), trace=list(c.steps),
    )
