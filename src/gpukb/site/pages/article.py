"""The article, claim by claim, and one page per claim."""

from __future__ import annotations

from collections import Counter

from ...contrib import figures
from ...core.words import term
from ...knowledge.kb import KnowledgeBase
from ..links import ARTICLE, Context, claim_page
from ..text import esc, link, plain, table
from .common import bilingual, bullets, h1, source_line

KIND_ZH = {"quantitative": "定量", "qualitative": "定性", "recommendation": "建议"}


def verdict_word(ctx: Context, verdict: str) -> str:
    return term("zh" if ctx.zh else "en", verdict)


def sections(kb: KnowledgeBase) -> dict[tuple[str, str], list[str]]:
    found: dict[tuple[str, str], list[str]] = {}
    for claim in kb.claims.values():  # file order: the article's order
        found.setdefault((claim.section, claim.section_en), []).append(claim.id)
    return found


def article(ctx: Context) -> str:
    kb, here = ctx.kb, ARTICLE
    verdicts = Counter(c.verdict for c in kb.claims.values())
    out = h1(ctx.t("The article, claim by claim", "原文逐条核查"))
    if "article" in kb.sources:
        out += [ctx.t("The source: ", "来源：") + source_line(ctx, here, "article") + ".", ""]
    out += [ctx.t("Every checkable sentence of the article is a claim below, in the article's order: the Chinese original "
                  "beside an English translation, a verdict, the reason for it and the evidence.",
                  "文章中每一句可以核查的话都是下面的一条论断，按原文顺序排列：中文原文与英文译文并列，附判定、理由和证据。")]
    if kb.rhetoric:
        listed = link(ctx.t("listed at the end", "列在最后"), here, ARTICLE, "rhetoric")
        out[-1] += " " + ctx.t(f"Sentences that assert nothing checkable are {listed}.",
                               f"不含可核查内容的句子{listed}。")
    out += ["", table([ctx.t("Verdict", "判定"), ctx.t("Claims", "论断数")],
                      [[ctx.verdict_badge(v), str(n)]
                       for v, n in sorted(verdicts.items())], "lr"), ""]
    for number_, ((zh, en), ids) in enumerate(sections(kb).items(), start=1):
        out += [f"## {esc(zh)}{'' if ctx.zh else ' · ' + esc(en)} {{#section-{number_}}}", ""]
        for claim_id in ids:
            c = kb.claims[claim_id]
            out += [f"### {esc(ctx.claim_title(claim_id))} {{#{claim_id}}}", "",
                    f"{ctx.verdict_badge(c.verdict)} {esc(ctx.t(c.kind, KIND_ZH.get(c.kind, c.kind)))} · "
                    f"{link(ctx.t('claim page', '论断页面'), here, claim_page(claim_id))} · `{claim_id}`", "",
                    bilingual(c.quote_zh, None if ctx.zh else c.text_en), "",
                    f"**{ctx.t('Reason.', '理由。')}** {esc(plain(figures.shown(kb, c, 'zh' if ctx.zh else 'en')))}", "",
                    f"**{ctx.t('Evidence:', '证据：')}** " + ", ".join(ctx.source(here, s) for s in c.evidence), ""]
            citing = ctx.rules_citing.get(claim_id, [])
            if citing:
                out += [f"**{ctx.t('Cited by:', '引用它的规则：')}** " + ", ".join(ctx.rule_named(here, r) for r in citing), ""]
    if kb.rhetoric:
        out += [f"## {ctx.t('Sentences that are not claims', '不构成论断的句子')} {{#rhetoric}}", "",
                ctx.t("These sentences of the article assert nothing that could be checked.", "这些句子没有可以核查的内容。"), "",
                table([ctx.t("Sentence", "句子"), ctx.t("Section", "章节"), ctx.t("Why it is not a claim", "原因")],
                      [[esc(r.sentence), esc(r.section if ctx.zh and r.section else r.section_en or r.section),
                        esc(ctx.field(r, "reason"))] for r in kb.rhetoric]), ""]
    return "\n".join(out)


def claim(ctx: Context, claim_id: str) -> str:
    c, here = ctx.kb.claims[claim_id], claim_page(claim_id)
    status = f" · {esc(ctx.value('status', c.status))}" if c.status != "stable" else ""
    out = h1(ctx.claim_title(claim_id), claim_id)
    reason = plain(figures.shown(ctx.kb, c, "zh" if ctx.zh else "en"))  # today's figures, not the day it was written
    out += [f"{ctx.verdict_badge(c.verdict)} · {esc(ctx.t(c.kind + ' claim', KIND_ZH.get(c.kind, c.kind) + '论断'))} · "
            f"{ctx.t('section', '章节')} {esc(c.section)}{'' if ctx.zh else f' ({esc(c.section_en)})'} · "
            f"{ctx.t('version', '版本')} {c.version}{status} · "
            f"{link(ctx.t('in the article', '在原文中'), here, ARTICLE, claim_id)}", "",
            bilingual(c.quote_zh, None if ctx.zh else c.text_en), "",
            f"## {ctx.t('Verdict: ', '判定：')}{esc(verdict_word(ctx, c.verdict))}", "", esc(reason), "",
            f"## {ctx.t('Evidence', '证据')}", "", bullets(source_line(ctx, here, s) for s in c.evidence), "",
            f"## {ctx.t('Cited by rules', '引用它的规则')}", "",
            bullets((f"{ctx.rule_named(here, r)} ({ctx.rule(here, r)})" for r in ctx.rules_citing.get(claim_id, [])),
                    ctx.t("No rule cites this claim.", "没有规则引用这条论断。")), "",
            f"## {ctx.t('In the scenarios', '出现在这些场景中')}", "",
            bullets((ctx.scenario(here, run) for run in ctx.claim_runs.get(claim_id, [])),
                    ctx.t("No scenario's trace rests on this claim.", "没有场景的推理依赖这条论断。")), ""]
    return "\n".join(out)
