"""Answers and knowledge in Chinese and English: every claim and rule has both, lint checks it,
and the Chinese rendering keeps every number and id while the JSON stays English."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.lint import lint
from kbfiles import REPO, edit_entry

HAN = re.compile(r"[\u4e00-\u9fff]")
NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


def test_every_claim_and_rule_has_both_languages(kb):
    for claim in kb.claims.values():
        assert claim.title and HAN.search(claim.title_zh) and HAN.search(claim.reason_zh), claim.id
        assert not HAN.search(claim.title), claim.id
    for rule in kb.rules.values():
        assert HAN.search(rule.title_zh) and HAN.search(rule.explain_zh), rule.id


def test_chinese_reasons_keep_the_numbers_of_the_english(kb):
    for claim in kb.claims.values():
        missing = set(NUMBER.findall(claim.reason)) - set(NUMBER.findall(claim.reason_zh))
        assert not missing, f"{claim.id}: {sorted(missing)}"


def test_explain_in_chinese_keeps_numbers_ids_and_sentences(kb):
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpu_count": 4, "offload": "none",
                     "gpus": ["rtx-4090-24gb", "h100-sxm-80gb"]})  # one option, one rejected, remedies
    en, zh = answer.explain(), answer.explain(lang="zh")
    assert en == answer.explain(lang="en") and not HAN.search(en.split("\n", 1)[0])
    assert "最佳方案" in zh and "为什么不选" in zh and "理由" in zh
    for step in answer.best.trace:  # every step's Chinese sentence, and every value and id, appear
        assert step.rule in zh and (step.sentence_zh or step.sentence) in zh
    assert set(NUMBER.findall(en)) <= set(NUMBER.findall(zh)) | {"1"}  # 1e9 bytes → "1e9 字节" keeps it
    (rejected,) = answer.rejected
    reason = next(f for f in rejected.findings if f.severity == "error")
    assert HAN.search(reason.message_zh) and reason.title_zh and reason.rule in zh
    assert all(HAN.search(r.title_zh) for r in answer.remedies)


def test_the_json_stays_english_and_unchanged_by_the_translations(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune"})
    text = answer.model_dump_json()
    assert all(f'"{key}"' not in text for key in ("title_zh", "sentence_zh", "message_zh", "reason_zh", "effect_zh"))
    assert all(key not in answer.model_dump()["findings"][0] for key in ("title", "message_zh"))
    assert gpukb.Answer.model_validate_json(text).model_dump_json() == text


def test_ask_answers_in_chinese():
    runner = CliRunner()
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora", "--lang", "zh", "--explain"])
    assert result.exit_code == 0 and "最佳方案" in result.output and "req.adapters@" in result.output
    table = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora", "--lang", "zh"])
    assert table.exit_code == 0 and HAN.search(table.output)


def test_lint_reports_an_entry_missing_a_language(checkout: Path):
    def drop_title_zh(claim: dict) -> None:
        del claim["title_zh"]

    def english_only(rule: dict) -> None:
        rule["explain_zh"] = "In English: {m.gradients|GB} and {m.optimizer|GB}, about {effect_bytes|GB}."

    def other_values(rule: dict) -> None:
        rule["explain_zh"] = "ZeRO-3 节省 {effect_bytes|GB}。"

    edit_entry(checkout, "art.kv.quadratic", drop_title_zh)
    edit_entry(checkout, "remedy.lora", english_only)
    edit_entry(checkout, "remedy.zero-sharding", other_values)
    problems = [p for p in lint(checkout).problems if p.code == "L101"]
    messages = " | ".join(p.message for p in problems)
    assert len(problems) == 3, messages
    assert "'art.kv.quadratic' needs title_zh in Chinese" in messages
    assert "'remedy.lora' needs explain_zh in Chinese" in messages
    assert "explain and explain_zh must show the same values" in messages
    assert all(p.severity == "error" for p in problems)


def test_the_chinese_site_shows_findings_and_trace_sentences_in_chinese():
    from gpukb.site import build_site, load_scenarios

    kb = gpukb.load_kb()
    scenario = next(s for s in load_scenarios(REPO / "site" / "scenarios.yaml") if s.workload.get("task") == "full_finetune")
    site = build_site(kb, [scenario], readme=None, lang="zh")
    page = site.pages[f"scenarios/{scenario.id}.md"]
    answer = kb.ask(scenario.workload)
    finding = next(f for f in answer.findings if f.message_zh)
    assert finding.message_zh in page and finding.message not in page
    step = next(s for s in answer.trace if s.sentence_zh and s.rule.startswith("req."))
    trace = site.pages[f"scenarios/{scenario.id}/trace.md"]  # the trace is a page of its own
    assert step.sentence_zh in html.unescape(trace)  # the site escapes Markdown's characters (term ids' "_")


def test_a_finding_s_chinese_message_is_written_when_read(kb):
    """ask() writes each finding's English message (it is in the JSON); the Chinese one is written
    from the same step and values the first time it is read, and is the same text from then on."""
    finding = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["t4-16gb"]}).findings[0]
    step = finding._step
    assert type(step.__dict__["sentence_zh"]) is tuple  # its template and values, not yet a sentence
    message = finding.message_zh
    assert HAN.search(message) and message == finding.text("zh") == step.sentence_zh
    assert step.__dict__["sentence_zh"] == message


def test_the_trace_says_whether_a_rule_rests_on_a_claim_or_refutes_it():
    answer = gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]})
    for lang, rests, refutes in (("en", "rests on", "refutes"), ("zh", "依据", "反驳")):
        text = answer.explain(lang=lang)
        lines = [line.strip() for line in text.splitlines() if "「" in line]
        contradicted = [line for line in lines if "[contradicted]" in line or "[不成立]" in line]
        assert contradicted and all(line.startswith(refutes) for line in contradicted), contradicted[:3]
        assert any(line.startswith(rests) for line in lines)
        assert not any(line.startswith(rests) for line in contradicted)


# Words a Chinese engineer writes in English in a Chinese sentence: units, product and library names, the
# compact strategy tags, and the command line's own flags
ENGLISH_IN_CHINESE = {
    "GB", "GiB", "TB", "ms", "s", "FLOP", "FLOPS", "TFLOPS", "tokens", "token", "GPU", "CPU", "KV", "GEMM", "LoRA", "QLoRA",
    "ZeRO", "ZeRO-Offload", "NVLink", "PCIe", "FSDP", "AdamW", "adamw", "bf", "fp", "dp", "tp", "pp", "ep", "cp", "flash",
    "kb", "explain", "json", "deadline_days", "pretrain-horizon", "h", "x", "MoE", "SXM", "Infinity", "Fabric", "roofline",
    "NCCL", "all-reduce", "all-gather", "reduce-scatter", "Transformer", "Engine", "Tensor", "Core", "HBM", "vLLM", "SGLang",
    # 1e9; the decision tree's branches, named as in rules/recommendations
    "e", "T", "W", "NF", "lora-consumer", "mid-size", "cluster", "PUE",
    # the error bands' source (the command `gpukb validate`) and MFU; a region's ISO 3166 code (the default grid)
    "gpukb", "validate", "MFU", "us", "MWh", "kWh", "CO", "t",
    # the libraries a default framework's reason names (kb/frameworks default_reason_zh)
    "PEFT", "PyTorch", "TRL", "Trainer", "Transformers", "Megatron-LM", "NeMo", "Megatron-Core", "Megatron", "Bridge",
    "BigScience", "Megatron-DeepSpeed", "verl",
}


def test_chinese_answers_meet_no_english_outside_ids_units_and_names(monkeypatch):
    # no id folded over two lines (setting the console's width would outlive the test: it keeps a width it is given)
    monkeypatch.setenv("COLUMNS", "200")
    kb = gpukb.load_kb()
    ids = (set(kb.gpus) | set(kb.models) | set(kb.rules) | set(kb.claims) | set(kb.policies) | set(kb.systems)
           | set(kb.frameworks))
    runner = CliRunner()
    for args in (["--model", "qwen2.5-7b", "--task", "lora"],
                 ["--model", "llama-2-70b", "--task", "inference", "--batch-size", "32"],
                 ["--model", "llama-65b", "--task", "qlora"], ["--model", "llama-2-70b", "--task", "pretrain", "--tokens", "2T"],
                 ["--model", "llama-2-7b", "--task", "full_finetune", "--gpu", "rtx-3080-10gb", "--gpu-count", "2"]):
        result = runner.invoke(app, ["ask", *args, "--lang", "zh"])
        text = re.sub(r"\[[a-z0-9_.@-]+\]", " ", result.output)  # the rule each line comes from
        text = re.sub(r"kb/[a-z_/]+", " ", text)  # the folder an assumption is read from
        for entry_id in sorted(ids, key=len, reverse=True):
            text = text.replace(entry_id, " ")
        words = re.findall(r"(?<![\w.])[A-Za-z][A-Za-z_'-]*", text)  # whole words, not the unit of 128gb
        stray = {w for w in words if w.strip("-") not in ENGLISH_IN_CHINESE}
        assert not stray, (args, sorted(stray))


def test_chinese_answers_state_their_assumptions_in_chinese_and_write_one_unit_notation(kb):
    for workload in ({"model": "llama-2-7b", "task": "lora"}, {"model": "llama-2-70b", "task": "pretrain", "tokens": "2T"},
                     {"model": "qwen3-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8,
                      "prompt_len": 1024, "response_len": 4096, "gpu_count": 8, "placement": "all"},
                     {"params": "7B", "task": "lora", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000}):
        answer = kb.ask(workload)
        w = answer.workload
        assert w.assumptions and len(w.assumptions_zh) == len(w.assumptions)
        zh = answer.explain(lang="zh")
        for note in w.assumptions_zh:
            assert f"假设：{note}" in zh and HAN.search(note)
            assert not re.search(r"\bnot given\b|\bthe default for\b", note), note
        assert not any(note in zh for note in w.assumptions)  # the English stays out of the Chinese text
        assert "assumptions_zh" not in answer.model_dump_json()  # and the Chinese out of the JSON
        # seconds and milliseconds read s and ms, as the tables and latency targets write them
        assert not re.search(r"\d\s*(毫秒|秒)", zh), re.findall(r".{20}\d\s*(?:毫秒|秒).{5}", zh)[:3]


@pytest.mark.parametrize("fields, expected", [
    ({"model": "llama-2-7b", "task": "pretrain", "tokens": "1T", "gpus": ["h100-sxm-80gb"], "deadline_days": 20},
     "集群按 deadline_days 20 配置"),
    ({"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T", "gpus": ["h100-sxm-80gb"]},
     "没有方案能在 30 天的预训练期限"),
    ({"model": "llama-2-7b", "task": "pretrain", "tokens": "1T", "gpus": ["h100-sxm-80gb"], "gpu_count": 64,
      "placement": "all", "deadline_days": 20}, "（placement all）：deadline_days 20 提前"),
])
def test_chinese_deadline_headlines_space_latin_and_digits_from_chinese_only(kb, fields, expected):
    """A space where a Chinese character meets a Latin letter or a digit, none beside full-width punctuation (the
    horizon's headline read "能在30 天", a deadline's "按  deadline_days 20 配置" and "： deadline_days 20 提前")."""
    assert expected in kb.ask(fields).summary.headline_zh
