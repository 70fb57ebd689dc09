"""Every sentence of the article is a claim with a verdict, or rhetoric with a reason."""

import re
from pathlib import Path

ARTICLE = Path(__file__).resolve().parent.parent / "kb" / "article.zh.txt"


def body_sentences() -> list[str]:
    lines = ARTICLE.read_text(encoding="utf-8").splitlines()
    body = "\n".join(lines[1:])  # line 1 is the title
    return [s.strip() for s in re.split(r"[。！？\n]", body) if s.strip()]


def test_every_body_sentence_is_a_claim_or_rhetoric(kb):
    quotes = [c.quote_zh for c in kb.claims.values()]
    rhetoric = {r.sentence for r in kb.rhetoric}
    uncovered = [s for s in body_sentences() if s not in rhetoric and not any(q in s for q in quotes)]
    assert not uncovered


def test_claims_quote_the_article_verbatim(kb):
    article = ARTICLE.read_text(encoding="utf-8")
    assert all(c.quote_zh in article for c in kb.claims.values())
    assert all(r.sentence in article for r in kb.rhetoric)


def test_claims_have_verdicts_and_computations(kb):
    claims = kb.claims.values()
    assert len(claims) >= 30
    assert {c.verdict for c in claims} >= {"supported", "qualified", "contradicted"}
    for claim in claims:
        if claim.kind == "quantitative":
            assert re.search(r"\d", claim.reason), f"{claim.id}: a quantitative verdict shows its arithmetic"


def test_the_wrong_claims_are_marked_wrong(kb):
    for claim_id in ("art.kv.quadratic", "art.bandwidth.1to3-2x", "art.qa.zero3-reduces-comm",
                     "art.capacity.13b-30b-80gb"):
        assert kb.claims[claim_id].verdict == "contradicted"


def test_every_rule_cites_claims_that_exist_and_most_claims_are_used(kb):
    cited = {c for r in kb.rules.values() for c in r.claims} | {c for p in kb.policies.values() for c in p.claims}
    assert cited <= set(kb.claims)
    assert len(cited) >= 0.6 * len(kb.claims)
