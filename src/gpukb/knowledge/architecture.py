"""Parameter counts from a model's architecture, so a catalog entry's `params` can be checked.

Convention (matches the published totals of the catalog's models): token embeddings, an untied
output layer, learned position embeddings if any; per layer the attention projections with their
biases (grouped-query aware, or multi-head latent attention with its compressions and their
norms; per-head q/k norms where the model has them), the MLP (3 matrices when gated, 2 otherwise;
for MoE one per routed and shared expert plus a bias-free router, with dense MLPs in the first
`dense_layers`), `norms_per_layer` norms; one final norm. RMSNorm has a weight, LayerNorm a weight
and a bias. Non-trainable buffers (rotary frequencies) are not parameters, and neither are
modules the model does not run for next-token prediction (DeepSeek-V3's multi-token prediction
layer).
"""

from __future__ import annotations

from .schema import Mla, Model


def _mla(h: int, heads: int, a: Mla) -> int:
    qk_dim = a.qk_nope_head_dim + a.qk_rope_head_dim
    q = h * heads * qk_dim
    if a.q_lora_rank is not None:  # a down-projection, its RMSNorm and an up-projection instead
        q = h * a.q_lora_rank + a.q_lora_rank + a.q_lora_rank * heads * qk_dim
    # the latent and the shared rotary key come from one projection; the latent is normed, then
    # expanded to every head's non-rotary key and value
    kv = h * (a.kv_lora_rank + a.qk_rope_head_dim) + a.kv_lora_rank
    kv += a.kv_lora_rank * heads * (a.qk_nope_head_dim + a.v_head_dim)
    return q + kv + heads * a.v_head_dim * h


def _attention(m: Model) -> int:
    h, hd = m.hidden_size, m.head_dim
    if m.mla is not None:
        return _mla(h, m.heads, m.mla)
    attention = h * m.heads * hd + 2 * h * m.kv_heads * hd + m.heads * hd * h
    if m.qkv_bias or m.linear_bias:
        attention += m.heads * hd + 2 * m.kv_heads * hd
    if m.linear_bias:
        attention += h  # output projection bias
    if m.qk_norm:
        attention += 2 * hd  # one RMSNorm weight shared by every query head, one by every key head
    return attention


def _mlp(m: Model, width: int) -> int:
    mlp = (3 if m.mlp == "gated" else 2) * m.hidden_size * width
    if m.linear_bias:
        mlp += width + m.hidden_size
    return mlp


def count_parameters(m: Model) -> tuple[int, int]:
    """(total parameters, parameters active per token). The two differ only for MoE models."""
    h = m.hidden_size
    norm = h if m.norm == "rmsnorm" else 2 * h
    shared = m.vocab_size * h + (0 if m.tied_embeddings else m.vocab_size * h) + norm
    if m.position_embeddings == "learned":
        shared += m.context_length * h
    shared += m.layers * (_attention(m) + m.norms_per_layer * norm)
    dense = _mlp(m, m.intermediate_size)
    if m.moe is None:
        total = shared + m.layers * dense
        return total, total
    moe = m.moe
    expert = _mlp(m, moe.expert_intermediate_size or m.intermediate_size)
    router = h * moe.experts + (moe.experts if moe.router_bias else 0)
    moe_layers = m.layers - moe.dense_layers
    always = shared + moe.dense_layers * dense + moe_layers * (router + moe.shared_experts * expert)
    return (always + moe_layers * moe.experts * expert,
            always + moe_layers * moe.experts_per_token * expert)
