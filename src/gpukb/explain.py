"""Plain-text renderings of an Answer's reasoning: the chain for the best option, and why not the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .trace import TraceStep
from .units import gb

if TYPE_CHECKING:
    from .answer import Answer, Option


def _number(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.4g}"


def render_step(step: TraceStep, indent: str = "  ") -> list[str]:
    lines = [f"{indent}[{step.step}] {step.rule} ({step.stage}) — {step.title}", f"{indent}    {step.sentence}"]
    for value in step.values:
        if value["expr"]:
            lines.append(f"{indent}    {value['name']} = {value['expr']} = {_number(value['value'])}")
    for claim in step.claims:
        lines.append(f"{indent}    rests on {claim.id} [{claim.verdict}] 「{claim.quote_zh}」")
    if step.sources:
        lines.append(f"{indent}    sources: {', '.join(step.sources)}")
    return lines


def describe_strategy(option: Option) -> str:
    """'data parallel 2, tensor parallel 1, ZeRO-1, activation checkpointing' — plain text."""
    s = option.strategy
    parts = [f"data parallel {s.data_parallel}", f"tensor parallel {s.tensor_parallel}"]
    if s.pipeline_parallel > 1:
        parts.append(f"pipeline parallel {s.pipeline_parallel}")
    parts.append(f"ZeRO-{s.zero_stage}")
    parts.append("activation checkpointing" if s.activation_checkpointing else "no recomputation")
    if s.offload != "none":
        parts.append(f"offload {s.offload} to CPU")
    if s.nodes > 1:
        parts.append(f"{s.nodes} nodes")
    return ", ".join(parts)


def render_answer(answer: Answer) -> str:
    w = answer.workload
    out = [f"gpukb {answer.kb_version} (kb {answer.kb_hash[:12]}) — {w.model}, {w.task}, {w.precision}"
           + (f", {w.optimizer}" if w.optimizer else "")]
    m = answer.memory
    out.append(f"One replica before sharding: weights {gb(m.weights)}, gradients {gb(m.gradients)}, optimizer "
               f"{gb(m.optimizer)}, activations {gb(m.activations)}, KV cache {gb(m.kv_cache)}, overhead "
               f"{gb(m.overhead)} = {gb(m.total)} (GB = 1e9 bytes).")
    for note in w.assumptions:
        out.append(f"Assumption: {note}")
    best = answer.best
    if best is None:
        out.append("\nNo candidate GPU type can run this workload within the limits given.")
    else:
        out.append(f"\nBest option: {best.count} x {best.gpu} — {describe_strategy(best)}; "
                   f"{gb(best.per_gpu_bytes)} of {gb(best.usable_bytes)} usable per GPU.")
        out.append("Why:")
        for step in best.trace:
            out += render_step(step)
    if answer.rejected:
        out.append("\nWhy not:")
        for option in answer.rejected:
            reasons = [f for f in option.findings if f.severity == "error"] or option.findings
            for finding in reasons[:1]:
                out.append(f"  {option.gpu}: {finding.message} [{finding.rule}]")
    general = [f for f in answer.findings if f.gpu is None]
    if general:
        out.append("\nFindings:")
        out += [f"  {f.severity}: {f.message} [{f.rule}]" for f in general]
    if answer.remedies:
        out.append("\nRemedies:")
        out += [f"  {r.title}: {r.effect} [{r.rule}]" for r in answer.remedies]
    return "\n".join(out)
