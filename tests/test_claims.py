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
    for claim_id in ("art.kv.quadratic", "art.bandwidth.1to3-2x", "art.bandwidth.cores-starved",
                     "art.intro.bandwidth-engine", "art.closing.self-assessment"):
        assert kb.claims[claim_id].verdict == "contradicted"


def test_merged_claims_are_split_and_each_judged_on_its_own_clause(kb):
    # ZeRO-3 itself sends more, but ZeRO++ (a technique "like ZeRO-3") sends less than data parallelism
    assert kb.claims["art.qa.zero3-reduces-comm"].verdict == "qualified"
    assert "wang-2023-zeropp" in kb.claims["art.qa.zero3-reduces-comm"].evidence
    pairs = [("art.bandwidth.cores-starved", "art.bandwidth.movement-over-clock"),
             ("art.interconnect.multi-gpu-required", "art.interconnect.links-next-bottleneck"),
             ("art.interconnect.nvlink-vs-pcie", "art.interconnect.nvlink-latency"),
             ("art.precision.fp8-support", "art.precision.fp8-doubles")]
    for first, second in pairs:
        a, b = kb.claims[first].quote_zh, kb.claims[second].quote_zh
        assert a not in b and b not in a, (first, second)
    assert "保持模型精度" in kb.claims["art.precision.fp8-doubles"].quote_zh
    assert "保持模型精度" not in kb.claims["art.precision.fp8-support"].quote_zh
    assert kb.claims["art.interconnect.multi-gpu-required"].verdict == "qualified"  # QLoRA: 65B on one 48 GB card


def test_the_revisited_verdicts_follow_the_evidence(kb):
    # bf16 LoRA fits 24-32 GB only up to ~8B (QLoRA reaches 33B); "13B-30B -> 80 GB" does not say one
    # card, and LoRA 13B / QLoRA 32B fit one; 100B+ fine-tuning fits one node (QLoRA 405B, ZeRO-Infinity).
    for claim_id in ("art.tree.lora-consumer", "art.capacity.13b-30b-80gb", "art.tree.100b-cluster"):
        assert kb.claims[claim_id].verdict == "qualified"
    assert "rajbhandari-2021-zero-infinity" in kb.claims["art.tree.100b-cluster"].evidence


def test_the_revisited_verdicts_match_gpukb(kb):
    """What the revisited claims cite is what gpukb answers: where each workload fits, and how."""

    def best(model, task, gpu, count, **more):
        answer = kb.ask({"model": model, "task": task, "gpus": [gpu], "gpu_count": count, **more})
        return answer.options[0]

    # at 4,096 tokens the loss decides it: a chunked loss (torchtune) fits 8B bf16 LoRA on 24 GB, eager
    # Transformers' fp32 logits and their gradients (12 bytes x 128,256 a token) do not without offload
    assert best("llama-3-8b", "lora", "rtx-4090-24gb", 1, framework="torchtune").strategy.offload == "none"
    assert best("llama-3-8b", "lora", "rtx-4090-24gb", 1, framework="hf").strategy.offload == "optimizer+params"
    assert best("llama-2-13b", "lora", "rtx-4090-24gb", 1).strategy.offload == "optimizer+params"
    # the 5090's 32,607 MiB hold 13B LoRA with recomputation, just (the claim's reason quotes it)
    assert best("llama-2-13b", "lora", "rtx-5090-32gb", 1).strategy.offload == "none"
    one_h100 = best("llama-2-13b", "lora", "h100-sxm-80gb", 1)
    assert (one_h100.count, one_h100.strategy.offload, one_h100.strategy.zero_stage) == (1, "none", 0)
    assert best("qwen2.5-32b", "qlora", "h100-sxm-80gb", 1).strategy.offload == "none"
    assert best("llama-2-13b", "full_finetune", "h100-sxm-80gb", 8).count == 3
    node = best("llama-3.1-405b", "qlora", "h100-sxm-80gb", 8)
    assert node.count == 4 and node.strategy.offload == "none"


def test_every_rule_cites_claims_that_exist_and_most_claims_are_used(kb):
    cited = {c for r in kb.rules.values() for c in r.claims} | {c for p in kb.policies.values() for c in p.claims}
    assert cited <= set(kb.claims)
    assert len(cited) >= 0.6 * len(kb.claims)


# Clauses too short or too connective to assert anything on their own. Keep this list explicit
# and small: anything with checkable content belongs in a claim's quote_zh or in kb/rhetoric/.
CONNECTIVES = {
    "答",  # the Q&A's "Answer:" label
    "在大模型训练的硬件选型中",  # "in choosing hardware for LLM training": framing of the first claim
    "对于深度学习从业者而言",  # "for deep-learning practitioners": framing
    "我们发现",  # "we found": the testing it refers to is art.intro.deep-testing
    "在实际应用中",  # "in practice": framing of art.software.cuda-tuning
}
CLAUSE_SPLIT = r"[，,；;：:、。！？!?\n]"


def article_clauses() -> list[str]:
    """Every clause of the article, title included: its sentences split on Chinese and ASCII punctuation."""
    text = ARTICLE.read_text(encoding="utf-8")
    clauses = [c.strip() for c in re.split(CLAUSE_SPLIT, text)]
    return [re.sub(r"^\d+\.\s*", "", c) for c in clauses if c.strip()]


def test_every_clause_is_covered_by_a_claim_or_rhetoric(kb):
    quotes = [c.quote_zh for c in kb.claims.values()]
    rhetoric = [r.sentence for r in kb.rhetoric]
    uncovered = [
        clause for clause in article_clauses()
        if clause and clause not in CONNECTIVES
        and not any(clause in q for q in quotes) and not any(clause in s for s in rhetoric)
    ]
    assert not uncovered, "clauses no claim quotes and no rhetoric entry explains:\n" + "\n".join(uncovered)


def test_the_clause_split_sees_the_whole_article():
    clauses = article_clauses()
    assert len(clauses) > 100
    assert "打破“显存墙”与“通信墙”" in " ".join(clauses)
    assert "这通常是由于“通信墙”导致的" in clauses


def test_the_closing_self_assessment_counts_the_other_claims(kb):
    """art.closing.self-assessment cites the other claims' verdicts; its figures follow the file."""
    others = [c for c in kb.claims.values() if c.id != "art.closing.self-assessment"]
    contradicted = sum(c.verdict == "contradicted" for c in others)
    qualified = sum(c.verdict == "qualified" for c in others)
    claim = kb.claims["art.closing.self-assessment"]
    text = " ".join(claim.reason.split())
    assert f"other {len(others)} claims checked in this file, {contradicted} are contradicted and {qualified}" in text
    assert f"其余 {len(others)} 条论断中，{contradicted} 条被证伪，{qualified} 条" in claim.reason_zh
