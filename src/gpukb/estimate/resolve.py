"""Turn a validated Workload into the facts the rules see: workload, policy and candidate GPUs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from ..answer.workload import CUSTOM_PARAMS_TOLERANCE, LOAD_FIELDS, TRAINING_TASKS, ResolvedWorkload, Workload
from ..core.errors import KBDefectError, WorkloadError
from ..core.ids import catalog_id, near_hint, near_ids
from ..core.messages import message
from ..core.words import term
from ..knowledge.architecture import count_parameters
from ..knowledge.hfconfig import ConfigError, Quantized, checkpoint_quantization, model_from_config, read_config
from ..knowledge.hub import REPO_ID
from ..knowledge.schema import FrameworkTerm, Gpu, Model, System
from .energy import grid
from .planner import NODE_SIZE
from .systems import reference_system

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

ARCHITECTURE = ("layers", "hidden_size", "heads", "kv_heads", "vocab_size", "intermediate_size")
POLICY_IDS = {"reserve_fraction": "reserve-fraction", "runtime_overhead": "runtime-overhead",
              "edge_reserve_fraction": "edge-reserve-fraction",
              "prefill_chunk": "prefill-chunk", "scaling_efficiency_floor": "scaling-efficiency-floor",
              "decode_bandwidth_utilisation": "decode-bandwidth-utilisation",
              "decode_step_floor": "decode-step-floor",
              "allreduce_base_latency": "allreduce-base-latency",
              "allreduce_hop_latency_nvlink": "allreduce-hop-latency-nvlink",
              "allreduce_hop_latency_pcie": "allreduce-hop-latency-pcie",
              # the share of a PCIe link's bandwidth NCCL's all-reduce rings count (rec.throughput.decode)
              "collective_share_pcie": "collective-share-pcie",
              "pipeline_microbatches_per_stage": "pipeline-microbatches-per-stage",
              "host_memory_per_gpu": "host-memory-per-gpu", "consumer_nodes": "consumer-nodes",
              "training_gpu_power_fraction": "training-gpu-power-fraction",
              "node_other_power_fraction": "node-other-power-fraction", "datacenter_pue": "datacenter-pue",
              # goodput at scale: interruptions, the restart each costs, checkpoint writes (rec.rank.training)
              "interruption_gpu_seconds": "interruption-gpu-time", "restart_time": "restart-time",
              "checkpoint_bandwidth": "checkpoint-bandwidth",
              # sharded collectives at hundreds of ranks: NCCL's per-step ring latencies (bottleneck.interconnect.step)
              "ring_step_latency_network": "ring-step-latency-network",
              "ring_step_latency_nvlink": "ring-step-latency-nvlink", "ring_step_latency_pcie": "ring-step-latency-pcie",
              # the best MFU published runs on at least so many GPUs report: what no estimate may exceed (rec.rank.training)
              **{f"published_mfu_{n}": f"published-mfu-{n}-gpus" for n in (8, 128, 512, 12288, 16384)},
              # the rates FlashAttention-1 and -2 compute attention at, a share of dense peak (rec.throughput.training)
              "flash_attention_1_rate": "flash-attention-1-rate", "flash_attention_2_rate": "flash-attention-2-rate"}
# Policies whose value depends on the GPU generation: the entry listing the GPU's architecture, else
# the default (the entry of this id, which lists none). They become fields of the gpu fact.
GPU_POLICIES = {"utilisation": "mfu", "node_network_bandwidth": "node-network-bandwidth",
                "elementwise_work": "elementwise-work", "utilisation_hidden_size": "utilisation-hidden-size",
                # the share of the GPU-to-GPU link's bandwidth its collective library counts (rec.throughput.decode)
                "collective_share": "collective-share-scale-up"}
HORIZON = "pretrain-horizon"  # the policy: how long a pre-training run without deadline_days may take
# the measured all-reduce rate between consumer cards, which have no PCIe peer-to-peer (gpu fact peer_bandwidth)
CONSUMER_COLLECTIVES = "consumer-collective-bandwidth"
QUANTIZED = ("int8", "int4")  # weight-only formats: embeddings and the output layer stay in 16 bit
KV_BYTES = {"fp32": 4.0, "fp8": 1.0, "int8": 1.0}  # by kv_cache_precision, else the weights' (fp32 only) or 16-bit
QLORA_BASE = "nf4"
BANDWIDTH = POLICY_IDS["decode_bandwidth_utilisation"]  # the default where a framework states none
GATHERED = "zero3-gathered-layers"  # the policy of the layers ZeRO-3 / FSDP hold unsharded
# Which dense throughput a precision runs at, with fallbacks where a GPU lacks the native format.
FLOPS_ORDER = {
    "fp32": ("fp32_flops",),
    "bf16": ("bf16_flops", "fp16_flops"),
    "fp16": ("fp16_flops",),
    "fp8": ("fp8_flops", "bf16_flops", "fp16_flops"),
    "int8": ("bf16_flops", "fp16_flops"),
    "int4": ("bf16_flops", "fp16_flops"),
}


# Attention fields of a model without MLA or sliding windows
MAX_REF = 4096  # the longest model id or config path read (PATH_MAX on Linux)
GQA = {"attention": "gqa", "kv_lora_rank": 0, "qk_rope_head_dim": 0, "sliding_window": 0, "sliding_layers": 0}


def _architecture(kb: KnowledgeBase, w: Workload) -> dict[str, Any]:
    if w.model is not None:
        for name in ARCHITECTURE:
            if getattr(w, name) is not None:
                raise WorkloadError(name, message("from_the_model", model=w.model))
        model, config, declared = _model(kb, w.model)
        if w.task in ("lora", "qlora") and not _adapters_modelled(model):
            raise WorkloadError("task", message("adapters_not_sized", task=w.task, model=model.name))
        quantized = None
        if declared is not None:
            try:
                quantized = checkpoint_quantization(*declared)
            except ConfigError:
                if "precision" not in w.model_fields_set:  # a format gpukb cannot size needs the ask's precision
                    raise
        return {**_from_model(model, config), "checkpoint": quantized}
    missing = [n for n in ("layers", "hidden_size", "heads", "vocab_size") if getattr(w, n) is None]
    if missing:
        raise WorkloadError(missing[0], message("custom_needs", missing=missing))
    assert w.params is not None and w.layers and w.hidden_size and w.heads and w.vocab_size
    if w.hidden_size % w.heads:
        raise WorkloadError("heads", message("heads_divide", hidden_size=w.hidden_size, heads=w.heads))
    kv_heads = w.kv_heads or w.heads
    if w.heads % kv_heads:
        raise WorkloadError("kv_heads", message("kv_heads_divide", heads=w.heads, kv_heads=kv_heads))
    _check_custom_params(w, kv_heads)
    assumptions: list[tuple[str, str]] = []  # (English, Chinese)
    if w.kv_heads is None:
        assumptions.append(("kv_heads not given: assumed equal to heads (multi-head attention)",
                            "未指定 kv_heads：按等于 heads 计（多头注意力）"))
    if w.intermediate_size is None:
        assumptions.append(("intermediate_size not given: assumed 4 x hidden_size with a two-matrix MLP",
                            "未指定 intermediate_size：按 4 × hidden_size、两个矩阵的 MLP 计"))
    mlp = w.mlp or ("standard" if w.intermediate_size is None else "gated")
    if w.mlp is None and w.intermediate_size is not None:
        assumptions.append(("mlp not given: assumed gated (SwiGLU, three matrices) since intermediate_size was given",
                            "未指定 mlp：既然给出了 intermediate_size，按门控 MLP（SwiGLU，三个矩阵）计"))
    return {
        "model": "custom", "params": w.params, "active_params": w.params, "layers": w.layers,
        "hidden_size": w.hidden_size, "heads": w.heads, "kv_heads": kv_heads, "head_dim": w.hidden_size // w.heads,
        "vocab_size": w.vocab_size, "intermediate_size": w.intermediate_size or 4 * w.hidden_size,
        "mlp": mlp, "tied_embeddings": False, "experts": 1, "experts_per_token": 1,
        "assumptions": assumptions, **GQA,
    }


def _check_custom_params(w: Workload, kv_heads: int) -> None:
    """The stated parameter count must be about what the architecture holds."""
    assert w.params is not None and w.layers and w.hidden_size and w.heads and w.vocab_size
    shape = Model.model_construct(
        layers=w.layers, hidden_size=w.hidden_size, heads=w.heads, kv_heads=kv_heads, head_dim=w.hidden_size // w.heads,
        intermediate_size=w.intermediate_size or 4 * w.hidden_size, vocab_size=w.vocab_size,
        mlp=w.mlp or ("standard" if w.intermediate_size is None else "gated"), norm="rmsnorm", tied_embeddings=False,
        qkv_bias=False, linear_bias=False, position_embeddings="rope", moe=None)
    derived, _ = count_parameters(shape)
    if not derived / CUSTOM_PARAMS_TOLERANCE <= w.params <= derived * CUSTOM_PARAMS_TOLERANCE:
        raise WorkloadError("params", message("params_mismatch", params=w.params, tolerance=CUSTOM_PARAMS_TOLERANCE,
                                              derived=derived))


Declared = tuple[dict[str, Any], str]  # a config.json's contents and how errors name it


def _load(path: Path, shown: str, name: str | None = None) -> tuple[Model, str, Declared]:
    """A config.json's model, how errors name it, and the file's contents (for its quantization_config)."""
    config, shown = read_config(path, shown)
    return model_from_config(config, shown, name=name), shown, (config, shown)


def _model(kb: KnowledgeBase, ref: str) -> tuple[Model, str | None, Declared | None]:
    """The model a workload names, the config file it was read from (None for the catalog) and that file's
    contents (None for the catalog): a catalog id in any case, a config.json or its folder, a catalog model's
    Hugging Face repository (offline), or hf:ORG/NAME (downloaded)."""
    if ref.startswith("hf:"):
        from ..knowledge.hub import download_config  # huggingface_hub is optional: imported only when asked for

        repo = ref.removeprefix("hf:")
        model, _, declared = _load(download_config(repo), ref, name=repo)
        return model, ref, declared
    model_id = catalog_id(ref, kb.models)
    if model_id is not None:
        model = kb.models[model_id]
        if model.status == "deprecated":
            instead = message("use_instead", model=model.superseded_by) if model.superseded_by else ""
            raise WorkloadError("model", message("model_deprecated", model=model_id, instead=instead))
        return model, None, None
    if len(ref) > MAX_REF:
        raise WorkloadError("model", message("model_ref_too_long", limit=MAX_REF, length=len(ref)))
    path = _expanded(ref)
    if _exists(path):  # a file or folder here wins, as it does for transformers' from_pretrained
        model, _, declared = _load(path, ref)
        return model, ref, declared
    repos = {m.hf_repo.lower(): m for m in kb.models.values() if m.hf_repo and m.status != "deprecated"}
    if ref.lower() in repos:
        return repos[ref.lower()], None, None
    if REPO_ID.match(ref) and not ref.endswith(".json"):
        near = near_ids(ref, [m.hf_repo for m in repos.values() if m.hf_repo], limit=3)
        hint = message("did_you_mean", ids=[f"{r} ({repos[r.lower()].id})" for r in near]) if near else ""
        raise WorkloadError("model", message("not_a_repository", ref=ref, hint=hint))
    if "/" in ref or "\\" in ref or ref.endswith(".json"):
        model, _, declared = _load(path, ref)
        return model, ref, declared
    raise WorkloadError("model", message("unknown_model", ref=ref, hint=near_hint(ref, _listed(kb.models))))


def _listed(table: dict[str, Any]) -> list[str]:
    """The ids of a catalog table that are in the catalog (deprecated entries have left it)."""
    return [entry_id for entry_id, entry in table.items() if entry.status != "deprecated"]


def _expanded(ref: str) -> Path:
    """The path a reference names, with ~ expanded; '~name' of no user here is the name as written."""
    try:
        return Path(ref).expanduser()
    except RuntimeError:  # pathlib's "Could not determine home directory"
        return Path(ref)


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name the file system cannot hold is no config file
        return False


def _from_model(model: Model, config: str | None) -> dict[str, Any]:
    moe, mla = model.moe, model.mla
    return {
        "model": model.id if config is None else model.name, "params": model.params,
        "active_params": model.active_params or model.params, "layers": model.layers,
        "hidden_size": model.hidden_size, "heads": model.heads, "kv_heads": model.kv_heads,
        "head_dim": model.head_dim, "vocab_size": model.vocab_size, "intermediate_size": model.intermediate_size,
        "mlp": model.mlp, "tied_embeddings": model.tied_embeddings, "experts": moe.experts if moe else 1,
        "experts_per_token": moe.experts_per_token if moe else 1,
        # one routed expert's MLP over the layers that have experts (DeepSeek's first layers are dense)
        "expert_params": (model.layers - moe.dense_layers) * (3 if model.mlp == "gated" else 2) * model.hidden_size
        * (moe.expert_intermediate_size or model.intermediate_size) if moe else 0,
        "moe_layers": model.layers - moe.dense_layers if moe else 0,
        "assumptions": [], "config_file": config, "attention": "mla" if mla else "gqa",
        "kv_lora_rank": mla.kv_lora_rank if mla else 0, "qk_rope_head_dim": mla.qk_rope_head_dim if mla else 0,
        "sliding_window": model.sliding_window or 0, "sliding_layers": model.sliding_window_layers,
        "context_length": model.context_length,
    }


def _adapters_modelled(model: Model) -> bool:
    """req.adapters sizes q/k/v/o and one MLP width in every layer: not MLA's compressions, nor
    shared experts, dense first layers or experts narrower than the dense MLP."""
    moe = model.moe
    return model.mla is None and (moe is None or (not moe.shared_experts and not moe.dense_layers
                                                   and moe.expert_intermediate_size is None))


def _precision(w: Workload, quantized: Quantized | None) -> tuple[str, tuple[str, str] | None]:
    """The weights' precision, and the assumption the answer states about it: a checkpoint's quantization_config
    sets it for serving unless the ask gives precision; training sizes the ask's precision (the weights loaded
    dequantized, as fine-tuning stacks load them) and says so."""
    if quantized is None:
        return w.precision, None
    declared = f"config.json declares {quantized.format} (quantization_config quant_method {quantized.method})"
    declared_zh = f"config.json 声明的是 {quantized.format_zh or quantized.format}（quantization_config 的 quant_method 为 " \
                  f"{quantized.method}）"
    asked = "precision" in w.model_fields_set
    if w.task == "inference" and not asked:
        return quantized.precision, (f"precision not given: {quantized.precision}, as {declared}; give precision "
                                     "to size another",
                                     f"未指定 precision：{declared_zh}，按 {quantized.precision} 估算；"
                                     "要按其他精度估算，请给出 precision")
    if w.precision == quantized.precision:
        return w.precision, (f"{declared}: precision {w.precision}, as asked",
                             f"{declared_zh}：精度 {w.precision}，与所问一致")
    how, how_zh = ("as asked", "所问") if asked else ("the default for training", "训练默认")
    training = w.task != "inference"
    return w.precision, (f"{declared}, precision {quantized.precision}; sized at precision {w.precision} ({how})"
                         + (", the weights loaded dequantized for training" if training else ""),
                         f"{declared_zh}，精度 {quantized.precision}；按{how_zh}的精度 {w.precision} 估算"
                         + ("，训练时权重反量化后加载" if training else ""))


def resolve(kb: KnowledgeBase, w: Workload) -> tuple[ResolvedWorkload, dict[str, Any]]:
    arch = _architecture(kb, w)
    quantized = arch.pop("checkpoint", None)
    precision, stated = _precision(w, quantized)
    if stated:
        arch["assumptions"] = [*arch["assumptions"], stated]
    training = w.task in TRAINING_TASKS
    # ids in any case name the catalog's (lowercase) ids
    gpus = ([catalog_id(g, kb.gpus) or g for g in w.gpus] if w.gpus
            else sorted(g for g, gpu in kb.gpus.items() if gpu.status != "deprecated"))
    for i, gpu_id in enumerate(gpus):
        if gpu_id not in kb.gpus:
            raise WorkloadError(f"gpus.{i}", message("unknown_gpu", gpu=gpu_id, hint=near_hint(gpu_id, _listed(kb.gpus))))
    systems = tuple(_systems(kb, w.systems)) if w.systems else ()
    if systems:
        held = {kb.systems[s].gpu for s in systems}
        gpus = [g for g in gpus if g in held] if w.gpus else sorted(held)
        if not gpus:
            raise WorkloadError("systems", message("systems_hold_none", gpus=", ".join(w.gpus or [])))
    if len(set(gpus)) != len(gpus):  # a list of types to compare, not of cards: a repeat usually means a count
        twice = next(i for i, gpu_id in enumerate(gpus) if gpu_id in gpus[:i])
        times = gpus.count(gpus[twice])
        raise WorkloadError(f"gpus.{twice}", message("gpu_listed_twice", gpu=gpus[twice], times=times))
    if w.pipeline_parallel and w.pipeline_parallel > arch["layers"]:
        raise WorkloadError("pipeline_parallel", message("stages_need_layers", stages=w.pipeline_parallel,
                                                         layers=arch["layers"]))
    # Megatron-Core may count the embedding and the loss as a layer each when it splits the model into
    # chunks (account_for_embedding_in_pipeline_split, account_for_loss_in_pipeline_split), which is how
    # Llama 3.1 405B's 126 layers run as 8 stages x 8 chunks
    chunks = (w.virtual_pipeline_stages or 0) * (w.pipeline_parallel or 1)
    if chunks and arch["layers"] % chunks and (arch["layers"] + 2) % chunks:
        raise WorkloadError("virtual_pipeline_stages", message("chunks_need_layers", layers=arch["layers"],
                                                               stages=w.pipeline_parallel,
                                                               chunks=w.virtual_pipeline_stages))
    if w.task in ("lora", "qlora") and w.lora_rank > arch["hidden_size"]:
        raise WorkloadError("lora_rank", message("rank_over_width", rank=w.lora_rank, hidden_size=arch["hidden_size"]))
    if w.tensor_parallel and arch["heads"] % w.tensor_parallel:
        raise WorkloadError("tensor_parallel", message("tp_heads", tp=w.tensor_parallel, heads=arch["heads"]))
    if w.expert_parallel and (arch["experts"] < 2 or arch["experts"] % w.expert_parallel):
        raise WorkloadError("expert_parallel", message("ep_experts", ep=w.expert_parallel, experts=arch["experts"])
                            if arch["experts"] > 1 else message("ep_dense"))
    dtype = kb.dtypes[precision]
    optimizer = (w.optimizer or "adamw") if training else None
    if training and dtype.training is None:
        raise WorkloadError("precision", message("not_training_precision", precision=precision))
    seq_len = w.seq_len
    if not training and "seq_len" not in w.model_fields_set and (w.prompt_len or w.output_len):
        seq_len = (w.prompt_len or 0) + (w.output_len or 0)  # the context a request reaches
    elif not training and (w.prompt_len or 0) + (w.output_len or 0) > w.seq_len:
        raise WorkloadError("seq_len", message("seq_shorter", seq_len=w.seq_len))
    given = [name for name in ("seq_len", "prompt_len", "output_len") if name in w.model_fields_set]
    if not training and given and 0 < arch.get("context_length", 0) < seq_len:
        # serving engines refuse a context beyond the model's (vLLM's _get_and_verify_max_len: "may lead
        # to incorrect model outputs"); training past it is context extension, and stays allowed
        raise WorkloadError(given[0], message("context_too_long", seq_len=seq_len, model=arch["model"],
                                              context=arch["context_length"]))
    framework, note = _framework(kb, w)
    if note:
        arch = {**arch, "assumptions": [*arch["assumptions"], note]}
    deadline_days, assumptions = w.deadline_days, list(arch["assumptions"])
    if deadline_days is None and w.task == "pretrain" and w.tokens:
        # nobody plans a pre-training run that takes years: size it to the horizon published runs take
        deadline_days = kb.policy(HORIZON) / 86400
        assumptions.append((f"deadline_days not given: pre-training of {w.tokens:,} tokens sized to finish within "
                            f"{deadline_days:g} days, as published runs do (policy {HORIZON}); give deadline_days "
                            "to choose another",
                            f"未指定 deadline_days：{w.tokens:,} 个 token 的预训练按 {deadline_days:g} 天内完成规划，"
                            f"与已发表的训练一致（策略 {HORIZON}）；要换一个期限，请给出 deadline_days"))
    resolved = ResolvedWorkload(
        framework=framework, task=w.task, precision=precision, optimizer=optimizer, seq_len=seq_len,
        micro_batch_size=w.micro_batch_size if training else 0, batch_size=w.batch_size if not training else 0,
        global_batch_size=w.global_batch_size, prompt_len=w.prompt_len, output_len=w.output_len,
        kv_cache_precision=w.kv_cache_precision, ttft_ms=w.ttft_ms, tpot_ms=w.tpot_ms, objective=w.objective,
        **{name: getattr(w, name) for name in LOAD_FIELDS},
        deadline_days=deadline_days, placement=w.placement, region=grid(kb, w.region)[0] if training or w.region else None,
        energy_scope=w.energy_scope, pue=w.pue,
        activation_checkpointing=w.activation_checkpointing, flash_attention=w.flash_attention,
        flash_attention_version=w.flash_attention_version,
        lora_rank=w.lora_rank if w.task in ("lora", "qlora") else None,
        gpu_count=w.gpu_count, gpus=list(gpus), systems=systems, tokens=w.tokens, zero_stage=w.zero_stage,
        tensor_parallel=w.tensor_parallel, pipeline_parallel=w.pipeline_parallel, offload=w.offload,
        expert_parallel=w.expert_parallel, tp_comm_overlap=w.tp_comm_overlap,
        master_weights=w.master_weights, optimizer_in_backward=w.optimizer_in_backward,
        virtual_pipeline_stages=w.virtual_pipeline_stages, context_parallel=w.context_parallel,
        checkpoint_precision=quantized.precision if quantized else None,
        **{**arch, "assumptions": tuple(en for en, _ in assumptions),
           "assumptions_zh": tuple(zh for _, zh in assumptions)},
    )
    return resolved, workload_fact(kb, resolved)


def _systems(kb: KnowledgeBase, ids: list[str]) -> list[str]:
    """The catalog ids of the systems a workload names, each known and named once."""
    found = []
    for i, given in enumerate(ids):
        sid = catalog_id(given, kb.systems) or given
        if sid not in kb.systems:
            raise WorkloadError(f"systems.{i}", message("unknown_system", system=sid,
                                                        hint=near_hint(sid, _listed(kb.systems))))
        if sid in found:
            raise WorkloadError(f"systems.{i}", message("system_listed_twice", system=sid))
        found.append(sid)
    return found


def default_framework(kb: KnowledgeBase, task: str) -> str:
    """The framework kb/frameworks names the default for a task (exactly one; lint checks it)."""
    chosen = [fid for fid, f in sorted(kb.frameworks.items()) if task in f.default_for and f.status != "deprecated"]
    if len(chosen) != 1:
        raise KBDefectError(message("framework_defaults", count=len(chosen), task=task, chosen=str(chosen)))
    return chosen[0]


def _framework(kb: KnowledgeBase, w: Workload) -> tuple[str, tuple[str, str] | None]:
    """The workload's framework, and the note the answer prints when it is the task's default."""
    if not kb.frameworks:  # a knowledge base from before kb/frameworks (validate --base): its rules read none
        return w.framework or "", None
    if w.framework is None:
        fid = default_framework(kb, w.task)
        f = kb.frameworks[fid]
        return fid, (f"framework not given: {fid} ({f.name}), the default for {w.task}: {' '.join(f.default_reason.split())}",
                     f"未指定框架：{term('zh', w.task)}默认用 {fid}，按它估算。{' '.join(f.default_reason_zh.split())}")
    framework = kb.frameworks.get(w.framework)
    if framework is None or framework.status == "deprecated":
        raise WorkloadError("framework", message("unknown_framework", framework=w.framework,
                                                 hint=near_hint(w.framework, kb.frameworks)))
    if w.task not in framework.tasks:
        runs = [fid for fid, f in sorted(kb.frameworks.items()) if w.task in f.tasks]
        raise WorkloadError("framework", message("framework_task", framework=w.framework, task=w.task, runs=runs))
    return w.framework, None


def workload_fact(kb: KnowledgeBase, w: ResolvedWorkload) -> dict[str, Any]:
    dtype = kb.dtypes[w.precision]
    training = w.task in TRAINING_TASKS
    t = dtype.training
    optimizer = kb.optimizers[w.optimizer] if w.optimizer else None
    # pure 16-bit training (no fp32 master copy): torch.optim makes the states in the parameters' dtype
    pure16 = not w.master_weights and t is not None and t.master_bytes > 0
    state = 0.0 if optimizer is None else (
        optimizer.state_bytes_16bit if pure16 and optimizer.state_bytes_16bit is not None else optimizer.state_bytes)
    if w.task == "inference":
        weight_bytes = dtype.bytes
    elif w.task == "qlora":
        weight_bytes = kb.dtypes[QLORA_BASE].bytes
    else:
        weight_bytes = t.weight_bytes if t else dtype.bytes
    ckpt = "auto" if w.activation_checkpointing is None else ("on" if w.activation_checkpointing else "off")
    embedding_params = w.vocab_size * w.hidden_size * (1 if w.tied_embeddings else 2)
    # weight-only quantization (QLoRA's NF4, GPTQ/AWQ int4, LLM.int8) leaves the embeddings and the
    # output layer in 16 bit (bitsandbytes and transformers skip them)
    embedding_weight_bytes = 2.0 if (w.task == "qlora" or w.precision in QUANTIZED) else weight_bytes
    framework = kb.frameworks.get(w.framework or "")
    defaults: list[str] = []  # the terms this workload reads that its framework gives no source for

    def term(name: str, used: bool = True, named: bool | None = None) -> FrameworkTerm | None:
        """The framework's value for a term this workload reads (None where unread or unstated); an unstated one
        is named among the defaults where `named` (default: `used`) says the answer depends on it."""
        value = getattr(framework, name) if framework and used else None
        if (used if named is None else named) and framework and value is None:
            defaults.append(name)
        return value

    # a QLoRA stack may upcast what it leaves unquantized (PEFT's prepare_model_for_kbit_training: fp32)
    if unquantized := term("qlora_unquantized_param_bytes", w.task == "qlora"):
        embedding_weight_bytes = unquantized.value
    serving = w.task == "inference"
    # a serving engine's own quantized format (llama.cpp's Q4_0: 18 bytes a block of 32 weights)
    if own_bits := term(f"{w.precision}_weight_bits", serving and w.precision in QUANTIZED):
        weight_bytes = own_bits.value / 8
    prompt_len = w.prompt_len or max(1, w.seq_len - (w.output_len or 0))
    # decode reads the KV cache of the context reached so far: on average the prompt plus half the output
    decode_context = prompt_len + w.output_len / 2 if w.output_len else w.seq_len
    loss = term("loss_logit_bytes", training)
    # a framework that offloads checkpointed layer inputs to host memory keeps only a few on the GPU
    on_gpu = term("checkpoint_layers_on_gpu", training and w.activation_checkpointing is not False)
    # fp32 weights keep the residual stream in fp32 (the embedding's dtype): autocast over fp32 master weights,
    # or plain fp32 training
    fp32_residual = training and (w.precision == "fp32" or (w.task in ("pretrain", "full_finetune")
                                                             and w.master_weights is not False))
    extra = term("layer_activation_bytes_fp32_residual" if fp32_residual else "layer_activation_bytes", training)
    # sharded data parallelism: the buckets ZeRO-1/2 reduce and gather through, and what ZeRO-3 keeps gathered.
    # Any training plan the planner tries may shard, so both are read; an unstated one is named among the defaults
    # only where the workload itself asks for several GPUs or a ZeRO stage
    sharded = ((w.zero_stage or 0) >= 1 or (w.gpu_count or 1) > 1) and w.zero_stage != 0
    buckets = term("comm_buffer_bytes", training, sharded and w.zero_stage in (None, 1, 2))
    live = term("zero3_live_params", training, sharded and w.zero_stage in (None, 3))
    gathered = kb.policy(GATHERED) if GATHERED in kb.policies else 0.0
    # a serving engine's KV pool: a share of what the model leaves (TensorRT-LLM) or of the whole card (vLLM)
    free = term("kv_cache_free_memory_fraction", serving, named=False)
    whole = term("kv_cache_memory_fraction", serving and free is None)
    # serving: the engine's own achieved decode bandwidth where its published tables give one, else the policy's;
    # per-layer launches only for an eager engine (unset: the step is replayed as one graph, not a default)
    bandwidth = term("decode_bandwidth_utilisation", serving)
    launch = term("layer_launch_s", serving, named=False)
    host = term("step_host_s", serving, named=False)
    per_sequence = term("step_host_per_sequence_s", serving, named=False)
    return {
        "framework": w.framework, "loss_logit_bytes": loss.value if loss else 0.0,
        "framework_defaults": ", ".join(defaults) or "none",
        "layer_activation_bytes": extra.value if extra else 0.0,
        "checkpoint_layers_on_gpu": min(on_gpu.value, w.layers) if on_gpu else w.layers,
        # a limit on gathered parameters, in layers' worth of them (DeepSpeed releases a layer once the limit is hit)
        "gathered_layers": min(w.layers, live.value * w.layers / w.params) if live else gathered,
        "comm_buffer_bytes": buckets.value if buckets else 0.0,
        "kv_cache_memory_fraction": whole.value if whole else 0.0,
        "kv_cache_free_memory_fraction": free.value if free else 0.0,
        "decode_bandwidth_utilisation": bandwidth.value if bandwidth else kb.policy(BANDWIDTH),
        "decode_bandwidth_from": (f"fitted for {w.framework}, kb/frameworks" if bandwidth
                                  else f"policy {BANDWIDTH}; {w.framework or 'the framework'} states none"),
        "decode_bandwidth_from_zh": (f"按 {w.framework} 自己发布的数据拟合，见 kb/frameworks" if bandwidth
                                     else f"策略 {BANDWIDTH}；{w.framework or '该框架'} 没有给出这个值"),
        "layer_launch_s": launch.value if launch else 0.0,
        "step_host_s": host.value if host else 0.0,
        "step_host_per_sequence_s": per_sequence.value if per_sequence else 0.0,
        "model": w.model, "task": w.task, "precision": w.precision, "optimizer": w.optimizer or "",
        "training": training, "params": w.params, "active_params": w.active_params, "layers": w.layers,
        "hidden_size": w.hidden_size, "heads": w.heads, "kv_heads": w.kv_heads, "head_dim": w.head_dim,
        "intermediate_size": w.intermediate_size, "vocab_size": w.vocab_size,
        "mlp_matrices": 3 if w.mlp == "gated" else 2, "experts": w.experts, "experts_per_token": w.experts_per_token,
        "seq_len": w.seq_len, "micro_batch_size": w.micro_batch_size, "batch_size": w.batch_size,
        "global_batch_size": w.global_batch_size or 0, "prompt_len": prompt_len, "output_len": w.output_len or 0,
        "decode_context": decode_context,
        "embedding_params": embedding_params, "embedding_weight_bytes": embedding_weight_bytes,
        "expert_params": w.expert_params, "moe_layers": w.moe_layers, "expert_parallel": w.expert_parallel or 1,
        "tp_comm_overlap": w.tp_comm_overlap, "placement": w.placement,
        "master_weights": w.master_weights, "optimizer_in_backward": w.optimizer_in_backward,
        "virtual_pipeline_stages": w.virtual_pipeline_stages or 1, "context_parallel": w.context_parallel or 1,
        "lora_rank": w.lora_rank or 0, "tokens": w.tokens or 0, "weight_bytes": weight_bytes,
        "grad_bytes": t.grad_bytes if (t and training) else 0.0,
        "master_bytes": t.master_bytes if (t and training and not pure16) else 0.0,
        "optimizer_state_bytes": state, "adapter_weight_bytes": t.weight_bytes if t else dtype.bytes,
        "kv_bytes": KV_BYTES.get(w.kv_cache_precision or ("fp32" if w.precision == "fp32" else "bf16"), 2.0),
        "attention": w.attention, "kv_lora_rank": w.kv_lora_rank, "qk_rope_head_dim": w.qk_rope_head_dim,
        "sliding_window": w.sliding_window, "sliding_layers": w.sliding_layers, "context_length": w.context_length,
        "activation_checkpointing": ckpt, "flash_attention": w.flash_attention,
        "flash_attention_version": w.flash_attention_version,
        "gpu_count": w.gpu_count or 0, "dp_hint": min(w.gpu_count or 8, 8),
        "ttft_ms": w.ttft_ms or 0, "tpot_ms": w.tpot_ms or 0, "objective": w.objective,
        "kv_cache_precision": w.kv_cache_precision or "",
        "rollout_batch": w.rollout_batch or 0, "samples_per_prompt": w.samples_per_prompt or 0,
        "response_len": w.response_len or 0,
        **_grid_fields(kb, w),
        # what energy_kwh counts (rec.energy.training), and the PUE asked for (0: the policy datacenter-pue)
        "energy_scope": w.energy_scope, "pue": w.pue or 0.0,
    }


def _grid_fields(kb: KnowledgeBase, w: ResolvedWorkload) -> dict[str, Any]:
    """The grid a training run draws on (gpukb.estimate.energy): its region, policy and gCO₂ per kWh."""
    if w.region is None:
        return {"region": "", "grid_policy": "", "grid_intensity": 0.0}
    region, pid, intensity = grid(kb, w.region)
    return {"region": region, "grid_policy": pid, "grid_intensity": intensity}


# policy_fact's result per knowledge base, which it depends on alone (making it was 0.7% of a single-GPU ask)
_POLICY_FACTS: WeakKeyDictionary[KnowledgeBase, dict[str, Any]] = WeakKeyDictionary()


def policy_fact(kb: KnowledgeBase) -> dict[str, Any]:
    """The fields of the policy fact; the same dict for the same knowledge base (never change it)."""
    if kb not in _POLICY_FACTS:
        missing = [pid for pid in (*POLICY_IDS.values(), *GPU_POLICIES.values(), CONSUMER_COLLECTIVES)
                   if pid not in kb.policies]
        if missing:
            raise KBDefectError(message("policies_missing", missing=missing))
        _POLICY_FACTS[kb] = {name: kb.policy(pid) for name, pid in POLICY_IDS.items()}
    return _POLICY_FACTS[kb]


def gpu_policy(kb: KnowledgeBase, default_id: str, architecture: str, gpu: str = "") -> str:
    """The id of the policy for this GPU: one listing the GPU itself, else one listing its architecture (and no
    GPUs: a policy that names its chips speaks for those alone), else the default."""
    found = [(pid, p) for pid, p in kb.policies.items() if pid.startswith(default_id) and p.status != "deprecated"]
    return (next((pid for pid, p in found if gpu in p.gpus), None)
            or next((pid for pid, p in found if architecture in p.architectures and not p.gpus), None)
            or default_id)


# gpu_fact's results per knowledge base: they depend on the catalog and the arguments alone, and
# making them was a twentieth of an ask. Callers copy them into facts (Collector.new_fact).
_GPU_FACTS: WeakKeyDictionary[KnowledgeBase, dict[tuple[str, str, str | None], dict[str, Any]]] = (
    WeakKeyDictionary())


def gpu_fact(kb: KnowledgeBase, gpu: Gpu, precision: str, kv_cache_precision: str | None = None,
             systems: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of a GPU's fact, on the system it is planned on (of `systems`, when the workload names
    some); the same dict for the same arguments (never change it)."""
    known = _GPU_FACTS.setdefault(kb, {})
    key = (gpu.id, precision, kv_cache_precision, systems)
    if key not in known:
        known[key] = {**_gpu_fact(kb, gpu, precision, kv_cache_precision),
                      **system_fields(kb, gpu, reference_system(kb, gpu.id, systems))}
    return known[key]


