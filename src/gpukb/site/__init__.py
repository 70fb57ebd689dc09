"""The documentation site, generated from kb/ and rules/ at build time.

`generate(root, scenarios_file)` loads a checkout, answers every scenario with ask(), and returns
every generated page (docs-relative path -> content) and the navigation. It does not import
MkDocs: site/hooks.py hands the pages to MkDocs, and tests call it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..kb import KnowledgeBase
from ..rules import STAGES
from ..scenarios import Run, Scenario, ScenarioError, load_scenarios, run_scenarios
from . import pages as p
from .text import title_text

__all__ = ["Run", "Scenario", "ScenarioError", "SiteContent", "build_site", "generate", "load_scenarios",
           "run_scenarios"]

NavItem = dict[str, Any]


@dataclass(frozen=True)
class SiteContent:
    kb: KnowledgeBase
    runs: list[Run]
    pages: dict[str, str]  # docs-relative path -> Markdown (or SVG)
    nav: list[NavItem]


def _nav(kb: KnowledgeBase, runs: list[Run], handwritten: set[str], generated: set[str]) -> list[NavItem]:
    """Navigation with explicit titles (titles are plain text free of markup characters)."""

    def entry(title: object, path: str) -> NavItem:
        return {title_text(title): path}

    sections: dict[str, list[NavItem]] = {}
    for claim in kb.claims.values():
        sections.setdefault(f"{claim.section_en} · {claim.section}", []).append(entry(claim.id, p.claim_page(claim.id)))
    rule_stages = []
    for stage in STAGES:
        rules = sorted((r for r in kb.rules.values() if r.stage == stage), key=lambda r: r.id)
        if rules:
            rule_stages.append({stage.capitalize(): [entry(r.id, p.rule_page(r.id)) for r in rules]})
    nav: list[NavItem] = [
        {"Home": p.HOME},
        {"The article": [p.ARTICLE, *({title_text(k): v} for k, v in sections.items())]},
        {"Rules": [p.RULES, *rule_stages]},
        {"Decision tree": p.TREE},
        {"GPUs": [p.GPUS, *(entry(g.name, p.gpu_page(g.id))
                            for g in sorted(kb.gpus.values(), key=lambda g: (g.vendor, -g.memory, g.id)))]},
        {"Models": [p.MODELS, *(entry(m.name, p.model_page(m.id))
                                for m in sorted(kb.models.values(), key=lambda m: (m.family, m.params, m.id)))]},
        {"Scenarios": [p.SCENARIOS, *(entry(r.scenario.title, p.scenario_page(r.scenario.id)) for r in runs)]},
        {"Reference": [{"Sources": p.SOURCES}, {"Interconnects": p.INTERCONNECTS}, {"Policies": p.POLICIES},
                       {"Precisions and optimizers": p.PRECISIONS}]},
    ]
    guides = [path for path in (p.CONTRIBUTING, p.REPOSITORY_GUIDE) if path in handwritten or path in generated]
    if guides:
        nav.append({"Contributing": [p.CONTRIBUTING, {"The full guide (CONTRIBUTING.md)": p.REPOSITORY_GUIDE}] if len(guides) == 2
                    else guides})
    nav.append({"Changelog": p.CHANGELOG})
    return nav


def build_site(kb: KnowledgeBase, scenarios: list[Scenario], *, readme: str | None = None,
               changelog: str | None = None, contributing: str | None = None, package_version: str = "",
               handwritten: set[str] | None = None) -> SiteContent:
    """Every generated page for `kb`, with `scenarios` answered by kb.ask().

    `readme`, `changelog` and `contributing` are the repository's Markdown files, included where given.
    """
    runs = run_scenarios(kb, scenarios)
    ctx = p.Context.build(kb, runs)
    repo_pages = {name: page for name, page in p.REPOSITORY_PAGES.items() if page != p.REPOSITORY_GUIDE or contributing}
    pages: dict[str, str] = {
        p.HOME: p.home(ctx, readme, repo_pages),
        p.ARTICLE: p.article(ctx),
        p.RULES: p.rules_index(ctx),
        p.TREE: p.decision_tree(ctx),
        p.GPUS: p.gpus_index(ctx),
        p.CHART: p.gpu_chart(kb),
        p.MODELS: p.models_index(ctx),
        p.SCENARIOS: p.scenarios_index(ctx),
        p.SOURCES: p.sources(ctx),
        p.INTERCONNECTS: p.interconnects(ctx),
        p.POLICIES: p.policies(ctx),
        p.PRECISIONS: p.precisions(ctx),
        p.CHANGELOG: p.changelog(ctx, package_version, changelog, repo_pages),
    }
    if contributing:
        pages[p.REPOSITORY_GUIDE] = p.repository_guide(contributing, repo_pages)
    pages.update({p.claim_page(i): p.claim(ctx, i) for i in kb.claims})
    pages.update({p.rule_page(i): p.rule(ctx, i) for i in kb.rules})
    pages.update({p.gpu_page(i): p.gpu(ctx, i) for i in kb.gpus})
    pages.update({p.model_page(i): p.model(ctx, i) for i in kb.models})
    pages.update({p.scenario_page(r.scenario.id): p.scenario(ctx, r) for r in runs})
    return SiteContent(kb, runs, pages, _nav(kb, runs, handwritten or set(), set(pages)))


def generate(root: str | Path, scenarios_file: str | Path, docs_dir: str | Path | None = None) -> SiteContent:
    """Load the checkout at `root` (kb/, rules/, README.md, CHANGELOG.md) and build its pages.

    `docs_dir` holds the hand-written pages; generated paths may not collide with them.
    """
    from .. import __version__, load_kb

    root = Path(root)
    kb = load_kb(root)

    def text(name: str) -> str | None:
        path = root / name
        return path.read_text(encoding="utf-8") if path.is_file() else None

    handwritten: set[str] = set()
    if docs_dir is not None and Path(docs_dir).is_dir():
        handwritten = {f.relative_to(docs_dir).as_posix() for f in Path(docs_dir).rglob("*") if f.is_file()}
    site = build_site(kb, load_scenarios(scenarios_file), readme=text("README.md"), changelog=text("CHANGELOG.md"),
                      contributing=text("CONTRIBUTING.md"), package_version=__version__, handwritten=handwritten)
    clash = sorted(set(site.pages) & handwritten)
    if clash:
        raise ValueError(f"hand-written pages in {docs_dir} would replace generated ones: {', '.join(clash)}")
    return site

