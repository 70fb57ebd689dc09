"""The documentation site, generated from kb/ and rules/ at build time, in English and Chinese.

`generate(root, scenarios_file, lang=...)` loads a checkout, answers every scenario (and each model's
tasks) with ask(), and returns every generated page (docs-relative path -> content) and the navigation
for one language. It does not import MkDocs: site/hooks.py hands the pages to MkDocs (one build per
language, the Chinese one under zh/), and tests call it directly. Answers do not depend on the
language, so they are computed once per process for a given knowledge base and scenario list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..answer.answer import Answer
from ..contrib.scenarios import Run, Scenario, ScenarioError, load_scenarios, run_scenarios
from ..core import safepath
from ..estimate.validation import Validation, validate
from ..knowledge.kb import KnowledgeBase
from ..knowledge.rules import STAGES
from . import pages as p
from .askdata import Asked, answer_grid
from .askgrid import models as ask_models_of
from .links import LANGUAGES
from .pages.ask import files as ask_files
from .pages.rules import stage_name
from .text import title_text

__all__ = ["LANGUAGES", "Run", "Scenario", "ScenarioError", "SiteContent", "build_site", "generate", "load_scenarios",
           "run_scenarios", "task_answers"]

NavItem = dict[str, Any]
MAX_REPOSITORY_MARKDOWN = 1 << 20  # README.md, CHANGELOG.md, CONTRIBUTING.md: each well under 200 kB


@dataclass(frozen=True)
class SiteContent:
    kb: KnowledgeBase
    runs: list[Run]
    pages: dict[str, str]  # docs-relative path -> Markdown (or SVG)
    nav: list[NavItem]
    lang: str = "en"


def _nav(ctx: p.Context, handwritten: set[str], generated: set[str]) -> list[NavItem]:
    """Navigation by human names, with explicit titles (plain text free of markup characters)."""
    kb, t = ctx.kb, ctx.t

    def entry(title: object, path: str) -> NavItem:
        return {title_text(title): path}

    sections: dict[str, list[NavItem]] = {}
    for claim in kb.claims.values():
        name = claim.section if ctx.zh else f"{claim.section_en} · {claim.section}"
        sections.setdefault(name, []).append(entry(ctx.claim_title(claim.id), p.claim_page(claim.id)))
    rule_stages = []
    for stage in STAGES:
        rules = sorted((r for r in kb.rules.values() if r.stage == stage), key=lambda r: r.id)
        if rules:
            rule_stages.append({stage_name(ctx, stage): [entry(ctx.rule_title(r.id), p.rule_page(r.id)) for r in rules]})
    nav: list[NavItem] = [
        {t("Home", "首页"): p.HOME},
        {t("Ask", "提问"): p.ASK},
        *([{t("Guide", "使用指南"): p.GUIDE}] if p.GUIDE in handwritten else []),
        {t("Scenarios", "场景"): [p.SCENARIOS, *(entry(ctx.field(r.scenario, "title"), p.scenario_page(r.scenario.id))
                                                for r in ctx.runs)]},
        {t("Decision tree", "决策树"): p.TREE},
        {t("GPUs", "GPU"): [p.GPUS, *(entry(g.name, p.gpu_page(g.id))
                                      for g in sorted(kb.gpus.values(), key=lambda g: (g.vendor, -g.memory, g.id)))]},
        {t("Models", "模型"): [p.MODELS, *(entry(m.name, p.model_page(m.id))
                                          for m in sorted(kb.models.values(), key=lambda m: (m.family, m.params, m.id)))]},
        {t("The article", "原文"): [p.ARTICLE, *({title_text(k): v} for k, v in sections.items())]},
        {t("Rules", "规则"): [p.RULES, *rule_stages]},
        {t("Reference", "参考"): [{t("Sources", "来源"): p.SOURCES}, {t("Interconnects", "互联"): p.INTERCONNECTS},
                                  {t("Systems", "系统"): p.SYSTEMS},
                                  {t("Policies", "策略假设"): p.POLICIES},
                                  {t("Accuracy against measurements", "与实测数据的对比"): p.VALIDATION},
                                  {t("Precisions and optimizers", "精度与优化器"): p.PRECISIONS},
                                  {t("Glossary", "术语表"): p.GLOSSARY}]},
    ]
    guides = [path for path in (p.CONTRIBUTING, p.REPOSITORY_GUIDE) if path in handwritten or path in generated]
    if guides:
        nav.append({t("Contributing", "参与贡献"):
                    [p.CONTRIBUTING, {t("The full guide (CONTRIBUTING.md)", "完整指南（CONTRIBUTING.md）"): p.REPOSITORY_GUIDE}]
                    if len(guides) == 2 else guides})
    nav.append({t("Changelog", "变更记录"): p.CHANGELOG})
    return nav


def task_answers(kb: KnowledgeBase) -> dict[str, dict[str, Answer]]:
    """Each model's answer for every task with the defaults (for the model pages)."""
    out: dict[str, dict[str, Answer]] = {}
    for model in sorted(kb.models):
        if kb.models[model].status == "deprecated":
            continue
        out[model] = {task: kb.ask({"model": model, "task": task}) for task in p.TASKS}
    return out


_validations: list[tuple[str, Validation]] = []  # the last knowledge base validated, at most


def _validation_for(kb: KnowledgeBase) -> Validation:
    """validate() once per knowledge base in this process (both languages show the same figures)."""
    for cached_hash, result in _validations:
        if cached_hash == kb.content_hash:
            return result
    result = validate(kb)
    _validations[:] = [(kb.content_hash, result)]
    return result


Answers = tuple[list[Run], dict[str, dict[str, Answer]]]
_answers: list[tuple[KnowledgeBase, str, Answers]] = []  # the last knowledge base answered, at most


