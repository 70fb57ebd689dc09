"""The workload's framework: a default per task stated in the answer, the stack's loss term in memory,
measurements that name theirs, and validation reported per framework."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpukb
from gpukb.answer.workload import FrameworkId
from gpukb.contrib.checks import check_measurements
from gpukb.core.errors import WorkloadError
from gpukb.estimate.resolve import default_framework
from gpukb.estimate.validation import validate

FT = {"model": "llama-3.1-8b", "task": "full_finetune", "seq_len": 2048, "activation_checkpointing": True,
      "gpus": ["h200-sxm-141gb"]}


def _logits(answer: gpukb.Answer) -> float:
    step = next(s for s in answer.trace if s.rule.startswith("req.activations.training"))
    return next(v["value"] for v in step.values if v["name"] == "logits")


def test_every_task_has_one_default_and_every_id_is_in_the_kb(kb: gpukb.KnowledgeBase) -> None:
    assert {t: default_framework(kb, t) for t in ("pretrain", "full_finetune", "lora", "qlora", "inference")} == {
        "pretrain": "megatron", "full_finetune": "hf", "lora": "hf", "qlora": "hf", "inference": "vllm"}
    assert set(FrameworkId.__args__) == set(kb.frameworks)


def test_the_default_is_stated_with_its_reason(kb: gpukb.KnowledgeBase) -> None:
    answer = kb.ask(FT)
    assert answer.workload.framework == "hf"
    note = next(a for a in answer.workload.assumptions if a.startswith("framework not given"))
    assert "hf" in note and "Trainer" in note
    given = kb.ask({**FT, "framework": "hf"})
    assert not any(a.startswith("framework") for a in given.workload.assumptions)


def test_a_framework_that_does_not_run_the_task_is_refused(kb: gpukb.KnowledgeBase) -> None:
    with pytest.raises(WorkloadError) as err:
        kb.ask({"model": "llama-3.1-8b", "task": "inference", "framework": "torchtune"})
    assert err.value.field == "framework" and "vllm" in str(err.value)
    with pytest.raises(WorkloadError) as err:
        kb.ask({**FT, "framework": "vllm"})
    assert err.value.field == "framework"
    with pytest.raises(WorkloadError) as err:
        kb.ask({**FT, "framework": "jax"})
    assert err.value.field == "framework"


def test_the_loss_term_follows_the_framework(kb: gpukb.KnowledgeBase) -> None:
    # micro-batch x sequence x vocabulary logits, times the framework's bytes per logit (kb/frameworks)
    logits = 1 * 2048 * 128256
    by = {f: _logits(kb.ask({**FT, "framework": f})) for f in ("hf", "torchtune", "megatron", "unsloth")}
    assert by == {f: kb.frameworks[f].loss_logit_bytes.value * logits for f in by}
    # Unsloth's Cut Cross Entropy never holds the logits
    assert by["hf"] == 12 * logits > by["megatron"] > by["torchtune"] > by["unsloth"] == 0
    hf, unsloth = kb.ask({**FT, "framework": "hf"}), kb.ask({**FT, "framework": "unsloth"})
    # and its offloaded checkpointing keeps one of the 32 layers' 16-bit inputs on the GPU, not all. Recomputing,
    # hf's peak beside the inputs is its logits (larger than one rebuilt layer); Unsloth's is one rebuilt layer
    # of its fused kernels (Korthikanti's 41·s·h for Llama 3.1 8B, no eager excess)
    offloaded = 2 * 2048 * 4096 * (32 - 1)
    assert hf.memory.total - unsloth.memory.total == pytest.approx(12 * logits + offloaded - 41 * 2048 * 4096, abs=2)


def test_checkpoint_offload_applies_only_with_checkpointing(kb: gpukb.KnowledgeBase) -> None:
    def activations(framework: str, ckpt: bool) -> float:
        answer = kb.ask({**FT, "task": "qlora", "framework": framework, "activation_checkpointing": ckpt})
        return answer.memory.activations
    logits = 1 * 2048 * 128256
    # without checkpointing every layer's activations stay, whatever the framework offloads: hf's differ by its
    # loss and its eager layers' excess over fused kernels (16-bit residual stream for QLoRA)
    eager = 32 * 2048 * 4096 * kb.frameworks["hf"].layer_activation_bytes.value
    assert activations("hf", False) - activations("unsloth", False) == pytest.approx(12 * logits + eager, abs=2)
    step = next(s for s in kb.ask({**FT, "task": "qlora", "framework": "unsloth"}).trace
                if s.rule.startswith("req.activations.training"))
    assert "(1 layers' inputs on the GPU)" in step.sentence


def test_peft_qlora_holds_what_it_leaves_unquantized_in_fp32(kb: gpukb.KnowledgeBase) -> None:
    # prepare_model_for_kbit_training casts the 16-bit embeddings and output layer to fp32: 2 more bytes each
    qlora = {**FT, "task": "qlora"}
    hf, torchtune = kb.ask({**qlora, "framework": "hf"}), kb.ask({**qlora, "framework": "torchtune"})
    assert hf.memory.weights - torchtune.memory.weights == pytest.approx(2 * 2 * 128256 * 4096, abs=2)
    lora = {**FT, "task": "lora"}  # a 16-bit LoRA base is not prepared for k-bit training
    assert kb.ask({**lora, "framework": "hf"}).memory.weights == kb.ask({**lora, "framework": "torchtune"}).memory.weights


def test_the_8b_full_fine_tune_is_close_to_the_h200_allocator_peak(kb: gpukb.KnowledgeBase) -> None:
    # issue 32: Llama-3.1-8B, seq 2048, micro-batch 1, checkpointing, fp32 weights + AdamW with bf16 autocast
    # (16 bytes a parameter, as mixed precision): torch.cuda.max_memory_allocated 129.1 GB
    m = kb.ask({**FT, "framework": "hf"}).memory
    allocated = m.total - m.overhead
    assert 1.0 <= allocated / 129.1e9 <= 1.05


def test_a_measurement_names_its_framework(kb: gpukb.KnowledgeBase, checkout: Path) -> None:
    assert all(m.workload["framework"] in kb.frameworks for m in kb.measurements.values())
    path = checkout / "kb" / "measurements" / "zhang-2022-opt.yaml"
    path.write_text(path.read_text().replace("    framework: fsdp\n", ""), encoding="utf-8")
    problems = check_measurements(gpukb.load_kb(checkout))
    assert [(p.code, Path(p.file).name) for p in problems] == [("M002", "zhang-2022-opt.yaml")]
    assert "framework" in problems[0].message


def test_validate_reports_per_framework(kb: gpukb.KnowledgeBase) -> None:
    v = validate(kb)
    assert {"megatron", "fsdp", "torchtune", "tensorrt-llm", "vllm-v0"} <= set(v.by_framework)
    assert sum(s.points for s in v.by_framework.values()) == v.overall.points
    assert v.to_json()["by_framework"]["megatron"]["points"] == v.by_framework["megatron"].points
