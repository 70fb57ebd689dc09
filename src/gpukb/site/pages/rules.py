"""The rules: an index by stage and one page per rule."""

from __future__ import annotations

import json

from ...core.fmt import number
from ...knowledge.rules import STAGES, Rule
from ..conditions import readable
from ..links import RULES, Context, rule_page
from ..text import badge, code, esc, link, table
from .common import as_json, bullets, h1, source_line

STAGE_TEXT = {
    "requirements": ("what the workload needs: memory, activations, KV cache", "工作负载需要什么：显存、激活、KV 缓存"),
    "bottlenecks": ("what will hold it back on each GPU", "在每种 GPU 上会被什么拖慢"),
    "remedies": ("what to do about it", "该怎么办"),
    "recommendations": ("how the options are ranked", "方案如何排序"),
}
STATUS_ZH = {"draft": "草案", "deprecated": "已弃用"}
STAGE_NAMES = {"requirements": "需求", "bottlenecks": "瓶颈", "remedies": "对策", "recommendations": "推荐"}


def status_badge(ctx: Context, status: str) -> str:
    return badge(status, "status", ctx.t(status, STATUS_ZH.get(status, status)))


def stage_name(ctx: Context, stage: str) -> str:
    return ctx.t(stage.capitalize(), STAGE_NAMES.get(stage, stage))


def rules_index(ctx: Context) -> str:
    kb, here = ctx.kb, RULES
    out = h1(ctx.t("Rules", "规则"))
    out += [ctx.t("Forward-chaining rules, one YAML file each under `rules/<stage>/`. A rule matches facts "
                  "(**when**), asserts new facts computed by whitelisted expressions (**then**), cites the article's "
                  "claims it rests on and its sources, and carries its own tests. Traces name a rule as `id@version`.",
                  "前向推理规则，每条一个 YAML 文件，位于 `rules/<stage>/`。规则匹配事实（`when`），"
                  "用白名单表达式计算并断言新事实"
                  "（`then`），引用它所依据的原文论断和来源，并自带测试。推理记录以 `id@version` 指代规则。"), ""]
    for stage in STAGES:
        rules = sorted((r for r in kb.rules.values() if r.stage == stage), key=lambda r: r.id)
        en, zh = STAGE_TEXT.get(stage, ("", ""))
        out += [f"## {esc(stage_name(ctx, stage))} {{#{stage}}}", "", f"{esc(ctx.t(en, zh))}.", ""]
        if not rules:
            out += [ctx.t("No rules yet.", "暂无规则。"), ""]
            continue
        out += [table([ctx.t("Rule", "规则"), ctx.t("Id", "编号"), ctx.t("Version", "版本"), ctx.t("Claims", "论断"),
                       ctx.t("Tests", "测试")],
                      [[ctx.rule_named(here, r.id) + (f" {status_badge(ctx, r.status)}" if r.status != "stable" else ""),
                        code(r.id), str(r.version), str(len(r.claims)), str(len(r.tests))] for r in rules], "llrrr"), ""]
    if ctx.builtins:
        out += [f"## {ctx.t('Built-in steps', '内置步骤')} {{#built-in}}", "",
                ctx.t("Steps of the engine itself that appear in traces but are not rule files: the planner, which "
                      "places the memory on GPUs with a parallel strategy.",
                      "推理记录中出现、但不是规则文件的引擎步骤：规划器，它用并行策略把显存分配到 GPU 上。"), ""]
        for rule_id, step in sorted(ctx.builtins.items()):
            out += [f"### {esc(step.rule)} {{#built-in-{rule_id}}}", "",
                    f"{esc((ctx.zh and step.title_zh) or step.title)} · {ctx.t('stage', '阶段')} "
                    f"{esc(stage_name(ctx, step.stage))}", ""]
            if step.claims:
                out += [ctx.t("Rests on ", "依据 ") + ", ".join(ctx.claim(here, c.id) for c in step.claims) + ".", ""]
            if step.sources:
                out += [ctx.t("Sources: ", "来源：") + ", ".join(ctx.source(here, s) for s in step.sources) + ".", ""]
    return "\n".join(out)


def _outputs(ctx: Context, rule: Rule) -> list[str]:
    out = []
    for o in rule.then:
        rows = [[code(k), ctx.t("set", "定值（`set`）"), code(json.dumps(v))] for k, v in o.set.items()]
        rows += [[code(k), ctx.t("let (traced, not asserted)", "中间值（`let`，记入推理记录，不断言）"), code(v)]
                 for k, v in o.let.items()]
        rows += [[code(k), ctx.t("compute", "计算（`compute`）"), code(v)] for k, v in o.compute.items()]
        out += [ctx.t(f"Asserts a **{esc(o.kind)}** fact:",
                      f"断言一个{esc(ctx.value('fact', o.kind))}事实（{code(o.kind)}）："), "",
                table([ctx.t("Field", "字段"), ctx.t("How", "方式"), ctx.t("Value or expression", "值或表达式")], rows), ""]
    return out