def _answers_for(kb: KnowledgeBase, scenarios: list[Scenario]) -> Answers:
    """Scenario and model answers, once per knowledge base and scenario list in this process (the
    English and the Chinese build load the same files: equal entries, the same answers)."""
    key = repr([s.model_dump() for s in scenarios])
    for cached, cached_key, answers in _answers:
        if cached_key == key and cached.content_hash == kb.content_hash and cached.tables == kb.tables:
            return answers
    answers = (run_scenarios(kb, scenarios), task_answers(kb))
    _answers[:] = [(kb, key, answers)]  # one at a time: a preview server rebuilds after every edit
    return answers


_grids: list[tuple[KnowledgeBase, str, list[Asked]]] = []  # the last knowledge base's ask grid, at most


def _grid_for(kb: KnowledgeBase, runs: list[Run], models: list[str]) -> list[Asked]:
    """The ask page's grid, once per knowledge base, scenarios and models in this process (records hold both
    languages)."""
    key = repr(([r.scenario.model_dump() for r in runs], models))
    for cached, cached_key, asked in _grids:
        if cached_key == key and cached.content_hash == kb.content_hash and cached.tables == kb.tables:
            return asked
    asked = answer_grid(kb, runs, models)
    _grids[:] = [(kb, key, asked)]
    return asked


def build_site(kb: KnowledgeBase, scenarios: list[Scenario], *, readme: str | None = None,
               changelog: str | None = None, contributing: str | None = None, package_version: str = "",
               handwritten: set[str] | None = None, lang: str = "en", ask_models: Iterable[str] | None = ()) -> SiteContent:
    """Every generated page for `kb` in `lang`, with `scenarios` answered by kb.ask().

    `readme`, `changelog` and `contributing` are the repository's Markdown files, included where given.
    `ask_models`: the catalog models the ask page's grid answers (None: every current one, as site/hooks.py
    builds it; the default, none, keeps a build of the other pages fast).
    """
    runs, tasks = _answers_for(kb, scenarios)
    ctx = p.Context.build(kb, runs, lang, tasks)
    repo_pages = {name: page for name, page in p.REPOSITORY_PAGES.items() if page != p.REPOSITORY_GUIDE or contributing}
    pages: dict[str, str] = {
        p.HOME: p.home(ctx, readme, repo_pages),
        p.ARTICLE: p.article(ctx),
        p.RULES: p.rules_index(ctx),
        p.TREE: p.decision_tree(ctx),
        p.GPUS: p.gpus_index(ctx),
        p.CHART: p.gpu_chart(kb, ctx.zh),
        p.MODELS: p.models_index(ctx),
        p.SCENARIOS: p.scenarios_index(ctx),
        p.SOURCES: p.sources(ctx),
        p.INTERCONNECTS: p.interconnects(ctx),
        p.SYSTEMS: p.systems(ctx),
        p.POLICIES: p.policies(ctx),
        p.PRECISIONS: p.precisions(ctx),
        p.GLOSSARY: p.glossary(ctx),
        p.CHANGELOG: p.changelog(ctx, package_version, changelog, repo_pages),
        p.VALIDATION: p.validation(ctx, _validation_for(kb)),
    }
    if contributing:
        pages[p.REPOSITORY_GUIDE] = p.repository_guide(contributing, repo_pages, ctx.zh)
    pages.update({p.claim_page(i): p.claim(ctx, i) for i in kb.claims})
    pages.update({p.rule_page(i): p.rule(ctx, i) for i in kb.rules})
    pages.update({p.gpu_page(i): p.gpu(ctx, i) for i in kb.gpus})
    pages.update({p.model_page(i): p.model(ctx, i) for i in kb.models})
    pages.update({p.scenario_page(r.scenario.id): p.scenario(ctx, r) for r in runs})
    pages.update({p.trace_page(r.scenario.id): p.scenario_trace(ctx, r) for r in runs})
    pages.update(ask_files(ctx, _grid_for(kb, runs, ask_models_of(kb, ask_models))))
    return SiteContent(kb, runs, pages, _nav(ctx, handwritten or set(), set(pages)), lang)


def generate(root: str | Path, scenarios_file: str | Path, docs_dir: str | Path | None = None,
             lang: str = "en", ask_models: Iterable[str] | None = ()) -> SiteContent:
    """Load the checkout at `root` (kb/, rules/, README.md, CHANGELOG.md) and build its pages in `lang`.

    `docs_dir` holds the hand-written pages; generated paths may not collide with them. A hand-written
    page may have a translation beside it (`index.zh.md`); the build of that language uses it instead.
    """
    from .. import __version__, load_kb

    root = Path(root)
    kb = load_kb(root)

    def text(name: str) -> str | None:
        """A repository Markdown file: a regular file of the checkout, or none (never a link out of it)."""
        path = root / name
        if not safepath.is_regular(path) or not safepath.inside(path, root):
            return None
        try:
            return safepath.read_text(path, MAX_REPOSITORY_MARKDOWN)
        except safepath.RefusedPath as refused:
            raise ValueError(f"{name}: {refused}") from None

    handwritten: set[str] = set()
    if docs_dir is not None and Path(docs_dir).is_dir():
        handwritten = {f.relative_to(docs_dir).as_posix() for f in Path(docs_dir).rglob("*") if f.is_file()}
    site = build_site(kb, load_scenarios(scenarios_file), readme=text("README.md"), changelog=text("CHANGELOG.md"),
                      contributing=text("CONTRIBUTING.md"), package_version=__version__, handwritten=handwritten,
                      lang=lang, ask_models=ask_models)
    clash = sorted(set(site.pages) & handwritten)
    if clash:
        raise ValueError(f"hand-written pages in {docs_dir} would replace generated ones: {', '.join(clash)}")
    return site
