"""The decision tree page: the article's branches drawn at build time (HTML boxes the stylesheet draws),
then the same tree as a list and a table of its rules."""

from __future__ import annotations

from ...knowledge.rules import Rule
from .. import tree as dtree
from ..links import TREE, Context
from ..text import esc, table
from .common import h1

TREE_SECTION = "Decision tree"  # the article's section whose claims the tree's branches cite


def _is_article_branch(ctx: Context, rule: Rule) -> bool:
    return any(ctx.kb.claims[c].section_en == TREE_SECTION for c in rule.claims if c in ctx.kb.claims)


def _recommendation(ctx: Context, rule: Rule) -> str:
    """What a branch recommends, in the page's language: the rule's own title (without the "Decision
    tree:" that every branch's title starts with), or on the Chinese site the article's own words."""
    if ctx.zh:
        own = getattr(rule, "title_zh", None)
        if own:
            return str(own)
        quoted = [ctx.kb.claims[c].quote_zh for c in rule.claims
                  if c in ctx.kb.claims and ctx.kb.claims[c].section_en == TREE_SECTION]
        if quoted:
            return quoted[0]
    title = rule.title
    head, sep, rest = title.partition(":")
    text = rest.strip() if sep and head.strip().lower() == TREE_SECTION.lower() else title
    return text[:1].upper() + text[1:]


def diagram(ctx: Context) -> str:
    t = ctx.t
    rows: list[tuple[dtree.Box, dtree.Box]] = []
    others: list[str] = []
    for branch in dtree.branches(ctx.kb.rules, ctx.zh):
        if not _is_article_branch(ctx, branch.rule):
            others.append(ctx.rule_title(branch.rule.id))
            continue
        when = t("If: ", "如果：") + (t(" and ", "，且 ").join(branch.when) or t("any workload", "任意工作负载"))
        then = [_recommendation(ctx, branch.rule)]
        if branch.picks:
            then.append(t("Prefers: ", "优先：") + t(", ", "，").join(branch.picks))
        rows.append((dtree.Box([when], "gpukb-tree-when"), dtree.Box(then, "gpukb-tree-then", True)))
    footer = None
    if others:
        footer = dtree.Box([t("Then, within every branch and for all other workloads: the fastest option first",
                              "然后，在每个分支内以及其他所有工作负载：最快的方案排在前面")]
                           + [f"· {o}" for o in others], "gpukb-tree-other", True)
    title = t("The article's decision tree, as the rules apply it", "原文的选型决策树（按规则的实际判断）")
    return dtree.tree_html(title, t("Your workload", "你的工作负载"), rows, footer)


def _tree_list(ctx: Context, node: dtree.Node, depth: int) -> list[str]:
    pad = "    " * depth
    lines = []
    for child in node.children:
        lines.append(f"{pad}- {esc(child.test)}")
        lines += _tree_list(ctx, child, depth + 1)
    for r in node.rules:
        lines.append(f"{pad}- **{ctx.t('rule', '规则')}** {ctx.rule(TREE, f'{r.id}@{r.version}')} — {esc(ctx.rule_title(r.id))}")
        for text in dtree.asserts(r):
            lines.append(f"{pad}    - {ctx.t('asserts', '断言')} {esc(text)}")
    return lines


def decision_tree(ctx: Context) -> str:
    kb, here, t = ctx.kb, TREE, ctx.t
    rules = dtree.recommendation_rules(kb.rules)
    out = h1(t("Decision tree", "决策树"))
    out += [t("How the article chooses GPUs, and how the rules apply it: each box on the left is a question about "
              "your workload, the box under it what the knowledge base then prefers. The drawing is derived from "
              f"the {len(rules)} rules in `rules/recommendations/` each time the site is built.",
              "原文如何选择 GPU，以及规则如何执行它：左侧每个方框是关于你的工作负载的一个问题，"
              "下方方框是知识库随后优先考虑的方案。"
              f"这张图在每次构建网站时由 `rules/recommendations/` 中的 {len(rules)} 条规则生成。"), ""]
    if not rules:
        return "\n".join([*out, t("There are no recommendation rules yet.", "还没有推荐规则。"), ""])
    out += ['<figure class="gpukb-figure gpukb-tree-figure">' + diagram(ctx) + "</figure>", "",
            f"## {t('The rules behind it', '背后的规则')}", "",
            t("A path is the conditions of one rule's `when` patterns, the workload's first; rules whose conditions "
              "begin alike share a branch. Conditions that only tie one fact to another (such as the same GPU as the "
              "plan) are listed in the table.",
              "一条路径就是一条规则 `when` 模式中的条件，工作负载的条件在前；条件开头相同的规则共用一个分支。"
              "只把一个事实与另一个事实关联起来的条件（例如与方案相同的 GPU）列在表中。"), ""]
    out += _tree_list(ctx, dtree.build_tree(kb.rules, ctx.lang), 0) + [""]
    out += [table([t("Rule", "规则"), t("Fires when", "触发条件"), t("Joins", "关联"), t("Claims", "论断")],
                  [[ctx.rule(here, f"{r.id}@{r.version}"),
                    t("; ", "；").join(esc(x) for x in dtree.path(r, ctx.lang)) or t("always", "总是"),
                    t("; ", "；").join(esc(x) for x in dtree.joins(r, ctx.lang)) or "—",
                    ", ".join(ctx.claim(here, c, with_badge=False) for c in r.claims) or "—"] for r in rules]), ""]
    return "\n".join(out)