def system_fields(kb: KnowledgeBase, gpu: Gpu, system: System | None) -> dict[str, Any]:
    """What the node around the GPU gives a plan: its size, the network between nodes (per node and direction),
    the host memory each GPU's share of it, and whether its GPUs reach each other directly. A GPU no system holds
    keeps the policies' standard node: NODE_SIZE GPUs on the node-network-bandwidth policy's network."""
    if system is None:
        return {"system": "", "gpus_per_node": NODE_SIZE, "scales_out": True,
                "host_memory_per_gpu": kb.policy(POLICY_IDS["host_memory_per_gpu"])}
    n = gpu.devices
    fields: dict[str, Any] = {
        "system": system.id, "gpus_per_node": system.gpus_per_node * n,
        "scales_out": system.network_bandwidth is not None,
        "node_network_bandwidth": system.network_bandwidth or 0.0, "node_network_bandwidth_policy": "",
        "host_memory_per_gpu": system.host_memory / (system.gpus_per_node * n)}
    if system.gpus_per_node > 1 and not system.peer_to_peer:  # collectives pass through host memory
        fields["peer_bandwidth"] = min(kb.interconnects[gpu.pcie].bandwidth, kb.policy(CONSUMER_COLLECTIVES))
    return fields


def _rate(gpu: Gpu, order: tuple[str, ...]) -> float:
    """The first of the datasheet's throughputs in `order` that the GPU has, else 0."""
    return next((getattr(gpu, f) for f in order if getattr(gpu, f)), None) or 0.0


