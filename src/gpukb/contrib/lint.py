"""`gpukb lint`: every problem in a checkout's kb/ and rules/, each as file:line:col: code message.

Order of work: load (schema, references, expression safety: every loader problem at once); then,
on a KB that loads, the article quotes, the static checks of checks.py, every rule's tests and,
with a base revision, the version rules of versions.py. Warnings (codes W...) are reported but
fail only with `strict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..core import safepath
from ..core.errors import BaseRevisionError, KBError, Problem
from ..knowledge.kb import KnowledgeBase
from ..knowledge.loader import read_checkout
from .checks import check_all, load_allowances
from .ruletests import run_rule_tests

ARTICLE = "kb/article.zh.txt"
MAX_ARTICLE_BYTES = 1 << 20  # the article is ~20 kB


def check_quotes(kb: KnowledgeBase) -> list[Problem]:
    """Every claim quotes the article verbatim."""
    path = kb.root / ARTICLE
    if not path.exists():
        return [Problem(ARTICLE, 1, 1, "E040", "the source article is missing")]
    try:  # a regular file of the checkout only: never a FIFO, a device or a link out of the checkout
        if not safepath.inside(path, kb.root):
            raise safepath.RefusedPath("a symbolic link leading out of the checkout")
        article = safepath.read_text(path, MAX_ARTICLE_BYTES)
    except safepath.RefusedPath as refused:
        return [Problem(ARTICLE, 1, 1, "E040", f"the source article cannot be read: {refused}")]
    problems = []
    for claim_id, claim in sorted(kb.claims.items()):
        if claim.quote_zh not in article:
            problems.append(kb.problem("claims", claim_id, ("quote_zh",), "E041",
                                       "quote_zh is not a verbatim part of the article"))
    return problems


@dataclass
class LintResult:
    problems: list[Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # allowed exceptions, what changed since the base

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if not p.is_warning]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.is_warning]

    def failed(self, strict: bool = False) -> bool:
        return bool(self.errors or (strict and self.warnings))


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.file, p.line, p.column, p.code, p.message))


def lint(root: Path, base: str | None = None) -> LintResult:
    """Everything `gpukb lint [ROOT] [--base REV]` reports."""
    root = Path(root)
    result = LintResult()
    try:
        kb = read_checkout(root)
    except KBError as error:
        result.problems = list(error.problems)
        return result
    allow, problems = load_allowances(root)
    problems += check_quotes(kb) + check_all(kb, allow) + run_rule_tests(kb)
    problems += allow.unused()
    result.notes += allow.notes()
    if base is not None:
        problems += _against_base(kb, root, base, result.notes)
    result.problems = _sorted(problems)
    return result


def _against_base(kb: KnowledgeBase, root: Path, rev: str, notes: list[str]) -> list[Problem]:
    from ..knowledge.versions import check_versions, revision_tree

    try:
        with revision_tree(root, rev) as base_root:
            if base_root is None:
                notes.append(f"{rev} has no kb/: nothing to compare versions with")
                return []
            try:
                base_kb = read_checkout(base_root)
            except KBError as error:
                return [Problem("kb/manifest.yaml", 1, 1, "W103",
                                f"the knowledge base at {rev} does not load ({len(error.problems)} problem(s)); "
                                "versions were not compared")]
            problems, version_notes = check_versions(base_kb, kb, rev)
            notes += version_notes
            return problems
    except BaseRevisionError as error:
        return [Problem("kb/manifest.yaml", 1, 1, "V100", f"cannot read the base revision: {error}")]
