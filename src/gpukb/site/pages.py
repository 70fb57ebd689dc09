"""One function per kind of page. Each returns Markdown for MkDocs; every piece of knowledge-base
text goes through `esc` (or `title_text` for titles), so it renders as text and never as markup."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..answer import MEMORY_PARTS, Answer, Option
from ..answer_text import describe_strategy
from ..kb import KnowledgeBase
from ..rules import STAGES, Rule
from ..scenarios import Run
from ..trace import TraceStep
from . import tree as dtree
from .chart import Point, scatter_svg
from .conditions import readable
from .text import badge, code, duration, esc, esc_spaced, external, gb, html_text, link, number, rel, table, title_text

# --- where each page lives (paths relative to the docs folder) -------------------------------

HOME = "index.md"
ARTICLE = "claims/index.md"
RULES = "rules/index.md"
TREE = "decision-tree.md"
GPUS = "gpus/index.md"
CHART = "gpus/capacity-vs-bandwidth.svg"
MODELS = "models/index.md"
SCENARIOS = "scenarios/index.md"
SOURCES = "reference/sources.md"
INTERCONNECTS = "reference/interconnects.md"
POLICIES = "reference/policies.md"
PRECISIONS = "reference/precisions.md"
CONTRIBUTING = "contributing/index.md"  # hand-written, in site/docs/
REPOSITORY_GUIDE = "contributing/repository.md"  # the repository's CONTRIBUTING.md, when there is one
CHANGELOG = "changelog.md"
# Repository files that have a page here; links to them from included Markdown are pointed at it.
REPOSITORY_PAGES = {"README.md": HOME, "CHANGELOG.md": CHANGELOG, "CONTRIBUTING.md": REPOSITORY_GUIDE}


def claim_page(claim_id: str) -> str:
    return f"claims/{claim_id}.md"


def rule_page(rule_id: str) -> str:
    return f"rules/{rule_id}.md"


def gpu_page(gpu_id: str) -> str:
    return f"gpus/{gpu_id}.md"


def model_page(model_id: str) -> str:
    return f"models/{model_id}.md"


def scenario_page(scenario_id: str) -> str:
    return f"scenarios/{scenario_id}.md"


STAGE_TEXT = {
    "requirements": "what the workload needs: memory, activations, KV cache",
    "bottlenecks": "what will hold it back on each GPU",
    "remedies": "what to do about it",
    "recommendations": "how the options are ranked",
}


# --- what links to what ----------------------------------------------------------------------


@dataclass(frozen=True)
class Role:
    run: Run
    option: Option
    rank: int | None  # 1 = recommended; None = rejected


@dataclass
class Context:
    kb: KnowledgeBase
    runs: list[Run]
    rules_citing: dict[str, list[str]] = field(default_factory=dict)
    claim_runs: dict[str, list[Run]] = field(default_factory=dict)
    rule_runs: dict[str, list[Run]] = field(default_factory=dict)
    gpu_roles: dict[str, list[Role]] = field(default_factory=dict)
    builtins: dict[str, TraceStep] = field(default_factory=dict)  # trace steps no rule file defines
    source_users: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # source -> (page, label)

    @classmethod
    def build(cls, kb: KnowledgeBase, runs: list[Run]) -> Context:
        ctx = cls(kb, runs)
        citing: dict[str, list[str]] = defaultdict(list)
        for rule in sorted(kb.rules.values(), key=lambda r: r.id):
            for claim_id in rule.claims:
                citing[claim_id].append(rule.id)
        ctx.rules_citing = dict(citing)
        claim_runs: dict[str, list[Run]] = defaultdict(list)
        rule_runs: dict[str, list[Run]] = defaultdict(list)
        roles: dict[str, list[Role]] = defaultdict(list)
        for run in runs:
            for step in run.answer.trace:
                rule_id = step.rule.rsplit("@", 1)[0]
                if rule_id not in kb.rules:
                    ctx.builtins.setdefault(rule_id, step)
                elif run not in rule_runs[rule_id]:
                    rule_runs[rule_id].append(run)
                for claim in step.claims:
                    if run not in claim_runs[claim.id]:
                        claim_runs[claim.id].append(run)
            for i, option in enumerate(run.answer.options):
                roles[option.gpu].append(Role(run, option, i + 1))
            for option in run.answer.rejected:
                roles[option.gpu].append(Role(run, option, None))
        ctx.claim_runs, ctx.rule_runs, ctx.gpu_roles = dict(claim_runs), dict(rule_runs), dict(roles)
        users: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for claim in kb.claims.values():
            for s in claim.evidence:
                users[s].append((claim_page(claim.id), claim.id))
        for rule in sorted(kb.rules.values(), key=lambda r: r.id):
            for s in rule.sources:
                users[s].append((rule_page(rule.id), rule.id))
        for gpu in kb.gpus.values():
            for s in gpu.sources:
                users[s].append((gpu_page(gpu.id), gpu.id))
        for model in kb.models.values():
            for s in model.sources:
                users[s].append((model_page(model.id), model.id))
        ctx.source_users = dict(users)
        return ctx

    # links, from page `here`
    def claim(self, here: str, claim_id: str, with_badge: bool = True) -> str:
        if claim_id not in self.kb.claims:
            return code(claim_id)
        text = link(code(claim_id), here, claim_page(claim_id))
        return f"{text} {badge(self.kb.claims[claim_id].verdict, 'verdict')}" if with_badge else text

    def rule(self, here: str, key: str) -> str:
        """A link to a rule by id or by `id@version` (as traces name them)."""
        rule_id = key.rsplit("@", 1)[0]
        if rule_id in self.kb.rules:
            return link(code(key), here, rule_page(rule_id))
        return link(code(key), here, RULES, f"built-in-{rule_id}")

    def source(self, here: str, source_id: str) -> str:
        if source_id not in self.kb.sources:
            return code(source_id)
        return link(code(source_id), here, SOURCES, source_id)

    def gpu(self, here: str, gpu_id: str) -> str:
        return link(code(gpu_id), here, gpu_page(gpu_id)) if gpu_id in self.kb.gpus else code(gpu_id)

    def model(self, here: str, model_id: str) -> str:
        return link(code(model_id), here, model_page(model_id)) if model_id in self.kb.models else code(model_id)

    def scenario(self, here: str, run: Run) -> str:
        return link(esc(run.scenario.title), here, scenario_page(run.scenario.id))

    def interconnect(self, here: str, ic_id: str | None) -> str:
        if ic_id is None:
            return "none"
        return link(code(ic_id), here, INTERCONNECTS, ic_id) if ic_id in self.kb.interconnects else code(ic_id)


def _list(items: Iterable[str], empty: str = "None.") -> str:
    lines = [f"- {item}" for item in items]
    return "\n".join(lines) if lines else empty


def _h1(text: object) -> str:
    return f"# {esc(title_text(text))}"


def _bilingual(zh: str, en: str) -> str:
    """The Chinese original beside the English translation (stacked on narrow screens)."""
    return ('<div class="gpukb-bilingual">'
            f'<blockquote lang="zh-Hans"><p>{esc(zh)}</p></blockquote>'
            f'<blockquote lang="en"><p>{esc(en)}</p></blockquote></div>')


def _json(value: Any) -> str:
    return code(json.dumps(value, ensure_ascii=False, sort_keys=False, default=str))


def _source_line(ctx: Context, here: str, source_id: str) -> str:
    s = ctx.kb.sources.get(source_id)
    if s is None:
        return code(source_id)
    where = external(esc(s.title), s.url) if s.url else f"{esc(s.title)} ({code(s.path)})"
    meta = ", ".join(esc(x) for x in (s.publisher, s.kind, s.as_of) if x)
    return f"{where} — {meta} · {ctx.source(here, source_id)}"


# --- Markdown from the repository (README, CHANGELOG, CONTRIBUTING) -------------------------

_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def repository_markdown(markdown: str, here: str, pages: dict[str, str]) -> str:
    """Markdown written for the repository, placed on page `here`: links to repository files that have
    a page on the site point at it; links to other repository files become plain text (the site has
    no copy of them). Code fences are left alone."""

    def fix(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^#", target):
            return match[0]
        path, _, fragment = target.partition("#")
        page = pages.get(path.removeprefix("./"))
        if page is not None and not bang:
            return f"[{text}]({rel(here, page, fragment or None)})"
        return f"{text} ({code(target)})" if text else code(target)

    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        out.append(line if fenced else _LINK.sub(fix, line))
    return list_indents("\n".join(out))


_ITEM = re.compile(r"^([-*+]|\d{1,9}[.)])( +)\S")


def list_indents(markdown: str) -> str:
    """Re-indent list items' continuation lines the way Python-Markdown reads them.

    GitHub continues a list item at the column its text starts (3 spaces after "1. ", 2 after "- ");
    Python-Markdown wants 4 spaces per level, or a code block inside an item ends the list and the
    numbering restarts. Lines are shifted, never reflowed, so anything else reads as before.
    """
    out: list[str] = []
    stack: list[tuple[int, int]] = []  # (content column in the input, content column in the output)
    fenced = False
    for line in markdown.splitlines():
        if not line.strip():
            out.append("")
            continue
        indent = len(line) - len(line.lstrip(" "))
        if not fenced:
            while stack and indent < stack[-1][0]:
                stack.pop()
        new_indent = stack[-1][1] + indent - stack[-1][0] if stack else indent
        text = line.lstrip(" ")
        out.append(" " * max(new_indent, 0) + text)
        if text.startswith("```") or text.startswith("~~~"):
            fenced = not fenced
        elif not fenced and (item := _ITEM.match(text)):
            stack.append((indent + len(item[1]) + len(item[2]), max(new_indent, 0) + 4))
    return "\n".join(out)


def repository_guide(contributing_md: str, pages: dict[str, str]) -> str:
    text = repository_markdown(contributing_md.strip(), REPOSITORY_GUIDE, pages)
    if not text.startswith("# "):
        text = "# Contributing\n\n" + text
    return text + "\n"


# --- home ------------------------------------------------------------------------------------


def readme_sections(readme: str) -> tuple[str, dict[str, str]]:
    """(text before the first `## `, {heading: body}) of a Markdown file, ignoring code fences."""
    intro: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] = intro
    fenced = False
    for line in readme.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
            continue
        if not fenced and line.startswith("# ") and current is intro:
            continue
        current.append(line)
    return "\n".join(intro).strip(), {k: "\n".join(v).strip() for k, v in sections.items()}


def home(ctx: Context, readme: str | None, pages: dict[str, str] | None = None) -> str:
    kb = ctx.kb
    intro, sections = readme_sections(repository_markdown(readme or "", HOME, pages or REPOSITORY_PAGES))
    verdicts = Counter(c.verdict for c in kb.claims.values())
    stages = Counter(r.stage for r in kb.rules.values())
    here = HOME
    out = ["# gpukb", "", intro or esc(kb.manifest.description), ""]
    out += ["## What is in it", "",
            table(["Page", "What it holds"], [
                [link("The article", here, ARTICLE), f"{len(kb.claims)} claims: "
                 + ", ".join(f"{n} {badge(v, 'verdict')}" for v, n in sorted(verdicts.items()))],
                [link("Rules", here, RULES), f"{len(kb.rules)}: "
                 + ", ".join(f"{stages.get(s, 0)} {s}" for s in STAGES)],
                [link("Decision tree", here, TREE),
                 f"derived from the {len(dtree.recommendation_rules(kb.rules))} recommendation rules"],
                [link("GPU catalog", here, GPUS), f"{len(kb.gpus)} GPUs"],
                [link("Models", here, MODELS), f"{len(kb.models)} models"],
                [link("Scenarios", here, SCENARIOS), f"{len(ctx.runs)} workloads answered when this site was built"],
                [link("Sources", here, SOURCES), f"{len(kb.sources)} datasheets, papers and documents"],
            ]), "",
            f"Knowledge base version **{code(kb.version)}** — see the {link('changelog', here, CHANGELOG)}. "
            f"Every page about an entry is generated from `kb/` and `rules/` when the site is built.", ""]
    for heading in ("Quick start", "From Python"):
        if heading in sections:
            out += [f"## {heading}", "", sections[heading], ""]
    out += ["## How to read a trace", ""]
    if "Reading a trace" in sections:
        out += [sections["Reading a trace"], ""]
    runs_with_best = [r for r in ctx.runs if r.answer.best is not None]
    if runs_with_best:
        run = runs_with_best[0]
        best = run.answer.best
        assert best is not None
        steps = best.trace[:2]
        out += [f"Here are the first steps behind the best option of the scenario "
                f"{ctx.scenario(here, run)}: each shows the rule and its stage, the facts it matched, the "
                "sentence it wrote, every value with the expression that computed it, the article's claims "
                "it rests on (quote and verdict) and its sources.", ""]
        for step in steps:
            out += [render_step(ctx, here, step, heading_level=4, anchors=False), ""]
        out += [f"The {link('scenarios', here, SCENARIOS)} show complete traces.", ""]
    if "How an answer is built" in sections:
        out += ["## How an answer is built", "", sections["How an answer is built"], ""]
    return "\n".join(out)


# --- the article and its claims --------------------------------------------------------------


def _sections(kb: KnowledgeBase) -> dict[tuple[str, str], list[str]]:
    sections: dict[tuple[str, str], list[str]] = {}
    for claim in kb.claims.values():  # file order: the article's order
        sections.setdefault((claim.section, claim.section_en), []).append(claim.id)
    return sections


def article(ctx: Context) -> str:
    kb, here = ctx.kb, ARTICLE
    verdicts = Counter(c.verdict for c in kb.claims.values())
    source = kb.sources.get("article")
    out = [_h1("The article, claim by claim"), ""]
    if source is not None:
        out += [f"The source: {_source_line(ctx, here, 'article')}.", ""]
    out += ["Every checkable sentence of the article is a claim below, in the article's order: the Chinese original "
            "beside an English translation, a verdict, the reason for it and the evidence. Sentences that assert "
            f"nothing checkable are {link('listed at the end', here, ARTICLE, 'rhetoric')}." if kb.rhetoric else
            "Every checkable sentence of the article is a claim below, in the article's order: the Chinese original "
            "beside an English translation, a verdict, the reason for it and the evidence.", ""]
    out += [table(["Verdict", "Claims"], [[badge(v, "verdict"), str(n)] for v, n in sorted(verdicts.items())], "lr"), ""]
    for number_, ((zh, en), ids) in enumerate(_sections(kb).items(), start=1):
        out += [f"## {esc(zh)} · {esc(en)} {{#section-{number_}}}", ""]
        for claim_id in ids:
            c = kb.claims[claim_id]
            out += [f"### {esc(claim_id)} {{#{claim_id}}}", "",
                    f"{badge(c.verdict, 'verdict')} {esc(c.kind)} · {link('claim page', here, claim_page(claim_id))}", "",
                    _bilingual(c.quote_zh, c.text_en), "",
                    f"**Reason.** {esc(c.reason)}", "",
                    "**Evidence:** " + ", ".join(ctx.source(here, s) for s in c.evidence), ""]
            citing = ctx.rules_citing.get(claim_id, [])
            if citing:
                out += ["**Cited by:** " + ", ".join(ctx.rule(here, r) for r in citing), ""]
    if kb.rhetoric:
        out += ["## Sentences that are not claims {#rhetoric}", "",
                "These sentences of the article assert nothing that could be checked.", "",
                table(["Sentence", "Section", "Why it is not a claim"],
                      [[esc(r.sentence), esc(r.section_en or r.section), esc(r.reason)] for r in kb.rhetoric]), ""]
    return "\n".join(out)


def claim(ctx: Context, claim_id: str) -> str:
    c, here = ctx.kb.claims[claim_id], claim_page(claim_id)
    out = [_h1(claim_id), "",
           f"{badge(c.verdict, 'verdict')} · {esc(c.kind)} claim · section {esc(c.section)} ({esc(c.section_en)}) · "
           f"version {c.version}{' · ' + esc(c.status) if c.status != 'stable' else ''} · "
           f"{link('in the article', here, ARTICLE, claim_id)}", "",
           _bilingual(c.quote_zh, c.text_en), "",
           f"## Verdict: {esc(c.verdict)}", "", esc(c.reason), "",
           "## Evidence", "", _list(_source_line(ctx, here, s) for s in c.evidence), "",
           "## Cited by rules", "",
           _list((f"{ctx.rule(here, r)} — {esc(ctx.kb.rules[r].title)}" for r in ctx.rules_citing.get(claim_id, [])),
                 "No rule cites this claim."), "",
           "## In the scenarios", "",
           _list((ctx.scenario(here, run) for run in ctx.claim_runs.get(claim_id, [])),
                 "No scenario's trace rests on this claim."), ""]
    return "\n".join(out)


# --- rules -----------------------------------------------------------------------------------


def rules_index(ctx: Context) -> str:
    kb, here = ctx.kb, RULES
    out = [_h1("Rules"), "",
           "Forward-chaining rules, one YAML file each under `rules/<stage>/`. A rule matches facts "
           "(**when**), asserts new facts computed by whitelisted expressions (**then**), cites the article's "
           "claims it rests on and its sources, and carries its own tests. Traces name a rule as `id@version`.", ""]
    for stage in STAGES:
        rules = sorted((r for r in kb.rules.values() if r.stage == stage), key=lambda r: r.id)
        out += [f"## {stage.capitalize()} {{#{stage}}}", "", f"{esc(STAGE_TEXT.get(stage, ''))}.", ""]
        if not rules:
            out += ["No rules yet.", ""]
            continue
        out += [table(["Rule", "Title", "Version", "Claims", "Tests"],
                      [[ctx.rule(here, r.id) + (f" {badge(r.status, 'status')}" if r.status != "stable" else ""),
                        esc(r.title), str(r.version), str(len(r.claims)), str(len(r.tests))] for r in rules], "lllrr"), ""]
    if ctx.builtins:
        out += ["## Built-in steps {#built-in}", "",
                "Steps of the engine itself that appear in traces but are not rule files: the planner, which "
                "places the memory on GPUs with a parallel strategy.", ""]
        for rule_id, step in sorted(ctx.builtins.items()):
            out += [f"### {esc(step.rule)} {{#built-in-{rule_id}}}", "", f"{esc(step.title)} · stage {esc(step.stage)}", ""]
            if step.claims:
                out += ["Rests on " + ", ".join(ctx.claim(here, c.id) for c in step.claims) + ".", ""]
            if step.sources:
                out += ["Sources: " + ", ".join(ctx.source(here, s) for s in step.sources) + ".", ""]
    return "\n".join(out)


def _outputs(rule: Rule) -> list[str]:
    out = []
    for o in rule.then:
        rows = [[code(k), "set", code(json.dumps(v))] for k, v in o.set.items()]
        rows += [[code(k), "let (traced, not asserted)", code(v)] for k, v in o.let.items()]
        rows += [[code(k), "compute", code(v)] for k, v in o.compute.items()]
        out += [f"Asserts a **{esc(o.kind)}** fact:", "", table(["Field", "How", "Value or expression"], rows), ""]
    return out


def rule(ctx: Context, rule_id: str) -> str:
    kb, here = ctx.kb, rule_page(rule_id)
    r = kb.rules[rule_id]
    where = kb.locations.get(f"rules:{rule_id}")
    meta = [["Key", code(f"{r.id}@{r.version}")], ["Stage", link(esc(r.stage), here, RULES, r.stage)],
            ["Version", str(r.version)], ["Status", esc(r.status)]]
    if r.superseded_by:
        meta.append(["Superseded by", ctx.rule(here, r.superseded_by)])
    if where:
        meta.append(["Defined in", code(f"{where[0]}:{where[1]}")])
    out = [_h1(rule_id), "", f"**{esc(r.title)}**", "", table(["Property", "Value"], meta), "", "## When", "",
           "The rule fires once for every combination of facts that matches all of these patterns:", ""]
    for p in r.when:
        line = f"- **{esc(p.alias)}** — a {code(p.kind)} fact"
        if p.if_:
            line += f" where {esc(readable(p.if_))} ({code(p.if_)})"
        out.append(line)
    out += ["", "## Then", ""] + _outputs(r)
    out += ["## Explanation", "", "Each firing writes this sentence into the trace, with the values filled in:", "",
            f"> {esc(r.explain)}", "",
            "## Claims it rests on", ""]
    claim_lines = []
    for claim_id in r.claims:
        c = kb.claims.get(claim_id)
        extra = f" 「{esc(c.quote_zh)}」 — {esc(c.text_en)}" if c else ""
        claim_lines.append(ctx.claim(here, claim_id) + extra)
    out += [_list(claim_lines, "This rule cites no claim of the article."), "",
            "## Sources", "", _list((_source_line(ctx, here, s) for s in r.sources), "No sources."), "",
            "## Tests", "", "`gpukb lint` runs each example; values match within 0.5%.", ""]
    if r.tests:
        rows = []
        for t in r.tests:
            expect = "fires" if t.expect.fires else "does not fire"
            if t.expect.values:
                expect += ": " + ", ".join(f"{code(k)} = {esc(number(v))}" for k, v in t.expect.values.items())
            rows.append([esc(t.name), _json(t.workload), expect])
        out += [table(["Test", "Workload", "Expects"], rows), ""]
    else:
        out += ["This rule has no tests.", ""]
    out += ["## In the scenarios", "",
            _list((ctx.scenario(here, run) for run in ctx.rule_runs.get(rule_id, [])),
                  "This rule fired in no scenario."), ""]
    return "\n".join(out)


# --- the decision tree -----------------------------------------------------------------------


def _tree_list(ctx: Context, node: dtree.Node, depth: int) -> list[str]:
    pad = "    " * depth
    lines = []
    for child in node.children:
        lines.append(f"{pad}- {esc(child.test)}")
        lines += _tree_list(ctx, child, depth + 1)
    for r in node.rules:
        lines.append(f"{pad}- **rule** {ctx.rule(TREE, f'{r.id}@{r.version}')} — {esc(r.title)}")
        for text in dtree.asserts(r):
            lines.append(f"{pad}    - asserts {esc(text)}")
    return lines


def decision_tree(ctx: Context) -> str:
    kb, here = ctx.kb, TREE
    root = dtree.build_tree(kb.rules)
    rules = dtree.recommendation_rules(kb.rules)
    out = [_h1("Decision tree"), "",
           f"Derived when the site is built from the {len(rules)} rules in `rules/recommendations/`: a path is the "
           "conditions of one rule's `when` patterns, the workload's first; rules whose conditions begin alike "
           "share a branch. Each leaf is a rule and the facts it asserts. Conditions that only tie one fact to "
           "another (such as the same GPU as the plan) are listed under the diagram. A rule fires for every "
           "combination of facts that passes its path; where it does not, the options keep their default order.",
           ""]
    if not rules:
        return "\n".join([*out, "There are no recommendation rules yet.", ""])
    out += ["```mermaid", dtree.mermaid(root), "```", "", "## The same tree as a list", ""]
    out += _tree_list(ctx, root, 0) + [""]
    out += ["## Rules in the tree", "",
            table(["Rule", "Fires when", "Joins", "Claims"],
                  [[ctx.rule(here, f"{r.id}@{r.version}"), "; ".join(esc(t) for t in dtree.path(r)) or "always",
                    "; ".join(esc(t) for t in dtree.joins(r)) or "—",
                    ", ".join(ctx.claim(here, c, with_badge=False) for c in r.claims) or "—"] for r in rules]), ""]
    return "\n".join(out)


# --- GPUs ------------------------------------------------------------------------------------


def _tflops(v: float | None) -> str:
    return "—" if not v else f"{v / 1e12:,.0f}"


def gpu_chart(kb: KnowledgeBase) -> str:
    points = [Point(g.id, g.memory / 1e9, g.memory_bandwidth / 1e12, g.vendor,
                    f"{g.name}: {g.memory / 1e9:g} GB at {g.memory_bandwidth / 1e12:g} TB/s") for g in kb.gpus.values()]
    return scatter_svg(points, title="Memory capacity against memory bandwidth",
                       x_label="memory capacity, GB (log scale)", y_label="memory bandwidth, TB/s (log scale)")


def gpus_index(ctx: Context) -> str:
    kb, here = ctx.kb, GPUS
    gpus = sorted(kb.gpus.values(), key=lambda g: (g.vendor, -g.memory, g.id))
    rows = []
    for g in gpus:
        scale_up = (f"{g.scale_up_bandwidth / 1e9:,.0f} × {g.scale_up_domain}"
                    if g.scale_up and g.scale_up_bandwidth else "PCIe only")
        price = f"${g.price.usd:,.0f}" if g.price else "—"
        rows.append([link(code(g.id), here, gpu_page(g.id)), esc(g.vendor), f"{g.memory / 1e9:g}",
                     f"{g.memory_bandwidth / 1e12:.2f}", _tflops(g.bf16_flops), _tflops(g.fp8_flops), scale_up,
                     f"{g.tdp:,.0f}", price])
    out = [_h1("GPU catalog"), "",
           f"{len(gpus)} GPUs, each from its datasheet or whitepaper (sources on its page). Memory in GB (1e9 bytes), "
           "bandwidth in TB/s, dense tensor TFLOPS without sparsity, scale-up GB/s per direction per GPU "
           "× the GPUs in one scale-up domain, board power in W, launch or list price in US dollars where a dated "
           "source gives one (date on the GPU's page).", "",
           f"![Memory capacity against memory bandwidth, one point per GPU]({CHART.rsplit('/', 1)[1]})", "",
           table(["GPU", "Vendor", "GB", "TB/s", "BF16", "FP8", "Scale-up", "W", "Price"], rows, "llrrrrrrr"), ""]
    return "\n".join(out)


def gpu(ctx: Context, gpu_id: str) -> str:
    kb, here = ctx.kb, gpu_page(gpu_id)
    g = kb.gpus[gpu_id]
    spec = [
        ["Id", code(g.id)], ["Vendor", esc(g.vendor)], ["Architecture", esc(g.architecture)],
        ["Segment", esc(g.segment)], ["Form factor", esc(g.form_factor)],
        ["Memory", f"{gb(g.memory)} {esc(g.memory_type)}"],
        ["Memory bandwidth", f"{g.memory_bandwidth / 1e12:,.2f} TB/s"],
        ["Dense BF16", f"{_tflops(g.bf16_flops)} TFLOPS"], ["Dense FP16", f"{_tflops(g.fp16_flops)} TFLOPS"],
        ["Dense FP8", f"{_tflops(g.fp8_flops)} TFLOPS"], ["FP32 (non-tensor)", f"{_tflops(g.fp32_flops)} TFLOPS"],
        ["Scale-up link", ctx.interconnect(here, g.scale_up)
         + (f", {g.scale_up_bandwidth / 1e9:,.0f} GB/s per direction, {g.scale_up_domain} GPUs per domain"
            if g.scale_up_bandwidth else "")],
        ["Host link", ctx.interconnect(here, g.pcie)], ["Board power", f"{g.tdp:,.0f} W"],
        ["Cooling", esc(", ".join(g.cooling))], ["As of", esc(g.as_of)], ["Version", str(g.version)],
    ]
    if g.memory_bandwidth and g.bf16_flops:
        spec.append(["Ridge point (BF16)", f"{g.bf16_flops / g.memory_bandwidth:,.0f} FLOP/byte"])
    if g.price:
        spec.append(["Price", f"${g.price.usd:,.0f} {esc(g.price.kind)}, {esc(g.price.as_of)} "
                              f"({ctx.source(here, g.price.source)})"])
    out = [_h1(g.name), "", table(["Specification", "Value"], spec), ""]
    if g.notes:
        out += ["## Notes", "", esc(g.notes), ""]
    out += ["## Sources", "", _list(_source_line(ctx, here, s) for s in g.sources), "", "## In the scenarios", ""]
    roles = ctx.gpu_roles.get(gpu_id, [])
    if roles:
        rows = []
        for role in roles:
            o = role.option
            if role.rank is None:
                reason = next((f for f in o.findings if f.severity == "error"), None)
                verdict = "rejected" + (f": {esc(reason.message)}" if reason else "")
            else:
                verdict = "**recommended**" if role.rank == 1 else f"option {role.rank} of {len(role.run.answer.options)}"
            rows.append([ctx.scenario(here, role.run), verdict, str(o.count), f"{gb(o.per_gpu_bytes)} of {gb(o.usable_bytes)}",
                         number(o.tokens_per_s) if o.tokens_per_s else "—"])
        out += [table(["Scenario", "Place", "GPUs", "Memory per GPU", "Tokens/s"], rows, "llrrr"), ""]
    else:
        out += ["No scenario considered this GPU.", ""]
    return "\n".join(out)


# --- models ----------------------------------------------------------------------------------


def kv_bytes_per_token(layers: int, kv_heads: int, head_dim: int, bytes_per_value: int = 2) -> int:
    """Keys and values (2) for every layer, KV head and head dimension, at 16 bits (2 bytes) by default."""
    return 2 * layers * kv_heads * head_dim * bytes_per_value


def models_index(ctx: Context) -> str:
    kb, here = ctx.kb, MODELS
    models = sorted(kb.models.values(), key=lambda m: (m.family, m.params, m.id))
    rows = [[link(esc(title_text(m.name)), here, model_page(m.id)), f"{m.params / 1e9:,.2f} B"
             + (f" ({m.active_params / 1e9:,.1f} B active)" if m.active_params else ""),
             str(m.layers), str(m.hidden_size), f"{m.heads} / {m.kv_heads}", str(m.head_dim), f"{m.context_length:,}",
             f"{kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim):,}"] for m in models]
    out = [_h1("Models"), "",
           "Hyper-parameters from each model's published configuration. KV bytes per token are for a 16-bit cache: "
           "2 (keys and values) × layers × KV heads × head dimension × 2 bytes.", "",
           table(["Model", "Parameters", "Layers", "Hidden", "Heads / KV heads", "Head dim", "Context",
                  "KV bytes per token"], rows, "lrrrrrrr"), ""]
    return "\n".join(out)


def model(ctx: Context, model_id: str) -> str:
    kb, here = ctx.kb, model_page(model_id)
    m = kb.models[model_id]
    kv = kv_bytes_per_token(m.layers, m.kv_heads, m.head_dim)
    spec = [["Id", code(m.id)], ["Family", esc(m.family)], ["Parameters", f"{m.params:,} ({m.params / 1e9:,.2f} B)"]]
    if m.active_params:
        spec.append(["Active parameters per token", f"{m.active_params:,}"])
    if m.moe:
        spec.append(["Experts", f"{m.moe.experts}, {m.moe.experts_per_token} per token"])
    spec += [["Layers", str(m.layers)], ["Hidden size", str(m.hidden_size)], ["Attention heads", str(m.heads)],
             ["KV heads", str(m.kv_heads) + (" (grouped-query attention)" if m.kv_heads < m.heads else "")],
             ["Head dimension", str(m.head_dim)], ["Intermediate size", f"{m.intermediate_size:,} ({esc(m.mlp)} MLP)"],
             ["Vocabulary", f"{m.vocab_size:,}"], ["Context length", f"{m.context_length:,}"],
             ["Normalisation", esc(m.norm)], ["Position embeddings", esc(m.position_embeddings)],
             ["Tied embeddings", str(m.tied_embeddings).lower()], ["Version", str(m.version)]]
    out = [_h1(m.name), "", table(["Hyper-parameter", "Value"], spec), "", "## KV cache", "",
           f"2 × {m.layers} layers × {m.kv_heads} KV heads × {m.head_dim} × 2 bytes = **{kv:,} bytes per token** "
           f"at 16 bits; a full {m.context_length:,}-token context holds {gb(kv * m.context_length)} per sequence.", ""]
    if m.notes:
        out += ["## Notes", "", esc(m.notes), ""]
    out += ["## Sources", "", _list(_source_line(ctx, here, s) for s in m.sources), "", "## In the scenarios", "",
            _list((ctx.scenario(here, run) for run in ctx.runs if run.answer.workload.model == model_id),
                  "No scenario uses this model."), ""]
    return "\n".join(out)


# --- scenarios -------------------------------------------------------------------------------


def _strategy(o: Option) -> str:
    return esc(describe_strategy(o))


def _values_table(step: TraceStep) -> str:
    """A trace step's values as one line of raw HTML: there are thousands of these, and they hold no
    links, so Markdown need not parse them (which keeps the build fast)."""
    rows = []
    for v in step.values:
        expression = f"<code>{html_text(v['expr'])}</code>" if v["expr"] else "—"
        rows.append(f"<tr><td><code>{html_text(v['name'])}</code></td><td>{expression}</td>"
                    f'<td style="text-align: right">{html_text(number(v["value"]))}</td></tr>')
    return ('<table><thead><tr><th>Value</th><th>Expression</th><th style="text-align: right">Result</th></tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table>")


def render_step(ctx: Context, here: str, step: TraceStep, heading_level: int = 4, anchors: bool = True) -> str:
    """One trace step: rule, stage, matched facts, sentence, values with their expressions, claims, sources."""
    hashes = "#" * heading_level
    # traces repeat the same rules and claims many times over: kept out of the search index
    anchor = f" {{#step-{step.step} data-search-exclude}}" if anchors else " { data-search-exclude }"
    out = [f"{hashes} {step.step}. {esc(step.title)}{anchor}", "",
           f"{ctx.rule(here, step.rule)} · {esc(step.stage)}"
           + (" · matched " + ", ".join(esc(i["label"]) for i in step.inputs) if step.inputs else ""), "",
           f"> {esc(step.sentence)}", ""]
    if step.values:
        out += [_values_table(step), ""]
    for c in step.claims:
        out.append(f"- rests on {ctx.claim(here, c.id)} 「{esc(c.quote_zh)}」 — {esc(c.text_en)}")
    if step.sources:
        out.append("- sources: " + ", ".join(ctx.source(here, s) for s in step.sources))
    return "\n".join(out).rstrip()


def _finding_rows(ctx: Context, here: str, answer: Answer) -> list[list[str]]:
    return [[badge(f.severity, "severity"), esc(f.kind), ctx.gpu(here, f.gpu) if f.gpu else "all", esc(f.message),
             ctx.rule(here, f.rule), ", ".join(ctx.claim(here, c, with_badge=False) for c in f.claims) or "—"]
            for f in answer.findings]


def scenarios_index(ctx: Context) -> str:
    here = SCENARIOS
    rows = []
    for run in ctx.runs:
        a = run.answer
        best = a.best
        rows.append([ctx.scenario(here, run), _json(run.scenario.workload), gb(a.memory.total),
                     f"{best.count} × {ctx.gpu(here, best.gpu)}" if best else "none fits",
                     str(len(a.findings)), str(len(a.trace))])
    out = [_h1("Scenarios"), "",
           "Canonical workloads, answered by `ask()` when this site was built (the list is `site/scenarios.yaml`). "
           "Memory is one replica before sharding.", "",
           table(["Scenario", "Workload", "Memory", "Recommended", "Findings", "Trace steps"], rows, "llrlrr"), ""]
    return "\n".join(out)


def scenario(ctx: Context, run: Run) -> str:
    here, a, s = scenario_page(run.scenario.id), run.answer, run.scenario
    w = a.workload
    out = [_h1(s.title), ""]
    if s.description:
        out += [esc(s.description), ""]
    call = f"answer = gpukb.ask({json.dumps(s.workload, ensure_ascii=False)})"
    fence = "`" * max(3, 1 + max((len(run) for run in re.findall(r"`+", call)), default=0))
    out += [f"{fence}python", "import gpukb", "", call, fence, "",
            f"Answered by knowledge base {esc(a.kb_version)} (content hash {code(a.kb_hash[:12])}).", "",
            "## Recommendation", ""]
    best = a.best
    if best is None:
        out += ["No candidate GPU type can run this workload within the limits given.", ""]
    else:
        line = (f"**{best.count} × {ctx.gpu(here, best.gpu)}** — {_strategy(best)}; {gb(best.per_gpu_bytes)} of "
                f"{gb(best.usable_bytes)} usable per GPU")
        if best.tokens_per_s:
            line += f"; about {number(best.tokens_per_s)} tokens/s"
        if best.time_to_train_s:
            line += f"; {duration(best.time_to_train_s)} to train"
        out += [line + ".", ""]
        out += ["Why: the steps behind this option are " + ", ".join(
            f"[{s_.step}](#step-{s_.step})" for s_ in best.trace) + " of the trace below.", ""]
        for f in best.findings:
            out.append(f"- {badge(f.severity, 'severity')} {esc(f.message)} ({ctx.rule(here, f.rule)})")
        out.append("")
    m = a.memory
    out += ["## Memory", "", "One replica before sharding (GB = 1e9 bytes):", "",
            table(["Part", "Bytes", "GB", "Share"],
                  [[esc(p.replace("_", " ")), f"{getattr(m, p):,}", gb(getattr(m, p)),
                    f"{getattr(m, p) / m.total:.0%}" if m.total else "—"] for p in MEMORY_PARTS]
                  + [["**total**", f"**{m.total:,}**", f"**{gb(m.total)}**", ""]], "lrrr"), ""]
    resolved = w.model_dump(exclude={"gpus", "assumptions"}, exclude_none=True)
    out += ["## Workload", "", "The question after defaults and the model's architecture are filled in:", "",
            " · ".join(f"{code(k)} {esc(str(v).lower() if isinstance(v, bool) else v)}" for k, v in resolved.items()), "",
            f"Candidate GPUs: {len(w.gpus)}.", ""]
    if w.assumptions:
        out += ["Assumptions:", "", _list(esc(x) for x in w.assumptions), ""]
    out += ["## Options", "", "Every GPU type that can run the workload, best first.", ""]
    if a.options:
        rows = []
        for i, o in enumerate(a.options, start=1):
            rows.append([str(i), ctx.gpu(here, o.gpu), str(o.count), _strategy(o),
                         f"{gb(o.per_gpu_bytes)} / {gb(o.usable_bytes)}",
                         number(o.tokens_per_s) if o.tokens_per_s else "—",
                         duration(o.time_to_train_s) if o.time_to_train_s else "—"])
        out += [table(["#", "GPU", "Count", "Strategy", "Memory / usable per GPU", "Tokens/s", "Time to train"], rows,
                      "rlrlrrr"), ""]
    else:
        out += ["None.", ""]
    out += ["## Rejected", ""]
    if a.rejected:
        rows = []
        for o in a.rejected:
            reason = next((f for f in o.findings if f.severity == "error"), o.findings[0] if o.findings else None)
            rows.append([ctx.gpu(here, o.gpu), esc(reason.message) if reason else "—",
                         ctx.rule(here, reason.rule) if reason else "—"])
        out += [table(["GPU", "Why", "Rule"], rows), ""]
    else:
        out += ["No GPU type was rejected: each can hold the workload with enough of them.", ""]
    out += ["## Findings", ""]
    out += [table(["Severity", "Kind", "GPU", "Finding", "Rule", "Claims"], _finding_rows(ctx, here, a)), ""] \
        if a.findings else ["None.", ""]
    out += ["## Remedies", ""]
    if a.remedies:
        out += [table(["Remedy", "Effect", "Rule", "Claims"],
                      [[esc(r.title), esc(r.effect), ctx.rule(here, r.rule),
                        ", ".join(ctx.claim(here, c, with_badge=False) for c in r.claims) or "—"] for r in a.remedies]), ""]
    else:
        out += ["None needed.", ""]
    out += ["## Trace", "",
            f"All {len(a.trace)} steps, in the order the rules fired. Each names its rule, the facts it matched, the "
            "values it computed with their expressions, the claims it rests on and its sources.", ""]
    for stage in [*STAGES, *sorted({st.stage for st in a.trace} - set(STAGES))]:
        steps = [st for st in a.trace if st.stage == stage]
        if steps:
            out += [f"### {esc(stage.capitalize())} ({len(steps)} steps) {{#trace-{stage}}}", ""]
            for step in steps:
                out += [render_step(ctx, here, step), ""]
    out += ["## As text", "", "What `answer.explain()` prints:", "",
            '<pre class="gpukb-explain"><code>' + esc_pre(a.explain()) + "</code></pre>", ""]
    return "\n".join(out)


def esc_pre(text: str) -> str:
    """Preformatted text inside raw HTML: escaped, spaces kept, newlines as entities so Markdown sees one line."""
    return "&#10;".join(esc_spaced(line.rstrip()) for line in text.splitlines())


# --- reference -------------------------------------------------------------------------------


def sources(ctx: Context) -> str:
    kb, here = ctx.kb, SOURCES
    out = [_h1("Sources"), "", "Every datasheet, paper, configuration and document the knowledge base cites, "
           "with the entries that cite it.", ""]
    by_kind: dict[str, list[str]] = defaultdict(list)
    for s in kb.sources.values():
        by_kind[s.kind].append(s.id)
    for kind in sorted(by_kind):
        out += [f"## {esc(kind.replace('_', ' ').capitalize())} {{#kind-{kind}}}", ""]
        for source_id in sorted(by_kind[kind]):
            s = kb.sources[source_id]
            users = ctx.source_users.get(source_id, [])
            out += [f"### {esc(source_id)} {{#{source_id}}}", "",
                    (external(esc(s.title), s.url) if s.url else f"{esc(s.title)} ({code(s.path)})")
                    + f" — {esc(s.publisher)}" + (f", {esc(s.as_of)}" if s.as_of else ""), ""]
            if users:
                out += ["Cited by " + ", ".join(link(code(label), here, page) for page, label in users) + ".", ""]
    return "\n".join(out)


def interconnects(ctx: Context) -> str:
    kb = ctx.kb
    out = [_h1("Interconnects"), "", "Scale-up links between GPUs, host links and scale-out networks. Bandwidth is "
           "per direction.", ""]
    for ic in sorted(kb.interconnects.values(), key=lambda i: (i.kind, i.bandwidth, i.id)):
        users = sorted(g.id for g in kb.gpus.values() if ic.id in (g.scale_up, g.pcie))
        out += [f"## {esc(title_text(ic.name))} {{#{ic.id}}}", "",
                f"{code(ic.id)} · {esc(ic.kind.replace('_', ' '))} · {ic.bandwidth / 1e9:,.1f} GB/s per direction", "",
                f"Quoted: “{esc(ic.quoted)}”", ""]
        if ic.notes:
            out += [esc(ic.notes), ""]
        out += ["Sources: " + ", ".join(ctx.source(INTERCONNECTS, s) for s in ic.sources) + ".", ""]
        if users:
            out += ["Used by " + ", ".join(ctx.gpu(INTERCONNECTS, g) for g in users) + ".", ""]
    return "\n".join(out)


def policies(ctx: Context) -> str:
    kb, here = ctx.kb, POLICIES
    out = [_h1("Policies"), "", "Engineering assumptions the engine states rather than hides; every answer that "
           "depends on one shows it in its trace.", ""]
    for p in sorted(kb.policies.values(), key=lambda p: p.id):
        value = gb(p.value) if p.unit == "bytes" else f"{p.value:g} ({esc(p.unit)})"
        out += [f"## {esc(title_text(p.title))} {{#{p.id}}}", "", f"{code(p.id)} = **{value}**", "", esc(p.reason), ""]
        if p.claims:
            out += ["Claims: " + ", ".join(ctx.claim(here, c) for c in p.claims) + ".", ""]
        out += ["Sources: " + ", ".join(ctx.source(here, s) for s in p.sources) + ".", ""]
    return "\n".join(out)


def precisions(ctx: Context) -> str:
    kb, here = ctx.kb, PRECISIONS
    dtype_rows = [[code(d.id), esc(d.name), f"{d.bits:g}",
                   (f"{d.training.weight_bytes:g} + {d.training.grad_bytes:g} + {d.training.master_bytes:g}"
                    if d.training else "—"), "yes" if d.inference else "no", code(d.flops_field),
                   ", ".join(ctx.source(here, s) for s in d.sources)] for d in kb.dtypes.values()]
    opt_rows = [[code(o.id), esc(o.name), f"{o.state_bytes:g}", esc(o.states),
                 ", ".join(ctx.source(here, s) for s in o.sources)] for o in kb.optimizers.values()]
    out = [_h1("Precisions and optimizers"), "", "## Precisions", "",
           "Storage bits per parameter; when training, bytes per parameter for weights + gradients + master weights.",
           "", table(["Id", "Name", "Bits", "Training bytes", "Inference", "Throughput from", "Sources"], dtype_rows,
                     "llrlcll"), "",
           "## Optimizers", "", "Optimizer state bytes per trainable parameter.", "",
           table(["Id", "Name", "State bytes", "States", "Sources"], opt_rows, "llrll"), ""]
    return "\n".join(out)


# --- changelog -------------------------------------------------------------------------------


def _demote(markdown: str) -> str:
    """Headings one level down, so an included file sits under this page's title."""
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        lines.append("#" + line if not fenced and line.startswith("#") else line)
    return "\n".join(lines)


def changelog(ctx: Context, package_version: str, changelog_md: str | None, pages: dict[str, str] | None = None) -> str:
    kb = ctx.kb
    out = [_h1("Changelog"), "",
           table(["Property", "Value"], [["Knowledge base version", f"**{code(kb.version)}** (`kb/manifest.yaml`)"],
                            ["Content hash", code(kb.content_hash)], ["gpukb package", esc(package_version)],
                            ["Entries", f"{len(kb.claims)} claims, {len(kb.rules)} rules, {len(kb.gpus)} GPUs, "
                                        f"{len(kb.models)} models, {len(kb.sources)} sources"]]), "",
           "Every entry carries an integer `version` that rises when it changes; traces name rules as `id@version`, "
           "and the content hash (sha256 of `kb/` and `rules/`) pins the exact data an answer came from.", ""]
    if changelog_md:
        included = repository_markdown(changelog_md.strip(), CHANGELOG, pages or REPOSITORY_PAGES)
        out += [_demote(re.sub(r"^# .*\n+", "", included)), ""]
    else:
        out += ["No `CHANGELOG.md` at the repository root yet.", ""]
    return "\n".join(out)

