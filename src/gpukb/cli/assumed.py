"""The assumptions an answer rests on, named under its title: the framework (and why, when it is the task's
default), the parameter count and where it was read, and what the energy figures count."""

from __future__ import annotations

from typing import Any

from ..core.fmt import Lang
from ..core.words import term

PUE_POLICY = "datacenter-pue"


def _params(n: int) -> str:
    return f"{n / 1e9:,.1f}B" if n >= 1e9 else f"{n / 1e6:,.0f}M"


def framework_line(w: Any, kb: Any, lang: Lang) -> str:
    """'framework vllm (given)', or the task's default with the reason kb/frameworks gives for it."""
    framework = kb.frameworks.get(w.framework) if kb is not None else None
    defaulted = any(note.startswith("framework not given") for note in w.assumptions)
    if not defaulted or framework is None:
        return f"框架 {w.framework}（指定）" if lang == "zh" else f"framework {w.framework} (given)"
    reason = " ".join(framework.default_reason.split())
    if lang == "zh":  # kb/frameworks states the reason in Chinese too (default_reason_zh)
        task = term(lang, w.task)
        why = " ".join(framework.default_reason_zh.split())
        return f"框架 {w.framework}（未指定，取{' ' if task[:1].isascii() else ''}{task}的默认框架：{why}）"
    return f"framework {w.framework}, the default for {w.task} (kb/frameworks: {reason})"


def model_line(w: Any, lang: Lang) -> str:
    """The parameter count, with the config.json it was counted from (a catalog model's is in kb/models)."""
    count = _params(w.params)
    active = _params(w.active_params) if w.active_params and w.active_params < w.params else ""
    if lang == "zh":
        text = f"模型 {count} 参数" + (f"（每个 token 激活 {active}）" if active else "")
        return text + (f"，由 {w.config_file} 计算" if w.config_file else "，取自 kb/models")
    text = f"model {count} parameters" + (f" ({active} active per token)" if active else "")
    return text + (f", counted from {w.config_file}" if w.config_file else ", from kb/models")


def energy_line(w: Any, kb: Any, lang: Lang) -> str:
    """What the energy and CO₂ figures count: GPUs only (as model cards do), whole servers, or the facility."""
    pue = w.pue if w.pue is not None else (kb.policy(PUE_POLICY) if kb is not None else None)
    where = f"grid {w.region}" if lang != "zh" else f"电网 {w.region}"
    if lang == "zh":
        scope = {"gpu": "只计 GPU（模型卡的算法）", "node": "整台服务器（GPU 及其余部件），不计数据中心",
                 "facility": f"数据中心总用电（整台服务器 × PUE {pue:g}）"}[w.energy_scope]
        return f"能耗口径：{scope}，{where}"
    scope = {"gpu": "GPUs only (as model cards count)", "node": "whole servers (GPUs and the rest), no facility overhead",
             "facility": f"the facility (whole servers x PUE {pue:g})"}[w.energy_scope]
    return f"energy scope: {scope}, {where}"


def lines(answer: Any, kb: Any, lang: Lang) -> list[str]:
    """The header's lines: framework, model, and (where the options carry energy) the energy scope."""
    w = answer.workload
    out = [framework_line(w, kb, lang), model_line(w, lang)]
    if any(o.energy_kwh for o in answer.options):
        out.append(energy_line(w, kb, lang))
    head = "假设：" if lang == "zh" else "Assumed: "
    return [head + out[0], *(("  " if lang == "zh" else "         ") + line for line in out[1:])]
