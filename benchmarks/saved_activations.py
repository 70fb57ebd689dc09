"""Bytes one decoder layer saves for its gradient, per token and hidden unit, counted from autograd itself.

The count is what `torch.autograd.graph.saved_tensors_hooks` sees while one Transformers LlamaDecoderLayer (and
`gpukb probe`'s own block) runs forward under bf16 autocast, each storage counted once; run at two token counts,
the difference removes the weights' copies, leaving what grows with the tokens. Compared with Korthikanti et al.'s
count as gpukb states it (rules/requirements/activations-training.yaml), the excess is the eager stack's term in
kb/frameworks (`layer_activation_bytes`). Runs on the CPU; needs transformers and peft (not dependencies of gpukb).

    python benchmarks/saved_activations.py
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from gpukb.probe.model import Shape, build, saved_bytes_per_token

TOKENS = 256
# name, hidden, heads, kv heads, intermediate: two Llama shapes of different widths and MLP ratios
SHAPES = (("llama-3.1-8b", 4096, 32, 8, 14336), ("llama-3.2-1b", 2048, 32, 8, 8192))


def _transformers_layer(h: int, heads: int, kv: int, i: int, sixteen_bit: bool, lora: bool) -> Callable:
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

    config = LlamaConfig(hidden_size=h, intermediate_size=i, num_attention_heads=heads, num_key_value_heads=kv,
                         head_dim=h // heads, num_hidden_layers=1, attn_implementation="sdpa")
    torch.set_default_dtype(torch.bfloat16 if sixteen_bit else torch.float32)
    try:
        layer, rope = LlamaDecoderLayer(config, 0), LlamaRotaryEmbedding(config)
    finally:
        torch.set_default_dtype(torch.float32)
    if lora:
        from peft import LoraConfig, get_peft_model

        holder = torch.nn.Module()
        holder.layer = layer
        get_peft_model(holder, LoraConfig(r=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                                "up_proj", "down_proj"]))
    else:
        layer.requires_grad_(True)

    def run(x: torch.Tensor) -> object:
        positions = torch.arange(x.shape[1])[None]
        return layer(x, position_embeddings=rope(x, positions), attention_mask=None, position_ids=positions)

    return run


def _probe_layer(h: int, heads: int, kv: int, i: int, sixteen_bit: bool, lora: bool) -> Callable:
    s = Shape(layers=1, hidden=h, heads=heads, kv_heads=kv, head_dim=h // heads, intermediate=i, vocab=8, gated=True)
    model = build(s, torch.device("cpu"), torch.bfloat16 if sixteen_bit else torch.float32)
    if lora:
        model.add_lora(16)
    return model.blocks[0]


def main() -> None:
    print(f"torch {torch.__version__}; bytes saved per token and hidden unit by one layer (excess over the count)")
    for name, h, heads, kv, i in SHAPES:
        counted = 12 + 4 * kv / heads + 8 * i / h  # rules/requirements/activations-training.yaml, gated MLP
        for regime, sixteen_bit, lora in (("LoRA over a bf16 base", True, True), ("fp32 weights, autocast", False, False)):
            dtype = torch.bfloat16 if sixteen_bit else torch.float32  # the residual stream: the embedding's dtype
            for stack, make in (("transformers", _transformers_layer), ("gpukb probe", _probe_layer)):
                b = saved_bytes_per_token(make(h, heads, kv, i, sixteen_bit, lora), h, dtype, TOKENS)
                print(f"{name:13s} {regime:24s} {stack:13s} {b:6.2f}  (+{b - counted:5.2f} over {counted:g})")


if __name__ == "__main__":
    main()
