"""Scenarios: canonical workloads answered by ask() at build time. A scenario page starts with what a
reader came for (the plan, its memory, the alternatives and the warnings that matter), then the details
grouped by rule, and keeps the full trace folded."""

from __future__ import annotations

import json
import re
from collections import defaultdict

from ...answer.answer import MEMORY_PARTS, Answer, Finding, Option
from ...answer.bandtext import lines as band_lines
from ...answer.bandtext import shown
from ...contrib.loadchart import svg
from ...contrib.scenarios import Run
from ...core.fmt import duration, number
from ...core.words import rl_word, term
from ...engine.trace import TraceStep
from ...estimate.load import curve
from ...estimate.rl import ROLE_ZH
from ...knowledge.rules import STAGES
from ..links import SCENARIOS, Context, scenario_page, trace_page
from ..text import code, css_token, esc, esc_spaced, html_text, link, stacked_table, table
from .common import as_json, bullets, gb_exact, h1, memory_bar, part_name
from .rules import stage_name

TOP_ALTERNATIVES = 4
SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
SEVERITY_ZH = {"error": "错误", "warning": "警告", "info": "提示"}


def _result(value: object) -> str:
    """A value's cell: a number as a number, anything else (true, none, a kind) as the value it is, in code."""
    shown = html_text(number(value))
    return shown if isinstance(value, int | float) and not isinstance(value, bool) else f"<code>{shown}</code>"


