"""The grounding formulas against hand-computed values from their papers."""

import pytest

from gpukb.estimate import planner


def _kv(kb, model, precision="fp16"):
    answer = kb.ask({"model": model, "task": "inference", "precision": precision, "gpus": ["h200-sxm-141gb"]})
    step = next(s for s in answer.trace if s.rule.startswith("req.kv-cache@"))
    return {v["name"]: v["value"] for v in step.values}


def test_kv_cache_per_token_llama2_7b_fp16(kb):
    assert _kv(kb, "llama-2-7b")["per_token"] == 524_288  # 2 · 32 layers · 32 heads · 128 · 2 bytes


def test_kv_cache_per_token_llama3_8b_grouped_query(kb):
    assert _kv(kb, "llama-3-8b", "bf16")["per_token"] == 131_072  # 8 KV heads instead of 32


def test_kv_cache_is_linear_in_sequence_length(kb):
    short = kb.ask({"model": "llama-3.1-8b", "task": "inference", "seq_len": 8192, "gpus": ["h200-sxm-141gb"]})
    long = kb.ask({"model": "llama-3.1-8b", "task": "inference", "seq_len": 65536, "gpus": ["h200-sxm-141gb"]})
    assert long.memory.kv_cache == 8 * short.memory.kv_cache


def test_mixed_precision_adamw_is_16_bytes_per_parameter(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"]})
    n = kb.models["llama-2-7b"].params
    m = answer.memory
    assert (m.weights, m.gradients, m.optimizer) == (2 * n, 2 * n, 12 * n)
    assert m.weights + m.gradients + m.optimizer == 16 * n


def test_fp32_adamw_is_4_4_8(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "precision": "fp32", "gpus": ["h200-sxm-141gb"]})
    n = kb.models["llama-2-7b"].params
    assert (answer.memory.weights, answer.memory.gradients, answer.memory.optimizer) == (4 * n, 4 * n, 8 * n)


@pytest.mark.parametrize(("zero_stage", "expected_gb"), [(0, 120.0), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_model_states_7_5b_on_64_gpus(zero_stage, expected_gb):
    """ZeRO (Rajbhandari et al. 2020), Figure 1: Ψ = 7.5B, K = 12, Nd = 64."""
    psi = 7.5e9
    env = {"m": {"weights": 2 * psi, "gradients": 2 * psi, "optimizer": 12 * psi},
           # the figure counts model states alone, not the layers ZeRO-3 gathers to run them (gathered_layers 0)
           "w": {"layers": 32, "params": psi, "experts": 1, "expert_params": 0, "gathered_layers": 0},
           "dp": 64, "tp": 1, "pp": 1, "zero_stage": zero_stage, "offload": "none", "ep": 1, "cp": 1}
    states = sum(planner.PARTS[p].evaluate(env) for p in ("weights", "gradients", "optimizer"))
    assert states / 1e9 == pytest.approx(expected_gb, abs=0.05)


def _activation_rule(kb, name: str):
    (out,) = next(c for c in kb.compiled if c.rule.id == "req.activations.training").outputs
    return dict(out.computed)[name]


def test_korthikanti_activation_formula_without_flash_attention(kb):
    """The rule in rules/requirements/ on GPT-3 175B at s=2048, b=1 without flash attention: Korthikanti
    et al.'s s·b·h·(34 + 5·a·s/h) less the two dropout masks (1 + 1), as GPT-style models now train
    without dropout: 32 + 5·96·2048/12288 = 32 + 80."""
    w = {"seq_len": 2048, "micro_batch_size": 1, "hidden_size": 12288, "heads": 96, "kv_heads": 96,
         "experts_per_token": 1, "mlp_matrices": 2, "intermediate_size": 4 * 12288, "flash_attention": False,
         "layer_activation_bytes": 0}
    assert _activation_rule(kb, "per_layer").evaluate({"w": w}) == 2048 * 12288 * (32 + 80)
    # grouped-query attention stores smaller K and V; a SwiGLU MLP stores four intermediate tensors
    llama3 = {**w, "seq_len": 4096, "hidden_size": 4096, "heads": 32, "kv_heads": 8, "mlp_matrices": 3,
              "intermediate_size": 14336, "flash_attention": True}
    assert _activation_rule(kb, "per_layer").evaluate({"w": llama3}) == 4096 * 4096 * (12 + 1 + 8 * 3.5)
    # an eager stack's own layer adds what it saves beyond the count (kb/frameworks layer_activation_bytes)
    hf = {**llama3, "layer_activation_bytes": kb.frameworks["hf"].layer_activation_bytes.value}
    assert _activation_rule(kb, "per_layer").evaluate({"w": hf}) == pytest.approx(4096 * 4096 * (12 + 1 + 8 * 3.5 + 12.2))


def test_activation_checkpointing_keeps_layer_inputs(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "activation_checkpointing": True,
                     "gpus": ["h200-sxm-141gb"]})
    s, h, layers, v = 4096, 4096, 32, 32000
    # layer inputs, and the larger of one rebuilt layer (Llama 2: 12 + 4·32/32 + 8·11008/4096 = 37.5 s·h by
    # Korthikanti's count, 18.3 more in the hf stack's eager layer with fp32 weights) and the loss's logits as
    # the default framework (hf) holds them, 12 bytes each: the logits are freed before the last layer is rebuilt
    layer, logits = (37.5 + 18.3) * s * h, 12 * s * v
    assert answer.memory.activations == pytest.approx(2 * s * h * layers + max(layer, logits))
    assert logits > layer
