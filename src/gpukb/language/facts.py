"""The kinds of facts rules can match and assert, and the fields each kind carries.

Rule conditions and outputs are checked against this table when the knowledge base loads, so a
misspelt field is an error with a line number rather than a rule that silently never fires.
"""

from __future__ import annotations

# Facts the engine asserts from the workload, the catalog and the planner.
ENGINE_KINDS: dict[str, frozenset[str]] = {
    "workload": frozenset({
        "model", "task", "precision", "optimizer", "training", "params", "active_params", "layers",
        "hidden_size", "heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size",
        "mlp_matrices", "experts", "experts_per_token", "seq_len", "micro_batch_size", "batch_size",
        "lora_rank", "tokens", "weight_bytes", "grad_bytes", "master_bytes", "optimizer_state_bytes",
        "adapter_weight_bytes", "kv_bytes", "attention", "kv_lora_rank", "qk_rope_head_dim", "sliding_window",
        "sliding_layers", "activation_checkpointing", "flash_attention", "flash_attention_version", "gpu_count", "dp_hint",
        "global_batch_size", "prompt_len", "output_len", "decode_context", "embedding_params", "embedding_weight_bytes",
        "expert_params", "moe_layers", "expert_parallel", "tp_comm_overlap", "master_weights", "virtual_pipeline_stages",
        "context_parallel",
        "optimizer_in_backward", "placement", "ttft_ms", "tpot_ms",
        "objective", "kv_cache_precision",
        "context_length", "framework", "framework_defaults", "loss_logit_bytes", "layer_activation_bytes",
        "checkpoint_layers_on_gpu", "comm_buffer_bytes", "kv_cache_memory_fraction", "kv_cache_free_memory_fraction",
        "decode_bandwidth_utilisation", "decode_bandwidth_from", "decode_bandwidth_from_zh", "layer_launch_s",
        "step_host_s", "step_host_per_sequence_s",
        "gathered_layers", "region", "grid_policy", "grid_intensity", "energy_scope", "pue",
        "rollout_batch", "samples_per_prompt", "response_len",
    }),
    "policy": frozenset({"reserve_fraction", "runtime_overhead", "edge_reserve_fraction", "prefill_chunk",
                         "scaling_efficiency_floor",
                         "decode_bandwidth_utilisation", "decode_step_floor", "allreduce_base_latency",
                         "allreduce_hop_latency_nvlink", "allreduce_hop_latency_pcie",
                         "collective_share_pcie", "pipeline_microbatches_per_stage",
                         "host_memory_per_gpu", "consumer_nodes", "training_gpu_power_fraction",
                         "node_other_power_fraction", "datacenter_pue",
                         "interruption_gpu_seconds", "restart_time", "checkpoint_bandwidth",
                         "ring_step_latency_network", "ring_step_latency_nvlink", "ring_step_latency_pcie",
                         "published_mfu_8", "published_mfu_128",
                         "published_mfu_512", "published_mfu_12288", "published_mfu_16384",
                         "flash_attention_1_rate", "flash_attention_2_rate"}),
    "gpu": frozenset({
        "gpu", "name", "vendor", "form_factor", "memory_bytes", "memory_bandwidth",
        "flops", "bf16_flops", "fp8_flops", "reference_flops", "has_bf16", "has_fp8", "architecture", "kv_cache_supported",
        "scale_up_bandwidth", "peer_bandwidth", "devices",
        "scale_up_domain", "pcie_bandwidth", "tdp", "liquid_only", "air_cooled", "consumer", "segment",
        "price_usd", "usd_per_gpu_hour", "price_source", "price_as_of", "price_instance",
        "utilisation", "node_network_bandwidth", "utilisation_policy", "node_network_bandwidth_policy",
        "elementwise_work", "elementwise_work_policy", "utilisation_hidden_size", "utilisation_hidden_size_policy",
        "collective_share", "collective_share_policy",
        # the system it is planned on (kb/systems; gpukb.estimate.systems)
        "system", "gpus_per_node", "scales_out", "host_memory_per_gpu",
    }),
    "plan": frozenset({
        "gpu", "count", "dp", "tp", "pp", "ep", "cp", "zero_stage", "checkpointing", "offload", "weights",
        "gradients", "optimizer", "activations", "kv_cache", "overhead", "per_gpu_bytes",
        "usable_bytes", "capacity_bytes", "fits", "fill", "nodes", "tp_over_pcie", "limit", "host_bytes", "short_of",
        "box_limit", "devices", "concurrency",
        # the most a plan may need at the card's edge (policy edge-reserve-fraction), and whether it needs more
        # than usable_bytes to fit there
        "edge_bytes", "at_edge",
        # inference: the sequences decoding at once over all data-parallel replicas (concurrency is per replica)
        "in_flight",
        # the nodes it rents (gpukb.estimate.systems.rental): 0 and "" where no system holds the GPU
        "system", "system_name", "gpus_per_node", "gpus_rented", "nodes_rented", "idle_gpus", "host_memory_per_gpu",
        "usd_per_node_hour", "price_source", "price_as_of", "price_region",
    }),
    "fleet": frozenset({"candidates", "max_usable_bytes", "largest_gpu", "fitting"}),
    # RL post-training: one GPU type's placement of the run's models and its phase times (gpukb.estimate.rl)
    "rl": frozenset({
        "gpu", "placement", "count", "trainer_gpus", "rollout_gpus", "per_gpu_bytes", "usable_bytes", "fits", "tokens",
        "limit", "waves", "engine_batch", "timed",
        # a miss short of GPUs rather than memory: the GPUs the trainer and the rollout engine need together (0: none)
        "needed_gpus",
        "policy_bytes", "critic_bytes", "reference_bytes", "reward_bytes", "rollout_bytes",
        "generation_s", "reference_s", "reward_s", "critic_s", "training_s", "sync_s", "switch_s", "offload_s",
    }),
}

