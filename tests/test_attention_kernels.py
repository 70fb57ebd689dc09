"""The FlashAttention rates (policies flash-attention-1-rate, flash-attention-2-rate) reproduce the end-to-end
training speeds they were derived from: Dao 2023 (FlashAttention-2), Table 1, GPT-style models on 8 A100-80GB."""

from __future__ import annotations

import pytest

PEAK = 312e12  # A100 dense BF16
VOCAB = 50257
# model: (layers, width, {kernel: (TFLOP/s per GPU at 2k context, at 8k)}), counted as 6·N·tokens + 12·L·d·s² a token
TABLE_1 = {"gpt3-1.3b": (24, 2048, {1: (189, 170), 2: (196, 220)}),
           "gpt3-2.7b": (32, 2560, {1: (189, 175), 2: (205, 225)})}


@pytest.mark.parametrize("model", sorted(TABLE_1))
def test_the_two_kernel_rates_reproduce_the_published_training_speeds(kb, model):
    layers, width, speeds = TABLE_1[model]
    rates = {v: kb.policy(f"flash-attention-{v}-rate") * PEAK for v in (1, 2)}
    params = 12 * layers * width**2 + VOCAB * width

    def counted(context: int) -> float:  # the FLOPs a token as the table counts them (attention not halved)
        return 6 * params + 12 * layers * width * context

    def attention(context: int) -> float:  # the causal attention a token computes, as gpukb counts it
        return 6 * layers * width * context

    cells = [(version, context, published) for version, pair in speeds.items()
             for context, published in zip((2048, 8192), pair, strict=True)]

    def predicted(matmul: float, version: int, context: int) -> float:
        return counted(context) / (6 * params / matmul + attention(context) / rates[version]) / 1e12

    # one matrix-multiply rate per model, the one that fits its four cells best; the two kernel rates are shared
    matmul = min((t * 1e11 for t in range(1500, 2500)),
                 key=lambda m: sum((predicted(m, v, c) / p - 1) ** 2 for v, c, p in cells))
    for version, context, published in cells:
        assert predicted(matmul, version, context) == pytest.approx(published, rel=0.04), (version, context)
    assert rates[2] / rates[1] == pytest.approx(2.27, rel=0.01)  # the paper: "around 2× faster"


def test_only_a_flash_attention_1_stack_is_charged(kb):
    base = {"model": "llama-2-13b", "task": "pretrain", "gpus": ["a100-sxm-80gb"], "gpu_count": 64,
            "placement": "all", "tokens": 10**11}
    fa2, unfused, fa1 = kb.ask(base), kb.ask({**base, "flash_attention": False}), kb.ask({**base, "flash_attention_version": 1})
    assert fa1.options[0].gpu_hours > fa2.options[0].gpu_hours
    # without flash attention the scores' memory traffic is charged instead (attention_bytes), not the kernel rate
    kernel = [v["value"] for s in unfused.options[0].trace if s.rule.startswith("rec.throughput.training@")
              for v in s.values if v["name"] == "attention_kernel"]
    assert kernel == [1]
