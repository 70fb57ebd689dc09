"""Plain-text renderings of an Answer's reasoning: the chain for the best option, and why not the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.fmt import Lang, gb
from ..core.fmt import number as fmt_number
from ..core.words import say, term
from ..engine.trace import TraceStep
from .summary import per_million_tokens

if TYPE_CHECKING:
    from .answer import Answer, Option


def render_step(step: TraceStep, indent: str = "  ", lang: Lang = "en", number: int | None = None) -> list[str]:
    """One trace step; `number` replaces the step's number in the whole ask (a chain shows 1, 2, 3, ...)."""
    zh = lang == "zh"
    title = (step.title_zh or step.title) if zh else step.title
    sentence = (step.sentence_zh or step.sentence) if zh else step.sentence
    shown = step.step if number is None else number
    stage = f"（{term(lang, step.stage)}）" if lang == "zh" else f" ({step.stage})"
    lines = [f"{indent}[{shown}] {step.rule}{stage} — {title}", f"{indent}    {sentence}"]
    for value in step.values:
        if value["expr"]:
            lines.append(f"{indent}    {value['name']} = {value['expr']} = {fmt_number(value['value'])}")
    for claim in step.claims:
        # a rule that cites a contradicted claim does so to refute it, not to rest on it
        relation = say(lang, "refutes" if claim.verdict == "contradicted" else "rests_on")
        lines.append(f"{indent}    {relation} {claim.id} [{term(lang, claim.verdict)}] 「{claim.quote_zh}」")
    if step.sources:
        lines.append(f"{indent}    {say(lang, 'sources')}{say(lang, 'colon')}{', '.join(step.sources)}")
    return lines


def why_lower(option: Option, best: Option, lang: Lang = "en", objective: str = "speed") -> str:
    """Why an option that fits ranks below the best one, by the ranking's own order of keys (answer.*_sort_key)."""
    if option.meets_deadline is False and best.meets_deadline:
        return say(lang, "late", best=best.gpu)
    if objective == "cost":
        mine, theirs = per_million_tokens(option), per_million_tokens(best)
        if mine is None:
            return say(lang, "unpriced", best=best.gpu)
        if theirs is not None and mine > theirs:
            return say(lang, "dearer", usd=f"{mine:,.2f}", best_usd=f"{theirs:,.2f}", best=best.gpu)
    if objective == "gpus" and option.count > best.count:
        return say(lang, "more_gpus", count=option.count, best_count=best.count, best=best.gpu)
    if option.gpu_hours and best.gpu_hours and best.meets_deadline and option.gpu_hours > best.gpu_hours:
        return say(lang, "more_gpu_hours", hours=f"{option.gpu_hours:,.0f}", best_hours=f"{best.gpu_hours:,.0f}",
                   best=best.gpu)
    if option.score < best.score:
        return say(lang, "slower", speed=f"{option.score:,.0f}", best_speed=f"{best.score:,.0f}", best=best.gpu)
    if option.count > best.count:
        return say(lang, "more_gpus", count=option.count, best_count=best.count, best=best.gpu)
    return say(lang, "tie", best=best.gpu)


def _rule_producing(option: Option, kind: str) -> str:
    """The rule that asserted the option's fact of this kind (`rank`, `preference`), or ''."""
    return next((step.rule for step in reversed(option.trace) if any(f" {kind} " in f for f in step.produced)), "")


def render_answer(answer: Answer, lang: Lang = "en") -> str:
    w = answer.workload
    sep, colon = say(lang, "sep"), say(lang, "colon")
    out = [f"gpukb {answer.kb_version} (kb {answer.kb_hash[:12]}) — {w.model}{sep}{term(lang, w.task)}{sep}{w.precision}"
           + (f"{sep}{w.optimizer}" if w.optimizer else "")]
    m = answer.memory
    out.append(say(lang, "one_replica", weights=gb(m.weights), gradients=gb(m.gradients), optimizer=gb(m.optimizer),
                   activations=gb(m.activations), kv_cache=gb(m.kv_cache), overhead=gb(m.overhead), total=gb(m.total)))
    for note in w.assumptions_in(lang):
        out.append(say(lang, "assumption", note=note))
    if answer.summary is not None:  # the decision first, then the reasoning behind it
        head, *rest = answer.summary.lines(lang)
        out += ["", head, *(f"  {line}" for line in rest)]
    best = answer.best
    if best is None:
        out.append("\n" + say(lang, "no_option"))
    else:
        out.append("\n" + say(lang, "best", count=best.count, gpu=best.gpu, strategy=best.strategy.describe(lang),
                              per_gpu=gb(best.per_gpu_bytes), usable=gb(best.usable_bytes)))
        out.append(say(lang, "why"))
        for number, step in enumerate(best.trace, 1):
            out += render_step(step, lang=lang, number=number)
    if answer.rejected:
        out.append("\n" + say(lang, "why_not"))
        for option in answer.rejected:
            if (finding := option.deciding_finding) is not None:
                out.append(f"  {option.gpu}{colon}{finding.text(lang)} [{finding.rule}]")
    if best is not None and len(answer.options) > 1:
        out.append("\n" + say(lang, "lower_ranked"))
        for option in answer.options[1:]:
            rule = _rule_producing(option, "rank")
            out.append(f"  {option.gpu}{colon}{why_lower(option, best, lang, w.objective)}" + (f" [{rule}]" if rule else ""))
    general = [f for f in answer.findings if f.gpu is None]
    if general:
        out.append("\n" + say(lang, "findings"))
        out += [f"  {term(lang, f.severity)}{colon}{f.text(lang)} [{f.rule}]" for f in general]
    if answer.remedies:
        out.append("\n" + say(lang, "remedies"))
        out += [f"  {r.heading(lang)}{colon}{r.effect_text(lang)} [{r.rule}]" for r in answer.remedies]
    return "\n".join(out)