# Facts rules assert; `required` fields must be given by every rule that asserts the kind.
RULE_KINDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "activations": (frozenset({"bytes", "bytes_checkpointed"}),
                    frozenset({"bytes", "bytes_checkpointed", "per_layer", "logits"})),
    "kv_cache": (frozenset({"bytes", "per_token"}), frozenset({"bytes", "per_token"})),
    "adapters": (frozenset({"params", "bytes"}), frozenset({"params", "bytes"})),
    "memory": (
        frozenset({"weights", "gradients", "optimizer", "activations", "activations_checkpointed",
                   "kv_cache", "overhead", "total"}),
        frozenset({"weights", "gradients", "optimizer", "activations", "activations_checkpointed",
                   "kv_cache", "overhead", "total", "trainable_params"}),
    ),
    "finding": (frozenset({"finding", "severity"}),
                frozenset({"finding", "severity", "gpu", "rejects", "value", "limit"})),
    "remedy": (frozenset({"remedy", "title"}),
               frozenset({"remedy", "title", "title_zh", "effect_bytes", "efficiency_before", "efficiency_after", "gpu",
                          "step_time_before", "step_time_after"})),
    # RL post-training: the step time of one GPU type's plan and the phase that bounds it
    "rl_step": (frozenset({"gpu", "step_time_s", "bound", "tokens_per_s"}),
                frozenset({"gpu", "step_time_s", "bound", "bound_s", "bound_share", "tokens_per_s", "generation_share"})),
    # communication per training step against its compute (the "communication wall")
    "comm": (frozenset({"gpu", "comm_time_s", "compute_time_s", "efficiency"}),
             frozenset({"gpu", "dp_bytes", "tp_bytes", "offload_bytes", "link_bandwidth", "tp_bandwidth", "comm_time_s",
                        "compute_time_s", "efficiency", "link", "microbatches", "dp_time_s", "exposed_dp_s",
                        "tp_time_s", "exposed_tp_s", "ep_bytes", "ep_bandwidth", "ep_time_s", "offload_time_s",
                        "bubble_time_s", "imbalance", "imbalance_s", "cp_bytes", "cp_bandwidth", "cp_time_s",
                        "exposed_cp_s", "dp_latency_s"})),
    # what ranks an option: effective throughput after communication, and its time to train
    "rank": (frozenset({"gpu", "score", "tokens_per_s"}),
             frozenset({"gpu", "score", "tokens_per_s", "time_to_train_s", "gpu_hours", "efficiency", "tokens_per_dollar", "mfu",
                        "ttft_s", "tpot_s", "goodput", "mfu_ceiling"})),
    # what an option costs at the lowest dated cloud on-demand price of its GPU
    "cost": (frozenset({"gpu", "usd_per_hour", "usd_per_million_tokens"}),
             frozenset({"gpu", "usd_per_hour", "usd_per_million_tokens", "cost_usd"})),
    # what a training option's run draws and emits (rec.energy.training): GPU, server and facility energy, CO₂
    "energy": (frozenset({"gpu", "energy_kwh", "co2_kg"}),
               frozenset({"gpu", "gpu_hours", "gpu_kwh", "it_kwh", "energy_kwh", "co2_kg"})),
    # serving capacity of an inference option: sequences at the requested context, context at the concurrency
    "capacity": (frozenset({"gpu", "max_concurrency", "max_context"}), frozenset({"gpu", "max_concurrency", "max_context"})),
    # a decision-tree branch that prefers some GPU types for this workload (lower tier first)
    "preference": (frozenset({"gpu", "tier", "branch"}), frozenset({"gpu", "tier", "branch"})),
    "estimate": (frozenset({"gpu", "tokens_per_s"}),
                 frozenset({"gpu", "tokens_per_s", "step_time_s", "time_to_train_s", "score", "bound",
                            "intensity", "ridge", "flop_per_token", "model_flop_per_token", "utilisation",
                            "ttft_s", "tpot_s", "bytes_per_step", "tp_latency_s", "attention_bytes", "prefill_share",
                            "optimizer_s", "concurrency", "in_flight"})),
}

FINDING_KINDS = ("memory_capacity", "memory_bandwidth", "interconnect", "compute", "thermal", "precision")
SEVERITIES = ("info", "warning", "error")


def fields_of(kind: str) -> frozenset[str]:
    if kind in ENGINE_KINDS:
        return ENGINE_KINDS[kind]
    return RULE_KINDS[kind][1]


ALL_KINDS = tuple(ENGINE_KINDS) + tuple(RULE_KINDS)