def rule(ctx: Context, rule_id: str) -> str:
    kb, here = ctx.kb, rule_page(rule_id)
    r = kb.rules[rule_id]
    where = kb.locations.get(("rules", rule_id))
    meta = [[ctx.t("Key", "键"), code(f"{r.id}@{r.version}")],
            [ctx.t("Stage", "阶段"), link(esc(stage_name(ctx, r.stage)), here, RULES, r.stage)],
            [ctx.t("Version", "版本"), str(r.version)], [ctx.t("Status", "状态"), esc(ctx.value("status", r.status))]]
    if r.superseded_by:
        meta.append([ctx.t("Superseded by", "被取代为"), ctx.rule(here, r.superseded_by)])
    if where:
        meta.append([ctx.t("Defined in", "定义于"), code(f"{where[0]}:{where[1]}")])
    out = h1(ctx.rule_title(rule_id), f"{r.id}@{r.version}")
    # the key, stage and version are on the page for readers, kept out of search results' snippets
    out += ['<div data-search-exclude markdown="1">', "", table([ctx.t("Property", "属性"), ctx.t("Value", "值")], meta), "",
            "</div>", "", f"## {ctx.t('When', '条件（`when`）')}", "",
            ctx.t("The rule fires once for every combination of facts that matches all of these patterns:",
                  "对每一组同时满足以下全部模式的事实，规则触发一次："), ""]
    for p in r.when:
        line = (f"- {code(p.alias)} — 一个{esc(ctx.value('fact', p.kind))}事实（{code(p.kind)}）" if ctx.zh
                else f"- **{esc(p.alias)}** — a {code(p.kind)} fact")
        if p.if_:
            line += (f"，满足 {code(p.if_)}" if ctx.zh  # the fields and values the engine compares, as written
                     else f" where {esc(readable(p.if_))} ({code(p.if_)})")
        out.append(line)
    out += ["", f"## {ctx.t('Then', '结论（`then`）')}", ""] + _outputs(ctx, r)
    out += [f"## {ctx.t('Explanation', '解释')}", "",
            ctx.t("Each firing writes this sentence into the trace, with the values filled in:",
                  "每次触发都会把这句话（填入数值后）写进推理记录："), "",
            f"> {esc(ctx.field(r, 'explain'))}", "", f"## {ctx.t('Claims it rests on', '依据的论断')}", ""]
    claim_lines = []
    for claim_id in r.claims:
        c = kb.claims.get(claim_id)
        extra = f" 「{esc(c.quote_zh)}」" + ("" if ctx.zh else f" — {esc(c.text_en)}") if c else ""
        claim_lines.append(ctx.claim(here, claim_id) + extra)
    out += [bullets(claim_lines, ctx.t("This rule cites no claim of the article.", "这条规则不引用原文论断。")), "",
            f"## {ctx.t('Sources', '来源')}", "",
            bullets((source_line(ctx, here, s) for s in r.sources), ctx.t("No sources.", "无。")), "",
            f"## {ctx.t('Tests', '测试')}", "", ctx.t("`gpukb lint` runs each example; values match within 0.5%.",
                                                    "`gpukb lint` 运行每个示例；数值误差须在 0.5% 以内。"), ""]
    if r.tests:
        rows = []
        for t in r.tests:
            expect = ctx.t("fires", "触发") if t.expect.fires else ctx.t("does not fire", "不触发")
            if t.expect.values:
                expect += ctx.t(": ", "：") + ", ".join(f"{code(k)} = {esc(number(v)) if isinstance(v, int | float) else code(v)}"
                                                        for k, v in t.expect.values.items())
            rows.append([code(t.name) if ctx.zh else esc(t.name), as_json(t.workload), expect])
        out += [table([ctx.t("Test", "测试"), ctx.t("Workload", "工作负载"), ctx.t("Expects", "预期")], rows), ""]
    else:
        out += [ctx.t("This rule has no tests.", "这条规则没有测试。"), ""]
    out += [f"## {ctx.t('In the scenarios', '出现在这些场景中')}", "",
            bullets((ctx.scenario(here, run) for run in ctx.rule_runs.get(rule_id, [])),
                    ctx.t("This rule fired in no scenario.", "这条规则在任何场景中都没有触发。")), ""]
    return "\n".join(out)
