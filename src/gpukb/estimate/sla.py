"""Latency targets (ttft_ms, tpot_ms): the fewest GPUs that meet them.

Memory gives each GPU type its fewest GPUs; the SLA rules (bottleneck.sla.*) then reject the options
whose time to the first token or per output token is too long. For those, more tensor parallelism
splits prefill and decode over more GPUs, so the ask is repeated with the next tensor-parallel size
(inside the scale-up domain first, then over PCIe inside the node) until the targets are met or no larger size
exists. A GPU type that never meets them keeps its closest try, and when no GPU type meets them the
answer says so in one finding, with the closest options and what they reach.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..answer.workload import ResolvedWorkload
from ..engine.trace import Collector, Value
from .planner import Raise, next_tensor_parallel

if TYPE_CHECKING:
    from ..answer.answer import Answer, Option

SLA_RULES = "bottleneck.sla."  # the rules that reject an option for its latency alone
# workload target (ms) -> the option's figure (s), and the finding kind a miss of it is
TARGETS = (("ttft_ms", "ttft_s", "compute"), ("tpot_ms", "tpot_s", "memory_bandwidth"))
SHOWN = 3  # closest options named when none meets the targets

Run = Callable[[dict[str, Raise], "Callable[[Collector], None] | None"], "Answer"]


@dataclass(frozen=True)
class Reached:
    """What one tensor-parallel size reaches on one GPU type."""

    tp: int
    count: int
    ttft_s: float
    tpot_s: float


def has_targets(w: ResolvedWorkload) -> bool:
    return w.task == "inference" and bool(w.ttft_ms or w.tpot_ms)


def miss(w: ResolvedWorkload, ttft_s: float, tpot_s: float) -> float:
    """How far the worse of the two figures is from its target: 1.0 meets it exactly, 2.0 is twice as slow."""
    figures = {"ttft_s": ttft_s, "tpot_s": tpot_s}
    return max(figures[field] * 1000 / target for name, field, _ in TARGETS if (target := getattr(w, name)))


def _latency_only(option: Option) -> bool:
    """Rejected by the latency rules and nothing else, with figures to compare (only a plan that fits has them)."""
    rules = {f.rule for f in option.findings if f.severity == "error"}
    return (option.ttft_s is not None and option.tpot_s is not None and bool(rules)
            and all(r.startswith(SLA_RULES) for r in rules))


def _targets_text(w: ResolvedWorkload) -> str:
    return ", ".join(f"{name} {getattr(w, name):g}" for name, _, _ in TARGETS if getattr(w, name))


def _reached_text(r: Reached, zh: bool = False) -> str:
    if zh:
        return f"tp={r.tp}（{r.count} 块 GPU）首 token {r.ttft_s * 1000:,.1f} ms、每 token {r.tpot_s * 1000:,.2f} ms"
    return f"tp={r.tp} ({r.count} GPUs) reaches ttft {r.ttft_s * 1000:,.1f} ms, tpot {r.tpot_s * 1000:,.2f} ms"


def _raise(w: ResolvedWorkload, tp: int, tried: list[Reached], closest: bool) -> Raise:
    smaller = [r for r in tried if r.tp != tp]
    en = "; ".join(_reached_text(r) for r in smaller)
    zh = "；".join(_reached_text(r, zh=True) for r in smaller)
    if closest:
        return Raise(tp, f"No tensor-parallel size meets {_targets_text(w)}: tp={tp} is the closest ({en}).",
                     f"没有任何张量并行规模能达到 {_targets_text(w)}：tp={tp} 最接近（{zh}）。")
    return Raise(tp, f"Tensor parallelism raised to {tp} to meet {_targets_text(w)}: {en}.",
                 f"为达到 {_targets_text(w)}，张量并行提高到 {tp}：{zh}。")


def fewest_meeting(w: ResolvedWorkload, run: Run, widest: dict[str, int]) -> Answer:
    """Ask with the memory plan, then raise the tensor-parallel size of each GPU type that misses the
    targets, one size at a time, until it meets them or has no larger size."""
    raised: dict[str, Raise] = {}
    tried: dict[str, list[Reached]] = {}
    answer = run(raised, None)
    while True:
        more: dict[str, int] = {}
        for option in answer.rejected:
            if not _latency_only(option):
                continue
            assert option.ttft_s is not None and option.tpot_s is not None
            tp = option.strategy.tensor_parallel
            reached = tried.setdefault(option.gpu, [])
            if any(r.tp == tp for r in reached):
                # the plan kept a size it had already: it could not take the larger one (a system without a
                # network boxes it in a node of fewer GPUs), so no larger size is tried either. Raising it
                # again re-ran the whole ask for ever, each time naming one more try in its sentences.
                continue
            reached.append(Reached(tp, option.count, option.ttft_s, option.tpot_s))
            if (bigger := next_tensor_parallel(w, tp, widest[option.gpu])) is not None:
                more[option.gpu] = bigger
        if not more:
            break
        raised.update({gpu: _raise(w, tp, tried[gpu], closest=False) for gpu, tp in more.items()})
        answer = run(raised, None)
    unmet = [o for o in answer.rejected if _latency_only(o)]
    if not unmet:
        return answer
    # the GPU types that never meet the targets keep their closest try (the fewest GPUs among equals)
    for option in unmet:
        best = min(tried[option.gpu], key=lambda r: (miss(w, r.ttft_s, r.tpot_s), r.count))
        if best.tp == tried[option.gpu][0].tp:
            raised.pop(option.gpu, None)
        else:
            raised[option.gpu] = _raise(w, best.tp, tried[option.gpu], closest=True)
    final = run(raised, None)
    if final.options:
        return final
    closest = sorted((o for o in final.rejected if _latency_only(o)),
                     key=lambda o: (miss(w, o.ttft_s or 0.0, o.tpot_s or 0.0), o.count, o.gpu))[:SHOWN]
    return run(raised, lambda c: record_unmet(c, w, closest)) if closest else final


def record_unmet(c: Collector, w: ResolvedWorkload, closest: list[Option]) -> None:
    """One finding for the whole answer: no option meets the targets; the closest and what they reach."""
    ranks = {r["gpu"]: r for r in c.of_kind("rank")}
    inputs = {f"r{i}": ranks[o.gpu] for i, o in enumerate(closest) if o.gpu in ranks}
    if not inputs:
        return
    best = closest[0]
    assert best.ttft_s is not None and best.tpot_s is not None
    worst = max(((best.ttft_s if f == "ttft_s" else best.tpot_s) * 1000 / getattr(w, name), kind, name)
                for name, f, kind in TARGETS if getattr(w, name))
    shown = [f"{o.gpu} x{o.count} (tp={o.strategy.tensor_parallel}): ttft {(o.ttft_s or 0) * 1000:,.1f} ms, "
             f"tpot {(o.tpot_s or 0) * 1000:,.2f} ms" for o in closest]
    shown_zh = [f"{o.gpu} x{o.count}（tp={o.strategy.tensor_parallel}）：首 token {(o.ttft_s or 0) * 1000:,.1f} ms，"
                f"每 token {(o.tpot_s or 0) * 1000:,.2f} ms" for o in closest]
    targets = _targets_text(w)
    fields = {"finding": worst[1], "severity": "error", "value": round(worst[0], 6),
              "limit": float(getattr(w, worst[2]))}
    values = [Value(name="miss", value=fields["value"], expr=f"{worst[2].removesuffix('_ms')}_s x 1000 / {worst[2]}"),
              Value(name="limit", value=fields["limit"], expr=None)]
    c.record(rule="planner.sla-unmet@1", stage="bottlenecks",
             title="No option meets the latency targets: the closest ones and what they reach",
             inputs=inputs, values=values, claims=(), sources=["vllm-distributed-serving-docs"],
             sentence=f"No option meets {targets}, even with tensor parallelism raised to the largest size one node, "
                      f"the attention heads and gpu_count allow. Closest: {'; '.join(shown)}. "
                      f"The closest misses {worst[2]} by a factor of {worst[0]:.2f}: relax {worst[2]}, "
                      "shorten prompt_len or lower batch_size.",
             title_zh="没有方案达到延迟目标：最接近的方案及其达到的数值",
             sentence_zh=f"没有任何方案能达到 {targets}，即使张量并行已提高到单个节点、注意力头数和 gpu_count 允许的上限。"
                         f"最接近的：{'；'.join(shown_zh)}。最接近的方案在 {worst[2]} 上差 {worst[0]:.2f} 倍："
                         f"放宽 {worst[2]}、缩短 prompt_len 或降低 batch_size。",
             outputs=[("finding", fields)])