def _values_table(step: TraceStep, zh: bool = False) -> str:
    """A trace step's values as one line of raw HTML: there are thousands of these, and they hold no
    links, so Markdown need not parse them (which keeps the build fast)."""
    rows = []
    for v in step.values:
        expression = f"<code>{html_text(v['expr'])}</code>" if v["expr"] else "—"
        rows.append(f"<tr><td><code>{html_text(v['name'])}</code></td><td>{expression}</td>"
                    f'<td style="text-align: right">{_result(v["value"])}</td></tr>')
    value, expression, result = ("数值", "表达式", "结果") if zh else ("Value", "Expression", "Result")
    return (f'<table><thead><tr><th>{value}</th><th>{expression}</th><th style="text-align: right">{result}</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def _fact(ctx: Context, label: str) -> str:
    """A matched fact as its label reads ('gpu a10-24gb'): on the Chinese site its kind in words, its id as code."""
    if not ctx.zh:
        return esc(label)
    kind, _, key = label.partition(" ")
    return esc(ctx.value("fact", kind)) + (f" {code(key)}" if key else "")


def render_step(ctx: Context, here: str, step: TraceStep, heading_level: int = 4, anchors: bool = True) -> str:
    """One trace step: rule, stage, matched facts, sentence, values with their expressions, claims, sources."""
    hashes = "#" * heading_level
    # traces repeat the same rules and claims many times over: kept out of the search index
    anchor = f" {{#step-{step.step} data-search-exclude}}" if anchors else " { data-search-exclude }"
    out = [f"{hashes} {step.step}. {esc((ctx.zh and step.title_zh) or step.title)}{anchor}", "",
           f"{ctx.rule(here, step.rule)} · {esc(ctx.t(step.stage, term('zh', step.stage)))}"
           + (" · " + ctx.t("matched ", "匹配：") + ctx.t(", ", "、").join(_fact(ctx, i["label"]) for i in step.inputs)
              if step.inputs else ""), "",
           f"> {esc((ctx.zh and step.sentence_zh) or step.sentence)}", ""]
    if step.values:
        out += [_values_table(step, ctx.zh), ""]
    for c in step.claims:
        out.append(f"- {ctx.t('rests on', '依据')} {ctx.claim(here, c.id)} 「{esc(c.quote_zh)}」"
                   + ("" if ctx.zh else f" — {esc(c.text_en)}"))
    if step.sources:
        out.append(f"- {ctx.t('sources: ', '来源：')}" + ", ".join(ctx.source(here, s) for s in step.sources))
    return "\n".join(out).rstrip()


def _folded(title: str, body: str, kind: str = "note", open_: bool = False) -> list[str]:
    """A collapsible block, closed unless `open_`: the markup of pymdownx.details (so the theme styles it),
    its body parsed as Markdown by md_in_html, which unlike an indented `???` block stays linear in the
    length of a trace of thousands of lines."""
    return [f'<details class="{kind}" markdown="1"{" open" if open_ else ""}>', f"<summary>{title}</summary>", "",
            body, "", "</details>", ""]


def _details_title(text: str) -> str:
    """A <summary>: our own words plus numbers, escaped."""
    return esc(text)


def _severity(ctx: Context, severity: str) -> str:
    word = SEVERITY_ZH.get(severity, severity) if ctx.zh else severity
    return f'<span class="gpukb-badge gpukb-severity-{css_token(severity)}">{esc(word)}</span>'


def _duration(ctx: Context, seconds: float) -> str:
    return duration(seconds, "zh" if ctx.zh else "en")


def _strategy(ctx: Context, o: Option) -> str:
    return o.strategy.describe("zh" if ctx.zh else "en")


def _cost(ctx: Context, o: Option) -> str:
    g = ctx.kb.gpus.get(o.gpu)
    if g is None or g.price is None:
        return "—"
    return f"${g.price.usd * o.count:,.0f}"


def _rent(o: Option) -> str:
    """Dollars an hour for the option's GPUs at the lowest dated cloud on-demand price (rec.cost.*)."""
    return f"${o.usd_per_hour:,.2f}" if o.usd_per_hour else "—"


def _run_cost(o: Option) -> str:
    """Inference: dollars per million generated tokens; training: dollars to train the workload's tokens."""
    if o.usd_per_million_tokens:
        return f"${o.usd_per_million_tokens:,.2f}"
    return f"${o.cost_usd:,.0f}" if o.cost_usd else "—"


def _cost_headers(ctx: Context, a: Answer) -> list[str]:
    run = (ctx.t("$/M tokens", "每百万 token 美元") if a.workload.task == "inference"
           else ctx.t("Cost to train", "训练成本"))
    return [ctx.t("$/hour (cloud)", "每小时（云）美元"), run]


def _options_table(ctx: Context, here: str, a: Answer, options: list[Option], numbered: bool = False) -> str:
    """Options, one row each, in a table that fits the page's column at 1280 px and a phone: the GPU's cell
    also holds its layout and memory per GPU (smaller, on a second line), columns no option fills are left
    out, and on a narrow screen each row becomes a card (text.stacked_table)."""
    t = ctx.t
    columns: list[tuple[str, str, list[str]]] = [
        ("GPU", "l", [f"{ctx.gpu_named(here, o.gpu)}{' ✱' if o.branch else ''}<br><small>{esc(_strategy(ctx, o))}"
                      f"{t('; ', '；')}{_memory(ctx, o)}</small>" for o in options]),
        (t("Count", "卡数"), "r", [str(o.count) for o in options]),
        ("Tokens/s", "r", [_speed(o) for o in options]),
        ("TTFT", "r", [_ms(o.ttft_s) for o in options]),
        ("TPOT", "r", [_ms(o.tpot_s) for o in options]),
        (t("Time to train", "训练用时"), "r", [_time(ctx, o) for o in options]),
        (t("GPU-hours", "GPU 小时"), "r", [f"{o.gpu_hours:,.0f}" if o.gpu_hours else "—" for o in options]),
        (t("GPU price", "GPU 价格"), "r", [_cost(ctx, o) for o in options]),
        *zip(_cost_headers(ctx, a), "rr", ([_rent(o) for o in options], [_run_cost(o) for o in options]), strict=True),
    ]
    columns = [c for c in columns if any(cell != "—" for cell in c[2])]
    if numbered:
        columns.insert(0, ("#", "r", [str(i) for i in range(1, len(options) + 1)]))
    return stacked_table([c[0] for c in columns], list(zip(*(c[2] for c in columns), strict=True)),
                         "".join(c[1] for c in columns))


def _memory(ctx: Context, o: Option) -> str:
    used, usable = gb_exact(o.per_gpu_bytes), gb_exact(o.usable_bytes)
    return ctx.t(f"{used} of {usable} per GPU", f"每卡占用 {used} / 可用 {usable}")


def _ms(seconds: float | None) -> str:
    """Serving latency in milliseconds, the unit vLLM's and SGLang's benchmarks report it in."""
    return f"{seconds * 1e3:,.1f} ms" if seconds else "—"


def _speed(o: Option) -> str:
    return number(o.tokens_per_s) if o.tokens_per_s else "—"


def _time(ctx: Context, o: Option) -> str:
    return _duration(ctx, o.time_to_train_s) if o.time_to_train_s else "—"


def _plan_line(ctx: Context, here: str, o: Option) -> str:
    g = ctx.kb.gpus.get(o.gpu)
    line = f"**{o.count} × {ctx.gpu_named(here, o.gpu)}** — {esc(_strategy(ctx, o))}"
    facts = [ctx.t(f"{gb_exact(o.per_gpu_bytes)} of {gb_exact(o.usable_bytes)} usable per GPU",
                   f"每卡使用 {gb_exact(o.per_gpu_bytes)}，可用 {gb_exact(o.usable_bytes)}")]
    if o.tokens_per_s:
        facts.append(ctx.t(f"about {number(o.tokens_per_s)} tokens/s", f"约 {number(o.tokens_per_s)} tokens/s"))
    if o.time_to_train_s:
        facts.append(ctx.t(f"{_duration(ctx, o.time_to_train_s)} to train", f"训练用时 {_duration(ctx, o.time_to_train_s)}"))
    if g is not None and g.price is not None:
        facts.append(ctx.t(f"GPUs at about {_cost(ctx, o)} to buy", f"GPU 购置约 {_cost(ctx, o)}"))
    if o.usd_per_hour:
        facts.append(ctx.t(f"{_rent(o)} an hour to rent", f"租用每小时 {_rent(o)}"))
    if o.usd_per_million_tokens:
        facts.append(ctx.t(f"{_run_cost(o)} per million tokens", f"每百万 token {_run_cost(o)}"))
    elif o.cost_usd:
        facts.append(ctx.t(f"{_run_cost(o)} to train", f"训练成本 {_run_cost(o)}"))
    if o.energy_kwh and o.co2_kg:
        mwh, tonnes = shown("energy_kwh", o.energy_kwh), shown("co2_kg", o.co2_kg) + " CO₂"
        facts.append(ctx.t(f"{mwh} at the data centre and {tonnes} on the grid of its region",
                           f"数据中心耗电 {mwh}，按所在地区电网排放 {tonnes}"))
    return line + ctx.t("; ", "；") + ctx.t("; ", "；").join(facts) + ctx.t(".", "。")


def _grouped(findings: list[Finding]) -> list[tuple[tuple[str, str, str], list[Finding]]]:
    """Findings grouped by (severity, kind, rule), most severe first, then the largest groups."""
    groups: dict[tuple[str, str, str], list[Finding]] = defaultdict(list)
    for f in findings:
        groups[(f.severity, f.kind, f.rule)].append(f)
    return sorted(groups.items(), key=lambda kv: (SEVERITY_ORDER.get(kv[0][0], 9), -len(kv[1]), kv[0][2]))


def _gpu_list(ctx: Context, here: str, gpus: list[str | None]) -> str:
    named = [ctx.gpu(here, g) for g in dict.fromkeys(gpus) if g]
    if len(named) < len([g for g in gpus if g is None]) + len(named):
        named.insert(0, ctx.t("all", "全部"))
    return ", ".join(named) or ctx.t("all", "全部")


def _key_warnings(ctx: Context, here: str, a: Answer) -> list[str]:
    best = a.best
    found = [f for f in (best.findings if best else a.findings) if f.severity in ("error", "warning")]
    if not found and best is None:
        found = [f for f in a.findings if f.severity == "error"]
    lines = []
    for (severity, _kind, rule), group in _grouped(found)[:4]:
        lines.append(f"- {_severity(ctx, severity)} {esc(group[0].text(ctx.lang))} ({ctx.rule_named(here, rule)})")
    return lines


PICKS = (("fastest", "Fastest", "最快"), ("cheapest", "Cheapest", "最便宜"), ("fewest_gpus", "Fewest GPUs", "GPU 最少"),
         ("article_pick", "The article's pick", "文章之选"))


def decisions(ctx: Context, here: str, a: Answer) -> list[str]:
    """answer.summary as a list: the headline, then the fastest, the cheapest, the fewest-GPU option and the
    article's pick with the figure that decides each, or, when nothing fits, the nearest miss per GPU type."""
    s = a.summary
    if s is None:
        return []
    out = [f"**{esc((ctx.zh and s.headline_zh) or s.headline)}**", ""]
    for key, en, zh in PICKS:
        pick = getattr(s, key)
        if pick is not None:
            out.append(f"- {ctx.t(en, zh)}: **{pick.count} × {ctx.gpu_named(here, pick.gpu)}** — {esc(pick.text(ctx.lang))}")
    for miss in s.nearest_misses:
        closest = (f" ({ctx.t('closest', '最接近')}: {miss.count} × {gb_exact(miss.per_gpu_bytes)} / "
                   f"{gb_exact(miss.usable_bytes)}, {ctx.rule(here, miss.rule)})") if miss.rule else ""
        out.append(f"- {ctx.gpu_named(here, miss.gpu)}{closest} — {esc(miss.text(ctx.lang))}")
    return [*out, ""]


def summary(ctx: Context, here: str, a: Answer) -> list[str]:
    t = ctx.t
    best = a.best
    out = [f"## {t('Summary', '结论')} {{#summary}}", "", *decisions(ctx, here, a)]
    if best is None:
        out += [t("No candidate GPU type can run this workload within the limits given.",
                  "在给定的限制内，没有任何候选 GPU 能运行这个工作负载。"), ""]
    else:
        g = ctx.kb.gpus.get(best.gpu)
        out += [t("**First option:** ", "**首选方案：** ") + _plan_line(ctx, here, best), "",
                memory_bar(ctx, best.memory, best.usable_bytes, g.memory if g else None), ""]
        banded = band_lines(best, ctx.lang)
        if banded:  # how far each number may be off, from the published runs gpukb validate measures
            out += [f"**{t('Error bands', '误差范围')}** " + t(
                "(from the published measured runs of the same quantity; see the validation page)",
                "（来自同一量的已发表实测运行）"), "", *(f"- {esc(line)}" for line in banded), ""]
        alternatives = a.options[1:1 + TOP_ALTERNATIVES]
        if alternatives:
            out += [f"**{t('Alternatives', '备选方案')}**", "", _options_table(ctx, here, a, alternatives), ""]
    warnings = _key_warnings(ctx, here, a)
    if warnings:
        out += [f"**{t('Key warnings', '主要警告')}**", "", *warnings, ""]
    out += [t(f"Memory: {gb_exact(a.memory.total)} for one replica before sharding. "
              f"{len(a.options)} GPU types can run it, {len(a.rejected)} cannot. "
              "Details, every finding and the full trace follow.",
              f"显存：切分前单个副本 {gb_exact(a.memory.total)}。{len(a.options)} 种 GPU 可以运行，{len(a.rejected)} 种不能。"
              "详细信息、全部发现和完整推理记录见下文。"), ""]
    return out


def scenarios_index(ctx: Context) -> str:
    here, t = SCENARIOS, ctx.t
    rows = []
    for run in ctx.runs:
        a = run.answer
        best = a.best
        rows.append([ctx.scenario(here, run), gb_exact(a.memory.total),
                     f"{best.count} × {ctx.gpu_named(here, best.gpu)}" if best else t("none fits", "放不下"),
                     _time(ctx, best) if best else "—", str(len(a.options))])
    out = h1(t("Scenarios", "场景"))
    out += [t("Canonical workloads, answered by `ask()` when this site was built (the list is `site/scenarios.yaml`). "
              "Memory is one replica before sharding.",
              "典型工作负载，在构建本站时由 `ask()` 回答（列表见 `site/scenarios.yaml`）。显存为切分前的单个副本。"), "",
            table([t("Scenario", "场景"), t("Memory", "显存"), t("Recommended", "推荐"), t("Time to train", "训练用时"),
                   t("Options", "可选方案")], rows, "lrlrr"), ""]
    return "\n".join(out)


def _findings(ctx: Context, here: str, a: Answer) -> list[str]:
    t = ctx.t
    out = [f"## {t('Findings by rule', '按规则分组的发现')} {{#findings}}", ""]
    if not a.findings:
        return [*out, t("None.", "无。"), ""]
    out += [t("Each row is one rule's finding and the GPUs it applies to; open a row's details for every GPU's own figures.",
              "每行是一条规则的发现及其适用的 GPU；展开可查看每种 GPU 的具体数字。"), ""]
    rows = []
    for (severity, kind, rule), group in _grouped(a.findings):
        category = ctx.t(kind.replace("_", " "), ctx.value("finding", kind))
        rows.append([_severity(ctx, severity), esc(category), ctx.rule_named(here, rule),
                     esc(group[0].text(ctx.lang))
                     + (t(f" (and {len(group) - 1} more like it)", f"（另有 {len(group) - 1} 条类似）")
                        if len(group) > 1 else ""),
                     _gpu_list(ctx, here, [f.gpu for f in group])])
    out += [table([t("Severity", "级别"), t("Kind", "类别"), t("Rule", "规则"), t("Finding", "发现"), t("GPUs", "GPU")],
                  rows, "lllll"), ""]
    every = [f"- {_severity(ctx, f.severity)} {ctx.gpu(here, f.gpu) if f.gpu else t('all', '全部')}: {esc(f.text(ctx.lang))} "
             f"({ctx.rule(here, f.rule)}" + ("; " + ", ".join(ctx.claim(here, c, with_badge=False) for c in f.claims)
                                            if f.claims else "") + ")" for f in a.findings]
    out += _folded(_details_title(t(f"All {len(a.findings)} findings, one per GPU", f"全部 {len(a.findings)} 条发现（逐卡）")),
                   "\n".join(every))
    return out


BAR = 40  # characters of the widest phase's bar


def _rl_step(ctx: Context, a: Answer) -> list[str]:
    """RL runs: the best option's step, phase by phase with a bar each (the split between generation and
    training), and the memory each model takes per GPU."""
    best, t = a.best, ctx.t
    if best is None or best.rl is None:
        return []
    rl = best.rl
    longest = max(rl.phases.values(), default=0.0) or 1.0
    where = (t(f"colocated on {best.count} {best.gpu}", f"共置于 {best.count} 块 {best.gpu}") if not rl.rollout_gpus else
             t(f"split: {rl.trainer_gpus} trainer + {rl.rollout_gpus} rollout {best.gpu}",
               f"分离：{rl.trainer_gpus} 块训练 + {rl.rollout_gpus} 块生成 {best.gpu}"))
    rows = [[esc(ctx.t(phase, rl_word("zh", phase))), f"{seconds:,.1f}" if seconds >= 1 else f"{seconds:.3f}",
             f"{seconds / rl.step_time_s:.0%}" if rl.step_time_s else "—",
             "`" + "█" * max(1 if seconds > 0 else 0, round(BAR * seconds / longest)) + "`" if seconds > 0 else ""]
            for phase, seconds in rl.phases.items()]
    rows.append([f"**{t('step', '一步')}**", f"**{rl.step_time_s:,.1f}**", "", ""])
    roles = [[esc(ctx.t(role, ROLE_ZH.get(role, role))), gb_exact(b)] for role, b in rl.memory_by_role.items()]
    return [f"## {t('RL step', 'RL 一步')} {{#rl}}", "",
            t(f"The best option, {where}: seconds per step by phase (on-policy, one after another).",
              f"最佳方案，{where}：每步各阶段的秒数（同策略，依次执行）。"), "",
            table([t("Phase", "阶段"), "s", t("Share", "占比"), ""], rows, "lrrl"), "",
            t("Memory per GPU by model (each in the phase that holds it):", "每块 GPU 上各模型的显存（各在占用它的阶段）："), "",
            table([t("Role", "角色"), "GB"], roles, "lr"), ""]


def _load_chart(ctx: Context, a: Answer) -> list[str]:
    """Under a request rate: the first option's latency against the rate, the knee marked (inline SVG; the
    curve is simulated at build time)."""
    drawn = curve(a) if a.workload.request_rate else None
    if drawn is None:
        return []
    t = ctx.t
    return [f"## {t('Latency under load', '负载下的延迟')} {{#load}}", "",
            t(f"P50 and P99 of the time to the first token and per output token of {esc(drawn.gpu)} x{drawn.count} as "
              f"requests arrive faster; the dashed line is the knee, {drawn.knee:,.1f} requests/s, where the queue "
              "starts to grow.",
              f"请求到达越来越快时，{esc(drawn.gpu)} x{drawn.count} 的首 token 时间和每 token 时间的 P50 与 P99；"
              f"虚线是拐点（每秒 {drawn.knee:,.1f} 个请求），队列从这里开始增长。"), "",
            f'<div class="gpukb-load-chart">{svg(drawn, "zh" if ctx.zh else "en")}</div>', ""]


def scenario(ctx: Context, run: Run) -> str:
    here, a, s, t = scenario_page(run.scenario.id), run.answer, run.scenario, ctx.t
    w = a.workload
    out = h1(ctx.field(s, "title"))
    if s.description:
        out += [esc(ctx.field(s, "description")), ""]
    out += summary(ctx, here, a)
    call = f"answer = gpukb.ask({json.dumps(s.workload, ensure_ascii=False)})"
    fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", call)), default=0))
    out += [f"## {t('The question', '问题')} {{#workload}}", "", f"{fence}python", "import gpukb", "", call, fence, "",
            t(f"Answered by knowledge base {esc(a.kb_version)} (content hash {code(a.kb_hash[:12])}). "
              "After defaults and the model's architecture are filled in:",
              f"由知识库 {esc(a.kb_version)}（内容哈希 {code(a.kb_hash[:12])}）回答。补全默认值和模型架构之后："), ""]
    resolved = w.model_dump(exclude={"gpus", "assumptions"}, exclude_none=True)
    shown = (code if ctx.zh else esc)  # on the Chinese site a value (gated, fewest, true) reads as the value it is
    out += [" · ".join(f"{code(k)} {shown(str(v).lower() if isinstance(v, bool) else v)}" for k, v in resolved.items()), "",
            t(f"Candidate GPUs: {len(w.gpus)}.", f"候选 GPU：{len(w.gpus)} 种。"), ""]
    if w.assumptions:
        out += [t("Assumptions:", "假设："), "", bullets(esc(x) for x in w.assumptions_in(ctx.lang)), ""]
    m = a.memory
    out += [f"## {t('Memory', '显存')} {{#memory}}", "", t("One replica before sharding (GB = 1e9 bytes):",
                                                          "切分前的单个副本（GB = 1e9 字节）："), "",
            table([t("Part", "部分"), "GB", t("Share", "占比")],
                  [[esc(part_name(ctx, p)), gb_exact(getattr(m, p)), f"{getattr(m, p) / m.total:.0%}" if m.total else "—"]
                   for p in MEMORY_PARTS] + [[f"**{t('total', '合计')}**", f"**{gb_exact(m.total)}**", ""]], "lrr"), ""]
    out += _rl_step(ctx, a)
    out += _load_chart(ctx, a)
    order = {"speed": t("fastest first", "最快在前"), "cost": t("cheapest first", "最便宜在前"),
             "gpus": t("fewest GPUs first", "GPU 最少在前")}[w.objective]
    out += [f"## {t('Options', '可选方案')} {{#options}}", "",
            t(f"Every GPU type that can run the workload, {order}; the article's pick (✱) is marked, not ranked up.",
              f"每种能运行该工作负载的 GPU，{order}；文章之选（✱）只作标记，不提前。"), ""]
    if a.options:
        full = _options_table(ctx, here, a, a.options, numbered=True)
        out += _folded(_details_title(t(f"All {len(a.options)} options", f"全部 {len(a.options)} 个方案")), full,
                       open_=True)
    else:
        out += [t("None.", "无。"), ""]
    out += [f"## {t('Rejected', '被排除的 GPU')} {{#rejected}}", ""]
    if a.rejected:
        by_rule: dict[str, list[Option]] = defaultdict(list)
        for o in a.rejected:
            reason = next((f for f in o.findings if f.severity == "error"), o.findings[0] if o.findings else None)
            by_rule[reason.rule if reason else ""].append(o)
        rows = []
        for rule, options in sorted(by_rule.items(), key=lambda kv: -len(kv[1])):
            first = next((f for f in options[0].findings if f.rule == rule), None)
            rows.append([ctx.rule_named(here, rule) if rule else "—", esc(first.text(ctx.lang)) if first else "—",
                         ", ".join(ctx.gpu(here, o.gpu) for o in options)])
        out += [table([t("Rule", "规则"), t("Why (the first GPU's figures)", "原因（以第一种 GPU 为例）"), "GPU"], rows), ""]
    else:
        out += [t("No GPU type was rejected: each can hold the workload with enough of them.",
                  "没有 GPU 被排除：只要数量足够，每种都能容纳这个工作负载。"), ""]
    out += _findings(ctx, here, a)
    out += [f"## {t('Remedies', '对策')} {{#remedies}}", ""]
    if a.remedies:
        groups: dict[tuple[str, str], list] = defaultdict(list)
        for r in a.remedies:
            groups[(r.id, r.rule)].append(r)
        out += [table([t("Remedy", "对策"), t("Effect", "效果"), t("Rule", "规则"), "GPU"],
                      [[esc(g[0].heading(ctx.lang)),
                        esc(g[0].effect_text(ctx.lang))
                        + (t(f" (and {len(g) - 1} more)", f"（另有 {len(g) - 1} 条）") if len(g) > 1 else ""),
                        ctx.rule_named(here, rule), _gpu_list(ctx, here, [r.gpu for r in g])]
                       for (_id, rule), g in groups.items()]), ""]
    else:
        out += [t("None needed.", "不需要。"), ""]
    steps = ", ".join(link(str(st.step), here, trace_page(s.id), f"step-{st.step}") for st in a.best.trace) if a.best else ""
    out += [f"## {t('Trace', '推理记录')} {{#trace}}", "",
            t(f"All {len(a.trace)} steps, in the order the rules fired, are on their own page: ",
              f"全部 {len(a.trace)} 步按规则触发顺序列在单独的页面：") + link(t("the trace", "推理记录"), here, trace_page(s.id))
            + t(".", "。"), ""]
    if steps:
        out += [t("The steps behind the recommended option: ", "推荐方案背后的步骤：") + steps + t(".", "。"), ""]
    return "\n".join(out)


def scenario_trace(ctx: Context, run: Run) -> str:
    """A scenario's trace on its own page: every step folded by stage, and what answer.explain() prints."""
    here, a, s, t = trace_page(run.scenario.id), run.answer, run.scenario, ctx.t
    out = h1(t(f"Trace: {ctx.field(s, 'title')}", f"推理记录：{ctx.field(s, 'title')}"))
    out += [link(t("Back to the scenario", "返回场景页"), here, scenario_page(s.id)), "",
            t(f"All {len(a.trace)} steps, in the order the rules fired, folded by stage. Each names its rule, the facts it "
              "matched, the values it computed with their expressions, the claims it rests on and its sources.",
              f"全部 {len(a.trace)} 步，按规则触发顺序，按阶段折叠。每一步给出规则、匹配的事实、计算的数值及其表达式、"
              "依据的论断和来源。"), ""]
    if a.best is not None:
        out += [t("The steps behind the recommended option: ", "推荐方案背后的步骤：")
                + ", ".join(f"[{st.step}](#step-{st.step})" for st in a.best.trace) + ".", ""]
    for stage in [*STAGES, *sorted({st.stage for st in a.trace} - set(STAGES))]:
        steps = [st for st in a.trace if st.stage == stage]
        if steps:
            body = "\n\n".join(render_step(ctx, here, step) for step in steps)
            name = stage_name(ctx, stage)
            out += _folded(_details_title(t(f"{name} ({len(steps)} steps)", f"{name}（{len(steps)} 步）")), body,
                           kind="abstract")
    out += _folded(t(esc("As text: what answer.explain() prints"),
                     "纯文本：<code>answer.explain(lang=&quot;zh&quot;)</code> 的输出"),
                   '<pre class="gpukb-explain"><code>' + esc_pre(a.explain(lang=ctx.lang)) + "</code></pre>", kind="quote")
    return "\n".join(out)


def esc_pre(text: str) -> str:
    """Preformatted text inside raw HTML: escaped, spaces kept, newlines as entities so Markdown sees one line."""
    return "&#10;".join(esc_spaced(line.rstrip()) for line in text.splitlines())


__all__ = ["as_json", "decisions", "esc_pre", "render_step", "scenario", "scenario_trace", "scenarios_index", "summary"]
