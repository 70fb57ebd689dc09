"""`gpukb list gpus|models|systems`: the catalog's ids with the figures people choose by, as JSON-ready rows.

Deprecated entries have left the catalog and are not listed. Numbers are SI (bytes, bytes/s, FLOP/s)
and US dollars, as the knowledge base holds them; the command line formats them for the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase


def gpu_rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """One row per catalog GPU: datasheet memory, bandwidth, dense BF16 throughput, the lowest dated
    cloud price per GPU-hour and the purchase price, where the knowledge base has them."""
    rows = []
    for gpu_id, gpu in sorted(kb.gpus.items()):
        if gpu.status == "deprecated":
            continue
        cloud = gpu.cloud_price
        rows.append({"id": gpu_id, "name": gpu.name, "memory_bytes": round(gpu.memory),
                     "memory_bandwidth": gpu.memory_bandwidth, "bf16_flops": gpu.bf16_flops,
                     "usd_per_gpu_hour": cloud.usd_per_gpu_hour if cloud else None,
                     "price_usd": gpu.price.usd if gpu.price else None})
    return rows


def system_rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """One row per system: its GPU and how many a node holds, the fabric and peer-to-peer between them, the network
    between nodes (bytes/s per node and direction; null: plans stay in one node), host memory and the lowest dated
    price per node-hour."""
    rows = []
    for system_id, s in sorted(kb.systems.items()):
        if s.status == "deprecated":
            continue
        rows.append({"id": system_id, "name": s.name, "kind": s.kind, "provider": s.provider, "gpu": s.gpu,
                     "gpus_per_node": s.gpus_per_node, "fabric": s.fabric, "peer_to_peer": s.peer_to_peer,
                     "network_bandwidth": s.network_bandwidth, "host_memory_bytes": round(s.host_memory),
                     "usd_per_node_hour": s.price.usd_per_node_hour if s.price else None,
                     "price_as_of": s.price.as_of.isoformat() if s.price else None})
    return rows


def model_rows(kb: KnowledgeBase) -> list[dict[str, Any]]:
    """One row per catalog model: parameters (active ones for a mixture of experts), layers, the longest
    context, and the Hugging Face repository that `--model` also accepts."""
    return [{"id": model_id, "name": m.name, "params": m.params, "active_params": m.active_params,
             "layers": m.layers, "context_length": m.context_length, "hf_repo": m.hf_repo}
            for model_id, m in sorted(kb.models.items()) if m.status != "deprecated"]
