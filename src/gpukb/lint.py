"""`gpukb lint`: every problem in a checkout's kb/ and rules/, each as file:line:col: code message."""

from __future__ import annotations

from pathlib import Path

from .errors import KBError, Problem
from .kb import KnowledgeBase
from .loader import read_checkout
from .ruletests import run_rule_tests

ARTICLE = "kb/article.zh.txt"


def check_quotes(kb: KnowledgeBase) -> list[Problem]:
    """Every claim quotes the article verbatim."""
    path = kb.root / ARTICLE
    if not path.is_file():
        return [Problem(ARTICLE, 1, 1, "E040", "the source article is missing")]
    article = path.read_text(encoding="utf-8")
    problems = []
    for claim_id, claim in sorted(kb.claims.items()):
        if claim.quote_zh not in article:
            file, line, col = kb.locate("claims", claim_id, ("quote_zh",))
            problems.append(Problem(file, line, col, "E041", "quote_zh is not a verbatim part of the article", "quote_zh"))
    return problems


def lint_checkout(root: Path) -> list[Problem]:
    try:
        kb = read_checkout(Path(root))
    except KBError as error:
        return error.problems
    return sorted(check_quotes(kb) + run_rule_tests(kb), key=lambda p: (p.file, p.line, p.column, p.code))
