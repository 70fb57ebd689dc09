"""The planner's per-GPU memory against hand-computed bytes: sharding of every part, ZeRO stages,
the runtime overhead and the fit boundary.

llama-2-7b: N = 6,738,415,616 parameters, 32 layers, hidden 4096, 32 heads, vocabulary 32,000.
Full fine-tuning in bf16 with AdamW at 4096 tokens, one micro-batch:
weights 2N, gradients 2N, optimizer 12N; activations 32 x 4096 x 4096 x 34 + 4 x 4096 x 32,000;
checkpointed 2 x 4096 x 4096 x 32 + 4096 x 4096 x 34 + 4 x 4096 x 32,000.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import gpukb
from gpukb import planner

N = 6_738_415_616
W, G, OPT = 2 * N, 2 * N, 12 * N  # 13,476,831,232 / 13,476,831,232 / 80,860,987,392
A = 32 * 4096 * 4096 * 34 + 4 * 4096 * 32_000  # 18,777,899,008
C = 2 * 4096 * 4096 * 32 + 4096 * 4096 * 34 + 4 * 4096 * 32_000  # 2,168,455,168
K = 2 * 32 * 32 * 128 * 2 * 4096  # a KV cache of 4096 tokens: 2,147,483,648
OVERHEAD = 2_000_000_000  # kb/policies: runtime-overhead, 2 GB on every GPU
MEMORY = {"weights": W, "gradients": G, "optimizer": OPT, "activations": A, "activations_checkpointed": C,
          "kv_cache": K, "overhead": OVERHEAD}


def test_one_replica_of_llama_2_7b(kb):
    m = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"]}).memory
    assert (m.weights, m.gradients, m.optimizer) == (13_476_831_232, 13_476_831_232, 80_860_987_392)
    assert (m.activations, m.overhead) == (18_777_899_008, 2_000_000_000)
    assert m.total == 16 * N + A + OVERHEAD == 128_592_548_864


# (tp, pp, dp, zero_stage, checkpointing, offload) -> per-GPU (weights, gradients, optimizer, activations, kv_cache)
SPLITS = {
    "one GPU": ((1, 1, 1, 0, False, "none"), (W, G, OPT, A, K)),
    "tp 2 halves every part but the overhead": ((2, 1, 1, 0, False, "none"), (W / 2, G / 2, OPT / 2, A / 2, K / 2)),
    "tp 4 with checkpointing": ((4, 1, 1, 0, True, "none"), (W / 4, G / 4, OPT / 4, C / 4, K / 4)),
    "tp 8": ((8, 1, 1, 0, False, "none"), (W / 8, G / 8, OPT / 8, A / 8, K / 8)),
    # 1F1B: the first stage holds pp micro-batches of L/pp layers, so pp does not divide activations
    "tp 2 x pp 2": ((2, 2, 1, 0, False, "none"), (W / 4, G / 4, OPT / 4, A / 2, K / 4)),
    "ZeRO-0 over 8: data parallelism alone shards nothing": ((1, 1, 8, 0, False, "none"), (W, G, OPT, A, K)),
    "ZeRO-1 over 8: optimizer states": ((1, 1, 8, 1, False, "none"), (W, G, OPT / 8, A, K)),
    "ZeRO-2 over 8: and gradients": ((1, 1, 8, 2, False, "none"), (W, G / 8, OPT / 8, A, K)),
    "ZeRO-3 over 8: and weights": ((1, 1, 8, 3, False, "none"), (W / 8, G / 8, OPT / 8, A, K)),
    "ZeRO-3 over 4 with tp 2": ((2, 1, 4, 3, True, "none"), (W / 8, G / 8, OPT / 8, C / 2, K / 2)),
    "optimizer offload": ((1, 1, 4, 2, False, "optimizer"), (W, G / 4, 0, A, K)),
    # ZeRO-Infinity keeps two layers' weights resident: 2N / 32 layers x 2, over tp 2
    "parameter offload": ((2, 1, 4, 3, False, "optimizer+params"), (W / 32 * 2 / 2, G / 8, 0, A / 2, K / 2)),
}


@pytest.mark.parametrize(("split", "expected"), SPLITS.values(), ids=SPLITS.keys())
def test_each_memory_part_is_divided_as_the_strategy_says(split, expected):
    tp, pp, dp, zero_stage, checkpointing, offload = split
    strategy = planner.Strategy(tp, pp, zero_stage, checkpointing, offload)
    parts = planner.PlanCache().parts_of(strategy, dp, {"m": MEMORY, "w": {"layers": 32}})
    assert set(parts) == {*planner.PARTS} == {"weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"}
    got = tuple(parts[p] for p in ("weights", "gradients", "optimizer", "activations", "kv_cache"))
    assert got == pytest.approx(expected, rel=1e-12)
    assert parts["overhead"] == OVERHEAD  # every GPU carries it: no split divides it


def test_tensor_parallelism_halves_activations_in_an_answer(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"], "tensor_parallel": 2,
                     "zero_stage": 0, "activation_checkpointing": False, "offload": "none"})
    (option,) = answer.options
    assert (option.count, option.strategy.tensor_parallel) == (2, 2)
    m = option.memory
    assert (m.weights, m.gradients, m.optimizer) == (W // 2, G // 2, OPT // 2)
    assert (m.activations, m.overhead) == (9_388_949_504, OVERHEAD)
    assert option.per_gpu_bytes == (16 * N + A) // 2 + OVERHEAD == 65_296_274_432


# A100 40GB: 36e9 usable (10% reserve). Pinned tp 1, checkpointing, no offload: per GPU = a + b / dp.
ZERO_ON_A100_40GB = {
    # a = 2N + 2N + C + 2 GB, b = 12N: dp = ceil(b / (36e9 - a)) = ceil(16.58) = 17, rounded up to 3 nodes of 8
    1: (24, (W, G, OPT / 24), W + G + C + OVERHEAD + OPT / 24),
    # a = 2N + C + 2 GB, b = 14N: ceil(5.14) = 6
    2: (6, (W, G / 6, OPT / 6), W + C + OVERHEAD + (G + OPT) / 6),
    # a = C + 2 GB, b = 16N: ceil(3.39) = 4
    3: (4, (W / 4, G / 4, OPT / 4), C + OVERHEAD + 16 * N / 4),
}


@pytest.mark.parametrize("zero_stage", [0, 1, 2, 3])
def test_zero_stages_set_the_count_and_the_states_per_gpu(kb, zero_stage):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-40gb"], "tensor_parallel": 1,
                     "zero_stage": zero_stage, "activation_checkpointing": True, "offload": "none"})
    if zero_stage == 0:  # 16N bytes on every GPU whatever the count: nothing fits 36 GB
        (rejected,) = answer.rejected
        assert rejected.per_gpu_bytes == 16 * N + C + OVERHEAD and rejected.usable_bytes == 36e9
        return
    count, states, per_gpu = ZERO_ON_A100_40GB[zero_stage]
    (option,) = answer.options
    assert (option.count, option.strategy.zero_stage, option.strategy.data_parallel) == (count, zero_stage, count)
    m = option.memory
    assert (m.weights, m.gradients, m.optimizer) == pytest.approx(states, abs=1)  # parts are rounded to bytes
    assert (m.activations, m.overhead) == (C, OVERHEAD)
    assert option.per_gpu_bytes == pytest.approx(per_gpu, abs=1) and option.per_gpu_bytes <= 36e9


def test_a_plan_fits_exactly_at_usable_memory_and_not_a_byte_above(kb, checkout: Path):
    """Serving llama-2-7b to 6 sequences of 1024 tokens on one GPU needs, per GPU:
    weights 2N + KV 6 x 1024 x 524,288 + activations 6144 x 4096 x 34 + logits 6 x 4 x 32,000 + 2 GB
    = 19,554,462,720 bytes, which is 90% of 21,727,180,800 exactly."""
    assert kb.policies["reserve-fraction"].value == 0.10
    need = W + 6 * 1024 * 524_288 + 6144 * 4096 * 34 + 6 * 4 * 32_000 + OVERHEAD
    assert need == 19_554_462_720 == 21_727_180_800 * (1 - 0.10)
    template = yaml.safe_load((checkout / "kb/gpus/l40s-48gb.yaml").read_text(encoding="utf-8"))
    for gpu_id, memory in (("edge-exact", 21_727_180_800), ("edge-short", 21_727_180_799)):
        entry = {**template, "id": gpu_id, "name": gpu_id, "memory": memory}
        (checkout / f"kb/gpus/{gpu_id}.yaml").write_text(yaml.safe_dump(entry, sort_keys=False), encoding="utf-8")
    answer = gpukb.load_kb(checkout).ask({"model": "llama-2-7b", "task": "inference", "seq_len": 1024, "batch_size": 6,
                                          "gpus": ["edge-exact", "edge-short"], "gpu_count": 1})
    (fits,) = answer.options
    assert (fits.gpu, fits.count, fits.per_gpu_bytes, fits.usable_bytes) == ("edge-exact", 1, need, need)
    (short,) = answer.rejected
    assert short.gpu == "edge-short" and not short.fits
    assert short.usable_bytes < need <= short.usable_bytes + 1  # under one byte short