def _gpu_fact(kb: KnowledgeBase, gpu: Gpu, precision: str, kv_cache_precision: str | None) -> dict[str, Any]:
    # the matrix multiplies run at the precision's rate, training or serving (FP8 training casts the linear
    # layers' inputs; attention, norms and communication stay in 16 bit: the rules keep their cost unchanged)
    # 0 when the vendor publishes no throughput for this precision: estimates then do not fire
    # A multi-die package (gpu.devices > 1) is planned as its devices, each with its share of the package.
    n = gpu.devices
    flops = _rate(gpu, FLOPS_ORDER[precision]) / n
    pcie = kb.interconnects[gpu.pcie].bandwidth
    cloud = gpu.cloud_price  # the lowest dated cloud on-demand price, 0 where none is known
    kv_dtype = kb.dtypes.get(kv_cache_precision) if kv_cache_precision else None
    kv_archs = kv_dtype.kv_cache_architectures if kv_dtype else None
    consumer = gpu.segment == "consumer"
    return {
        "gpu": gpu.id, "name": gpu.name, "vendor": gpu.vendor, "form_factor": gpu.form_factor,
        "memory_bytes": gpu.memory_bytes / n, "memory_bandwidth": gpu.memory_bandwidth / n, "flops": flops,
        "bf16_flops": (gpu.bf16_flops or 0.0) / n, "fp8_flops": (gpu.fp8_flops or 0.0) / n,
        # the 16-bit rate the utilisation policies were measured against
        "reference_flops": _rate(gpu, FLOPS_ORDER["bf16"]) / n,
        "has_bf16": gpu.bf16_flops is not None, "has_fp8": gpu.fp8_flops is not None,
        "architecture": gpu.architecture, "kv_cache_supported": kv_archs is None or gpu.architecture in kv_archs,
        "scale_up_bandwidth": (gpu.scale_up_bandwidth or 0.0) / n,
        "scale_up_domain": gpu.scale_up_domain * n, "pcie_bandwidth": pcie, "tdp": gpu.tdp / n,
        "devices": n,
        # GPU to GPU over PCIe: consumer cards have no peer-to-peer, so collectives go through host memory
        # at the measured rate (policy consumer-collective-bandwidth), never above the card's own link
        "peer_bandwidth": min(pcie, kb.policy(CONSUMER_COLLECTIVES)) if consumer else pcie,
        "liquid_only": gpu.cooling == ["liquid"], "air_cooled": bool({"passive", "active"} & set(gpu.cooling)),
        "consumer": consumer, "segment": gpu.segment, "price_usd": gpu.price.usd / n if gpu.price else 0.0,
        "usd_per_gpu_hour": cloud.usd_per_gpu_hour / n if cloud else 0.0, "price_source": cloud.source if cloud else "",
        "price_as_of": cloud.as_of.isoformat() if cloud else "", "price_instance": cloud.instance if cloud else "",
        **{name: kb.policy(gpu_policy(kb, pid, gpu.architecture, gpu.id)) for name, pid in GPU_POLICIES.items()},
        **{f"{name}_policy": gpu_policy(kb, pid, gpu.architecture, gpu.id) for name, pid in GPU_POLICIES.items()},
    }
