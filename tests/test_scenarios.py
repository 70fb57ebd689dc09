"""Scenario tests per section of the article, against the rules that follow the evidence."""

import pytest


def finding_rules(option):
    return {f.rule.split("@")[0] for f in option.findings}


def test_pcie_only_gpus_hit_the_communication_wall_nvlink_gpus_do_not(kb):
    # at 1k tokens a micro-batch's backward pass is too short to hide the all-reduce over PCIe
    pcie = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["l40s-48gb"], "gpu_count": 8, "seq_len": 1024})
    nvlink = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                     "seq_len": 1024})
    assert "bottleneck.interconnect.wall" in finding_rules(pcie.options[0])
    assert "bottleneck.interconnect.wall" not in finding_rules(nvlink.options[0])
    assert pcie.options[0].efficiency < 0.8 < nvlink.options[0].efficiency
    assert {"overlap-communication", "gradient-accumulation", "nvlink-gpus"} <= {r.id for r in pcie.remedies}


def test_zero3_costs_one_and_a_half_times_the_data_parallel_traffic(kb):
    def dp_bytes(stage):
        answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"],
                         "zero_stage": stage, "activation_checkpointing": True})
        step = next(s for s in answer.options[0].trace if s.rule.startswith("bottleneck.interconnect.step@"))
        return {v["name"]: v["value"] for v in step.values}["dp_bytes"], answer.options[0].count

    (z2, n2), (z3, n3) = dp_bytes(2), dp_bytes(3)
    assert n2 == n3 == 2
    assert z3 == pytest.approx(1.5 * z2)


def test_training_is_compute_bound_decode_is_bandwidth_bound(kb):
    train = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    (roofline,) = [f for f in train.options[0].findings if f.rule.startswith("bottleneck.roofline.training@")]
    assert roofline.kind == "compute" and roofline.severity == "info"
    serve = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert any(f.kind == "memory_bandwidth" for f in serve.options[0].findings)


def test_more_bandwidth_at_equal_flops_barely_moves_training_but_moves_decode(kb):
    """H100 SXM vs H200: same dense FLOPS, 3.35 vs 4.8 TB/s."""
    def best(task, gpu):
        training = {"activation_checkpointing": True} if task != "inference" else {}
        return kb.ask({"model": "llama-2-7b", "task": task, "gpus": [gpu], "gpu_count": 1, **training})

    lora_h100, lora_h200 = best("lora", "h100-sxm-80gb"), best("lora", "h200-sxm-141gb")
    assert lora_h200.options[0].tokens_per_s / lora_h100.options[0].tokens_per_s == pytest.approx(1.0, rel=0.01)
    decode_h100, decode_h200 = best("inference", "h100-sxm-80gb"), best("inference", "h200-sxm-141gb")
    assert decode_h200.options[0].tokens_per_s / decode_h100.options[0].tokens_per_s == pytest.approx(4.8 / 3.35)


def test_175b_pretraining_needs_more_than_one_8_gpu_node(kb):
    answer = kb.ask({"model": "gpt3-175b", "task": "pretrain", "tokens": "300B"})
    best = answer.options[0]
    assert best.count > 8 and best.strategy.nodes > 1
    assert best.tier == 0 and kb.gpus[best.gpu].scale_up_domain >= 8
    assert best.time_to_train_s and best.time_to_train_s > 86400


def test_lora_marks_one_consumer_card_as_the_articles_pick_without_ranking_it_first(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "qlora"})
    pick = answer.summary.article_pick
    chosen = next(o for o in answer.options if o.gpu == pick.gpu)
    assert pick.count == 1 and kb.gpus[pick.gpu].segment == "consumer" and chosen.branch == "lora-consumer"
    assert any(s.rule.startswith("rec.tree.lora-consumer@") for s in chosen.trace)
    best = answer.options[0]
    assert best.score > chosen.score and best.branch is None  # faster options stay above the article's pick


def test_fp8_training_speeds_up_the_multiplies_not_the_element_wise_work(kb):
    pinned = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
              "zero_stage": 3, "activation_checkpointing": False}
    bf16 = kb.ask(pinned)
    fp8 = kb.ask({**pinned, "precision": "fp8"})
    assert fp8.memory == bf16.memory  # model states unchanged
    # element-wise share at d = 4096 on an H100: 4.4 x 989.4 / 3.35 / 4096 = 0.31726 of the multiplies' time;
    # FP8 halves the multiplies: (1 + 0.31726) / (0.5 + 0.31726) = 1.612 before communication
    speedup = (1 + 4.4 * 989.4 / 3.35 / 4096) / (989.4 / 1978.9 + 4.4 * 989.4 / 3.35 / 4096)
    assert speedup == pytest.approx(1.61185, rel=1e-5)
    (fp8_step,), (bf16_step,) = ([s for s in a.options[0].trace if s.rule.startswith("rec.throughput.training@")]
                                 for a in (fp8, bf16))
    # a micro-batch's compute (the optimizer step, memory-bound, is the same in both)
    assert next(v["value"] for v in fp8_step.values if v["name"] == "step_time_s") == pytest.approx(
        next(v["value"] for v in bf16_step.values if v["name"] == "step_time_s") / speedup, rel=1e-9)
    assert bf16.options[0].tokens_per_s < fp8.options[0].tokens_per_s < 2 * bf16.options[0].tokens_per_s
    assert "bottleneck.precision.fp8-training" in finding_rules(fp8.options[0])
    a100 = kb.ask({"model": "llama-2-7b", "task": "inference", "precision": "fp8", "gpus": ["a100-sxm-80gb"]})
    assert "bottleneck.precision.no-fp8" in finding_rules(a100.options[0])


def test_dense_consumer_builds_get_a_thermal_warning(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["rtx-4090-24gb"]})
    (thermal,) = [f for f in answer.options[0].findings if f.kind == "thermal"]
    assert thermal.severity == "warning" and "W of GPU power" in thermal.message


def test_long_context_kv_cache_outgrows_the_weights(kb):
    answer = kb.ask({"model": "llama-3.1-8b", "task": "inference", "seq_len": 131072})
    assert answer.memory.kv_cache == 131072 * 131072  # 131,072 bytes per token
    assert any(f.rule.startswith("bottleneck.capacity.kv-dominates@") for f in answer.findings)
