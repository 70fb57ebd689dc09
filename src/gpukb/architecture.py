"""Parameter counts from a model's architecture, so a catalog entry's `params` can be checked.

Convention (matches the published totals of the catalog's models): token embeddings, an untied
output layer, learned position embeddings if any; per layer q/k/v/o projections (grouped-query
aware) with their biases, the MLP (3 matrices when gated, 2 otherwise; one per expert for MoE,
plus a bias-free router), two norms; one final norm. RMSNorm has a weight, LayerNorm a weight
and a bias. Non-trainable buffers (rotary frequencies) are not parameters.
"""

from __future__ import annotations

from .schema import Model


def count_parameters(m: Model) -> tuple[int, int]:
    """(total parameters, parameters active per token). The two differ only for MoE models."""
    h, hd = m.hidden_size, m.head_dim
    attention = h * m.heads * hd + 2 * h * m.kv_heads * hd + m.heads * hd * h
    if m.qkv_bias or m.linear_bias:
        attention += m.heads * hd + 2 * m.kv_heads * hd
    if m.linear_bias:
        attention += h  # output projection bias
    mlp = (3 if m.mlp == "gated" else 2) * h * m.intermediate_size
    if m.linear_bias:
        mlp += m.intermediate_size + h
    norm = h if m.norm == "rmsnorm" else 2 * h
    experts, active_experts, router = 1, 1, 0
    if m.moe:
        experts, active_experts, router = m.moe.experts, m.moe.experts_per_token, h * m.moe.experts
    shared = m.vocab_size * h + (0 if m.tied_embeddings else m.vocab_size * h) + norm
    if m.position_embeddings == "learned":
        shared += m.context_length * h
    per_layer = attention + router + 2 * norm
    total = shared + m.layers * (per_layer + experts * mlp)
    active = shared + m.layers * (per_layer + active_experts * mlp)
    return total, active
