"""Where every page lives, and links between them: the one module that knows the site's layout.

Page paths are docs-relative and the same in every language: each language is its own MkDocs build
(the Chinese one under zh/), so a page links to its counterpart by the same path.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ..answer.answer import Option
from ..contrib.scenarios import Run
from ..core import words
from ..core.words import term
from ..engine.trace import TraceStep
from ..knowledge.kb import KnowledgeBase
from .text import anchor, badge, code, esc, html_text, link, plain, rel

LANGUAGES = ("en", "zh")

HOME = "index.md"
ASK = "ask/index.md"  # the form answered from the build-time grid (gpukb.site.askdata)
ARTICLE = "claims/index.md"
RULES = "rules/index.md"
TREE = "decision-tree.md"
GPUS = "gpus/index.md"
CHART = "gpus/capacity-vs-bandwidth.svg"
MODELS = "models/index.md"
SCENARIOS = "scenarios/index.md"
SOURCES = "reference/sources.md"
INTERCONNECTS = "reference/interconnects.md"
SYSTEMS = "reference/systems.md"
POLICIES = "reference/policies.md"
PRECISIONS = "reference/precisions.md"
GLOSSARY = "reference/glossary.md"
VALIDATION = "reference/accuracy.md"
CONTRIBUTING = "contributing/index.md"  # hand-written, in site/docs/
GUIDE = "guide/index.md"  # hand-written, in site/docs/: the reference the README only names
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


def trace_page(scenario_id: str) -> str:
    """A scenario's full trace, a page of its own so the scenario's page stays light."""
    return f"scenarios/{scenario_id}/trace.md"


def page_url(page: str) -> str:
    """The directory URL MkDocs gives a docs-relative page: `gpus/x.md` -> `gpus/x/`, `index.md` -> ``."""
    stem = page.removesuffix(".md")
    if stem == "index" or stem.endswith("/index"):
        stem = stem.removesuffix("index")
        return stem
    return stem + "/"


def counterpart(url: str, lang: str, to: str) -> str:
    """The relative href from page `url` of the `lang` build to the same page of the `to` build
    (the English site at the root, every other language under /<lang>/)."""
    depth = url.count("/") + (0 if lang == LANGUAGES[0] else 1)
    prefix = "" if to == LANGUAGES[0] else f"{to}/"
    return "../" * depth + prefix + url or "./"


def short(text: object, limit: int = 70) -> str:
    """Plain text cut at a word boundary to at most `limit` characters."""
    text = plain(text)
    if len(text) <= limit:
        return text
    cut = text[: limit - 1].rsplit(" ", 1)[0] if " " in text[: limit - 1] else text[: limit - 1]
    return cut.rstrip(",;:—- ") + "…"


@dataclass(frozen=True)
class Role:
    run: Run
    option: Option
    rank: int | None  # 1 = recommended; None = rejected


@dataclass
class Context:
    """What every page needs: the KB, the scenario answers, the language, and the cross-references."""

    kb: KnowledgeBase
    runs: list[Run]
    lang: str = "en"
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)  # model id -> task -> Answer
    rules_citing: dict[str, list[str]] = field(default_factory=dict)
    claim_runs: dict[str, list[Run]] = field(default_factory=dict)
    rule_runs: dict[str, list[Run]] = field(default_factory=dict)
    gpu_roles: dict[str, list[Role]] = field(default_factory=dict)
    builtins: dict[str, TraceStep] = field(default_factory=dict)  # trace steps no rule file defines
    source_users: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # source -> (page, label)

    @classmethod
    def build(cls, kb: KnowledgeBase, runs: list[Run], lang: str = "en",
              tasks: dict[str, dict[str, Any]] | None = None) -> Context:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown site language {lang!r}; expected one of {', '.join(LANGUAGES)}")
        ctx = cls(kb, runs, lang, tasks or {})
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
        for system in sorted(kb.systems.values(), key=lambda s: s.id):
            for s in [*system.sources, *(price.source for price in system.prices)]:
                if (SYSTEMS, system.id) not in users[s]:
                    users[s].append((SYSTEMS, system.id))
        ctx.source_users = dict(users)
        return ctx

    # --- language ----------------------------------------------------------------------------

    @property
    def zh(self) -> bool:
        return self.lang == "zh"

    def t(self, en: str, zh: str) -> str:
        """The page's own words in its language (never knowledge-base text)."""
        return zh if self.zh else en

    def field(self, entry: object, name: str, fallback: object = "") -> str:
        """An entry's text in the page's language: `<name>_zh` on the Chinese site where the entry has it,
        else `<name>`, else `fallback`. Plain text: escape it before it goes into Markdown."""
        value = getattr(entry, f"{name}_zh", None) if self.zh else None
        return plain(value or getattr(entry, name, None) or fallback)

    def note(self, here: str, entry: object, name: str = "notes", fragment: str = "notes") -> str:
        """An entry's note as Markdown. A note written only in English (the derivation of a datasheet figure, a
        configuration's quirks) is not half-translated on the Chinese site: a sentence says so and links to it."""
        own = getattr(entry, f"{name}_zh", None) if self.zh else None
        if not self.zh or own:
            return esc(own or getattr(entry, name, ""))
        href = counterpart(page_url(here), "zh", LANGUAGES[0]) + f"#{anchor(fragment)}"
        return f'这段说明只有英文原文，见<a href="{html_text(href)}">英文页面</a>。'

    def value(self, field: str, raw: object) -> str:
        """A catalog value (a GPU's vendor or cooling, a source's kind, a status) as the page's language shows it."""
        return words.value("zh" if self.zh else "en", field, str(raw))

    def claim_title(self, claim_id: str) -> str:
        c = self.kb.claims[claim_id]
        if self.zh:
            return short(getattr(c, "title_zh", None) or c.quote_zh, 40)
        return short(getattr(c, "title", None) or c.text_en)

    def rule_title(self, rule_id: str) -> str:
        r = self.kb.rules[rule_id]
        return plain((getattr(r, "title_zh", None) if self.zh else None) or r.title)

    # --- links from page `here` ----------------------------------------------------------------

    def claim(self, here: str, claim_id: str, with_badge: bool = True) -> str:
        if claim_id not in self.kb.claims:
            return code(claim_id)
        text = link(code(claim_id), here, claim_page(claim_id))
        return f"{text} {self.verdict_badge(self.kb.claims[claim_id].verdict)}" if with_badge else text

    def claim_named(self, here: str, claim_id: str) -> str:
        """A claim by its human title, the id after it."""
        if claim_id not in self.kb.claims:
            return code(claim_id)
        title = link(esc(self.claim_title(claim_id)), here, claim_page(claim_id))
        return f"{title} {self.verdict_badge(self.kb.claims[claim_id].verdict)}"

    def verdict_badge(self, verdict: str) -> str:
        """A verdict's badge, in the page's language."""
        return badge(verdict, "verdict", term(self.lang, verdict))

    def rule(self, here: str, key: str) -> str:
        """A link to a rule by id or by `id@version` (as traces name them)."""
        rule_id = key.rsplit("@", 1)[0]
        if rule_id in self.kb.rules:
            return link(code(key), here, rule_page(rule_id))
        return link(code(key), here, RULES, f"built-in-{rule_id}")

    def rule_named(self, here: str, key: str) -> str:
        """A rule by its human title (the id on hover in the page's own text)."""
        rule_id = key.rsplit("@", 1)[0]
        if rule_id in self.kb.rules:
            return link(esc(self.rule_title(rule_id)), here, rule_page(rule_id))
        return self.rule(here, key)

    def source(self, here: str, source_id: str) -> str:
        if source_id not in self.kb.sources:
            return code(source_id)
        return link(code(source_id), here, SOURCES, source_id)

    def gpu(self, here: str, gpu_id: str) -> str:
        return link(code(gpu_id), here, gpu_page(gpu_id)) if gpu_id in self.kb.gpus else code(gpu_id)

    def gpu_named(self, here: str, gpu_id: str) -> str:
        g = self.kb.gpus.get(gpu_id)
        return link(esc(g.name), here, gpu_page(gpu_id)) if g else code(gpu_id)

    def model(self, here: str, model_id: str) -> str:
        return link(code(model_id), here, model_page(model_id)) if model_id in self.kb.models else code(model_id)

    def scenario(self, here: str, run: Run) -> str:
        return link(esc(self.field(run.scenario, "title")), here, scenario_page(run.scenario.id))

    def interconnect(self, here: str, ic_id: str | None) -> str:
        if ic_id is None:
            return self.t("none", "无")
        return link(code(ic_id), here, INTERCONNECTS, ic_id) if ic_id in self.kb.interconnects else code(ic_id)


__all__ = ["ARTICLE", "ASK", "CHANGELOG", "CHART", "CONTRIBUTING", "GLOSSARY", "GPUS", "GUIDE", "HOME", "INTERCONNECTS",
           "LANGUAGES", "MODELS", "POLICIES", "PRECISIONS", "REPOSITORY_GUIDE", "REPOSITORY_PAGES", "RULES",
           "SCENARIOS", "SOURCES", "SYSTEMS", "TREE", "VALIDATION", "Context", "Role", "claim_page", "counterpart", "gpu_page",
           "model_page", "page_url", "rel", "rule_page", "scenario_page", "short", "trace_page"]
