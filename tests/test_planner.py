"""The planner's per-GPU memory against hand-computed bytes: sharding of every part, ZeRO stages,
the runtime overhead and the fit boundary.

llama-2-7b: N = 6,738,415,616 parameters, 32 layers, hidden 4096, 32 heads, vocabulary 32,000.
Full fine-tuning in bf16 with AdamW at 4096 tokens, one micro-batch:
weights 2N, gradients 2N, optimizer 12N; activations 32 x 4096 x 4096 x 37.5 + 4 x 4096 x 32,000
(37.5 s·h per layer: Korthikanti et al.'s terms for a SwiGLU MLP of 11,008 and no dropout);
checkpointed 2 x 4096 x 4096 x 32 + 4096 x 4096 x 37.5 + 4 x 4096 x 32,000.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import gpukb
from gpukb.estimate import planner

N = 6_738_415_616
W, G, OPT = 2 * N, 2 * N, 12 * N  # 13,476,831,232 / 13,476,831,232 / 80,860,987,392
# 32 layers of (37.5 + 18.3)·s·h (Korthikanti's count and the hf stack's eager layer with fp32 weights) + hf's
# loss, 12 bytes a logit: 31,530,260,889.6, as the answer rounds it
A = 31_530_260_890
# checkpointed: the layer inputs and the loss's 12-byte logits, which outweigh one rebuilt layer of the hf stack
C = 2 * 4096 * 4096 * 32 + 12 * 4096 * 32_000  # 2,646,605,824
K = 2 * 32 * 32 * 128 * 2 * 4096  # a KV cache of 4096 tokens: 2,147,483,648
OVERHEAD = 2_000_000_000  # kb/policies: runtime-overhead, 2 GB on every GPU
MEMORY = {"weights": W, "gradients": G, "optimizer": OPT, "activations": A, "activations_checkpointed": C,
          "kv_cache": K, "overhead": OVERHEAD}


def test_one_replica_of_llama_2_7b(kb):
    m = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"]}).memory
    assert (m.weights, m.gradients, m.optimizer) == (13_476_831_232, 13_476_831_232, 80_860_987_392)
    assert (m.activations, m.overhead) == (31_530_260_890, 2_000_000_000)
    assert m.total == 16 * N + A + OVERHEAD == 141_344_910_746


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
    # ZeRO-3 also holds two gathered layers' full weights (policy zero3-gathered-layers), split by tp
    "ZeRO-3 over 8: and weights": ((1, 1, 8, 3, False, "none"), (W / 8 + 2 * W / 32, G / 8, OPT / 8, A, K)),
    "ZeRO-3 over 4 with tp 2": ((2, 1, 4, 3, True, "none"), (W / 8 + 2 * W / 32 / 2, G / 8, OPT / 8, C / 2, K / 2)),
    # ZeRO-Offload streams gradients to CPU memory: two layers' worth stay (2N / 32 layers x 2)
    "optimizer offload": ((1, 1, 4, 2, False, "optimizer"), (W, G / 32 * 2, 0, A, K)),
    # ZeRO-Infinity also keeps only two layers' weights resident, over tp 2
    "parameter offload": ((2, 1, 4, 3, False, "optimizer+params"), (W / 32 * 2 / 2, G / 32 * 2 / 2, 0, A / 2, K / 2)),
}


@pytest.mark.parametrize(("split", "expected"), SPLITS.values(), ids=SPLITS.keys())
def test_each_memory_part_is_divided_as_the_strategy_says(split, expected):
    tp, pp, dp, zero_stage, checkpointing, offload = split
    layout = planner.Layout(tp, pp, zero_stage, checkpointing, offload)
    dense = {"layers": 32, "params": N, "experts": 1, "expert_params": 0, "virtual_pipeline_stages": 1, "gathered_layers": 2,
             "comm_buffer_bytes": 0}
    parts = planner.PlanCache().parts_of(layout, dp, {"m": MEMORY, "w": dense})
    assert set(parts) == {*planner.PARTS} == {"weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"}
    got = tuple(parts[p] for p in ("weights", "gradients", "optimizer", "activations", "kv_cache"))
    assert got == pytest.approx(expected, rel=1e-12)
    assert parts["overhead"] == OVERHEAD  # every GPU carries it: no split divides it


@pytest.mark.parametrize(("dp", "zero_stage", "charged"), [(8, 1, True), (8, 2, True), (8, 3, False), (1, 2, True),
                                                         (8, 0, False), (1, 0, False)])
def test_zero_buckets_are_charged_wherever_zero_1_or_2_is_on(dp, zero_stage, charged):
    buckets = 9e9  # DeepSpeed's 5e8-element buckets with overlap_comm (kb/frameworks deepspeed)
    arch = {"layers": 32, "params": N, "experts": 1, "expert_params": 0, "virtual_pipeline_stages": 1,
            "gathered_layers": 2, "comm_buffer_bytes": buckets}
    layout = planner.Layout(1, 1, zero_stage, False, "none")
    cache = planner.PlanCache()
    parts = cache.parts_of(layout, dp, {"m": MEMORY, "w": arch})
    assert parts["overhead"] == OVERHEAD + (buckets if charged else 0)
    # the search's A + B/dp is exact at every dp, buckets included
    a, b = cache.split(layout, {"m": MEMORY, "w": arch}, False)
    for n in (1, 2, 3, 8, 64):
        assert a + b / n == pytest.approx(sum(cache.parts_of(layout, n, {"m": MEMORY, "w": arch}).values()))


def test_deepspeed_states_its_zero_terms_and_others_say_they_use_the_defaults(kb):
    from gpukb.answer.workload import Workload
    from gpukb.estimate import resolve

    def fact(framework: str, **extra):
        return resolve.resolve(kb, Workload(model="llama-3.1-8b", task="full_finetune", framework=framework,
                                            gpu_count=8, **extra))[1]
    ds = fact("deepspeed", zero_stage=3)
    # 1e9 live parameters of 8,030,261,248 over 32 layers: 3.98 layers' worth stay gathered, not the policy's 2
    assert ds["gathered_layers"] == pytest.approx(1e9 * 32 / 8_030_261_248)
    assert "zero3_live_params" not in ds["framework_defaults"]
    assert fact("deepspeed", zero_stage=2)["comm_buffer_bytes"] == 9e9
    # with neither gpu_count nor a ZeRO stage the planner may still pick a sharded plan: the terms are read all the same
    unpinned = resolve.resolve(kb, Workload(model="llama-3.1-8b", task="full_finetune", framework="deepspeed"))[1]
    assert unpinned["comm_buffer_bytes"] == 9e9 and unpinned["gathered_layers"] == ds["gathered_layers"]
    fsdp = fact("fsdp", zero_stage=2)
    assert fsdp["comm_buffer_bytes"] == 0 and "comm_buffer_bytes" in fsdp["framework_defaults"].split(", ")
    assert fact("fsdp", zero_stage=3)["gathered_layers"] == 2
    single = resolve.resolve(kb, Workload(model="llama-3.1-8b", task="lora", framework="torchtune"))[1]
    assert single["framework_defaults"] == "checkpoint_layers_on_gpu, layer_activation_bytes"


# Mixtral 8x7B in bf16 with AdamW: P parameters, E of them in the 8 routed experts (8 x 5,637,144,576), D dense
P_MOE, E_MOE = 46_702_792_704, 8 * 5_637_144_576
D_MOE = P_MOE - E_MOE  # 1,605,636,096
MOE_MEMORY = {**MEMORY, "weights": 2 * P_MOE, "gradients": 2 * P_MOE, "optimizer": 12 * P_MOE}
MOE_ARCH = {"layers": 32, "params": P_MOE, "experts": 8, "expert_params": E_MOE // 8, "virtual_pipeline_stages": 1,
            "gathered_layers": 2, "comm_buffer_bytes": 0}
# (tp, dp, zero_stage, ep) -> per-GPU (weights, gradients, optimizer)
MOE_SPLITS = {
    "ep 8 without ZeRO: each GPU keeps the dense part and 1/8 of the experts":
        ((1, 8, 0, 8), (2 * D_MOE + 2 * E_MOE / 8, 2 * D_MOE + 2 * E_MOE / 8, 12 * D_MOE + 12 * E_MOE / 8)),
    "ep 8 with ZeRO-1 over 16: ZeRO shards the optimizer states over all 16":
        ((1, 16, 1, 8), (2 * D_MOE + 2 * E_MOE / 8, 2 * D_MOE + 2 * E_MOE / 8, 12 * P_MOE / 16)),
    "ep 4 with ZeRO-3 over 8: ZeRO-3 already shards everything, ep changes nothing":
        ((1, 8, 3, 4), (2 * P_MOE / 8 + 2 * 2 * P_MOE / 32, 2 * P_MOE / 8, 12 * P_MOE / 8)),
    "ep 2 with tp 2 over 4": ((2, 4, 0, 2), ((2 * D_MOE + E_MOE) / 2, (2 * D_MOE + E_MOE) / 2, (12 * D_MOE + 6 * E_MOE) / 2)),
    "ep 1 is no expert parallelism": ((1, 8, 0, 1), (2 * P_MOE, 2 * P_MOE, 12 * P_MOE)),
}


@pytest.mark.parametrize(("split", "expected"), MOE_SPLITS.values(), ids=MOE_SPLITS.keys())
def test_expert_parallelism_divides_the_experts_share_zero_does_not_shard(split, expected):
    tp, dp, zero_stage, ep = split
    layout = planner.Layout(tp, 1, zero_stage, False, "none", ep)
    parts = planner.PlanCache().parts_of(layout, dp, {"m": MOE_MEMORY, "w": MOE_ARCH})
    assert (parts["weights"], parts["gradients"], parts["optimizer"]) == pytest.approx(expected, rel=1e-12)


def test_an_expert_parallel_plan_keeps_whole_groups_and_names_them(kb):
    workload = {"model": "mixtral-8x7b", "task": "full_finetune", "expert_parallel": 8, "gpus": ["h100-sxm-80gb"]}
    answer = kb.ask(workload)
    (option,) = answer.options
    s = option.strategy
    assert s.expert_parallel == 8 and s.data_parallel % 8 == 0 and "ep8" in s.tag()
    assert "expert parallel 8" in s.describe() and "专家并行 8" in s.describe("zh")
    assert '"expert_parallel":8' in answer.model_dump_json()  # in the workload and the strategy
    # the experts' all-to-alls are in the step: four per MoE layer per micro-batch, 7/8 of them leave the GPU
    comm = next(st for st in answer.trace if st.rule.startswith("bottleneck.interconnect.step"))
    values = {v["name"]: v["value"] for v in comm.values}
    tokens = 4096 // s.tensor_parallel
    assert values["ep_bytes"] == pytest.approx(4 * 32 * tokens * 4096 * 2 * 2 * 7 / 8 * values["microbatches"], rel=1e-12)
    assert values["ep_time_s"] > 0 and "expert-parallel all-to-alls" in comm.sentence
    dense = kb.ask({"model": "mixtral-8x7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    assert "expert_parallel" not in dense.model_dump_json() and dense.options[0].strategy.expert_parallel == 1


@pytest.mark.parametrize(("workload", "says"), [
    ({"model": "llama-2-7b", "task": "full_finetune", "expert_parallel": 2}, "no routed experts"),
    ({"model": "mixtral-8x7b", "task": "full_finetune", "expert_parallel": 3}, "does not divide the 8 routed experts"),
    ({"model": "mixtral-8x7b", "task": "lora", "expert_parallel": 2}, "only for full training"),
    ({"model": "mixtral-8x7b", "task": "inference", "expert_parallel": 2}, "only for full training"),
    ({"model": "mixtral-8x7b", "task": "full_finetune", "expert_parallel": 2, "offload": "optimizer"}, "offload"),
    ({"model": "mixtral-8x7b", "task": "full_finetune", "expert_parallel": 8, "gpu_count": 4}, "context_parallel = 8"),
])
def test_expert_parallelism_that_cannot_apply_is_an_error_naming_the_field(kb, workload, says):
    with pytest.raises(gpukb.WorkloadError) as caught:
        kb.ask(workload)
    assert says in str(caught.value)
    assert caught.value.field in ("expert_parallel", "gpu_count")


def test_tensor_parallelism_halves_activations_in_an_answer(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h200-sxm-141gb"], "tensor_parallel": 2,
                     "zero_stage": 0, "activation_checkpointing": False, "offload": "none"})
    (option,) = answer.options
    assert (option.count, option.strategy.tensor_parallel) == (2, 2)
    m = option.memory
    assert (m.weights, m.gradients, m.optimizer) == (W // 2, G // 2, OPT // 2)
    assert (m.activations, m.overhead) == (15_765_130_445, OVERHEAD)
    assert option.per_gpu_bytes == (16 * N + A) // 2 + OVERHEAD == 71_672_455_373


# A100 40GB: the driver reports 40,960 MiB; usable = 90% of it + the 2 GB overhead the reserve holds
# = 40,654,705,664. Pinned tp 1, checkpointing, no offload: per GPU = a + b / dp.
USABLE_40GB = 40960 * 2**20 * 0.9 + 2e9
ZERO_ON_A100_40GB = {
    # a = 2N + 2N + C + 2 GB, b = 12N: dp = ceil(b / (usable - a)) = ceil(8.54) = 9, rounded up to 2 nodes of 8
    1: (16, (W, G, OPT / 16), W + G + C + OVERHEAD + OPT / 16),
    # a = 2N + C + 2 GB, b = 14N: ceil(4.11) = 5
    2: (5, (W, G / 5, OPT / 5), W + C + OVERHEAD + (G + OPT) / 5),
    # a = C + 2 GB + two gathered layers (2 x 2N / 32), b = 16N: ceil(3.10) = 4
    3: (4, (W / 4 + 2 * W / 32, G / 4, OPT / 4), C + OVERHEAD + 2 * W / 32 + 16 * N / 4),
}


@pytest.mark.parametrize("zero_stage", [0, 1, 2, 3])
def test_zero_stages_set_the_count_and_the_states_per_gpu(kb, zero_stage):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-40gb"], "tensor_parallel": 1,
                     "zero_stage": zero_stage, "activation_checkpointing": True, "offload": "none"})
    if zero_stage == 0:  # 16N bytes on every GPU whatever the count: nothing fits 36 GB
        (rejected,) = answer.rejected
        assert rejected.per_gpu_bytes == 16 * N + C + OVERHEAD and rejected.usable_bytes == round(USABLE_40GB)
        return
    count, states, per_gpu = ZERO_ON_A100_40GB[zero_stage]
    (option,) = answer.options
    assert (option.count, option.strategy.zero_stage, option.strategy.data_parallel) == (count, zero_stage, count)
    m = option.memory
    assert (m.weights, m.gradients, m.optimizer) == pytest.approx(states, abs=1)  # parts are rounded to bytes
    assert (m.activations, m.overhead) == (C, OVERHEAD)
    assert option.per_gpu_bytes == pytest.approx(per_gpu, abs=1) and option.per_gpu_bytes <= USABLE_40GB


def test_a_plan_fits_exactly_at_usable_memory_and_not_a_byte_above(kb, checkout: Path):
    """Serving llama-2-7b to 7 sequences of 1024 tokens on one GPU needs, per GPU:
    weights 2N + KV 7 x 1024 x 524,288 + activations 7168 x 4096 x 34 + logits 7 x 4 x 32,000 + 2 GB
    = 20,234,067,968 bytes: exactly 90% of 20,260,075,520 plus the 2 GB overhead the reserve holds."""
    assert kb.policies["reserve-fraction"].value == 0.10
    need = W + 7 * 1024 * 524_288 + 7168 * 4096 * 34 + 7 * 4 * 32_000 + OVERHEAD
    assert need == 20_234_067_968 == 20_260_075_520 * (1 - 0.10) + OVERHEAD
    template = yaml.safe_load((checkout / "kb/gpus/l40s-48gb.yaml").read_text(encoding="utf-8"))
    for gpu_id, memory in (("edge-exact", 20_260_075_520), ("edge-short", 20_260_075_519)):
        entry = {**template, "id": gpu_id, "name": gpu_id, "memory": memory, "memory_reported": None,
                 "memory_source": None}
        (checkout / f"kb/gpus/{gpu_id}.yaml").write_text(yaml.safe_dump(entry, sort_keys=False), encoding="utf-8")
    # eager Transformers: no pre-allocated KV cache to queue in, so a batch one byte short does not fit
    answer = gpukb.load_kb(checkout).ask({"model": "llama-2-7b", "task": "inference", "seq_len": 1024, "batch_size": 7,
                                          "gpus": ["edge-exact", "edge-short"], "gpu_count": 1, "framework": "hf"})
    (fits,) = answer.options
    assert (fits.gpu, fits.count, fits.per_gpu_bytes, fits.usable_bytes) == ("edge-exact", 1, need, need)
    (short,) = answer.rejected
    assert short.gpu == "edge-short" and not short.fits
    assert short.usable_bytes < need <= short.usable_bytes + 1  # under one byte short


# Llama 2 70B pre-training on A100s, sized to the 30-day horizon; Llama 2's batch is 4M tokens: 1,024 sequences
# of 4,096 (Touvron et al. 2023, Table 1), one per micro-batch
PRETRAIN_70B = {"model": "llama-2-70b", "task": "pretrain", "tokens": "2T", "gpus": ["a100-sxm-80gb"]}


def _plan_step(answer):
    (step,) = [s for s in answer.trace if s.rule.startswith("planner.fewest-gpus")]
    return step


def test_a_global_batch_caps_data_parallelism_and_tensor_parallelism_reaches_the_count(kb):
    """On a sharded framework (Megatron's model-parallel layouts keep data parallelism under the cap here)."""
    sharded = {**PRETRAIN_70B, "framework": "fsdp"}
    (free,) = kb.ask(sharded).options
    assert free.strategy.data_parallel > 1024  # the horizon's cluster, as data parallelism alone
    (option,) = kb.ask({**sharded, "global_batch_size": 1024}).options
    s = option.strategy
    assert s.data_parallel <= 1024 < option.count and s.tensor_parallel > 1
    assert option.count == s.data_parallel * s.tensor_parallel * s.pipeline_parallel
    step = _plan_step(kb.ask({**sharded, "global_batch_size": 1024}))
    assert "The global batch of 1,024 sequences at micro-batch 1 feeds at most 1,024 data-parallel ranks" \
        in step.sentence
    assert "全局批次 1,024 条序列、微批次 1 最多供给 1,024 个数据并行进程" in step.sentence_zh
    assert "global batch" not in _plan_step(kb.ask(sharded)).sentence
    assert {v["name"]: v["value"] for v in step.values}["dp_max"] == 1024


def test_a_global_batch_that_feeds_every_rank_changes_nothing(kb):
    """Without global_batch_size the plan is as before; a batch larger than the data parallelism leaves it so. (On a
    sharded framework: with megatron a batch also sets the accumulation, which may make its model-parallel layout
    the faster one, a change the batch makes by its size, not by a cap.)"""
    sharded = {**PRETRAIN_70B, "framework": "fsdp"}
    (free,) = kb.ask(sharded).options
    (large,) = kb.ask({**sharded, "global_batch_size": 8 * free.strategy.data_parallel}).options
    assert (large.count, large.strategy) == (free.count, free.strategy)
    assert "global batch" not in _plan_step(kb.ask({**PRETRAIN_70B, "global_batch_size": 4096})).sentence


def test_gpus_placement_all_gives_beyond_what_the_batch_feeds_stand_idle_and_are_paid_for(kb):
    """64 sequences feed 64 ranks; the widest group a sharded framework tries is tp 8 in one node: 512 of 1,024 GPUs
    work. Megatron's pipeline stages keep all of them busy (tp 8, pp 2), which the rules find faster."""
    (piped,) = kb.ask({**PRETRAIN_70B, "gpu_count": 1024, "placement": "all", "global_batch_size": 64}).options
    assert (piped.count, piped.strategy.tensor_parallel, piped.strategy.pipeline_parallel) == (1024, 8, 2)
    workload = {**PRETRAIN_70B, "gpu_count": 1024, "placement": "all", "framework": "fsdp"}
    (option,) = kb.ask({**workload, "global_batch_size": 64}).options
    s = option.strategy
    assert (option.count, s.data_parallel, s.tensor_parallel, s.pipeline_parallel) == (512, 64, 8, 1)
    (whole,) = kb.ask(workload).options  # the same 1,024 GPUs, all working: the same nodes rented
    assert whole.count == 1024 and option.usd_per_hour == whole.usd_per_hour
    answer = kb.ask({**workload, "global_batch_size": 64})
    assert "the batch keeps 512 of the 1024 GPUs gpu_count gives busy, and 512 stand idle" in _plan_step(answer).sentence
    assert "512 块空闲" in _plan_step(answer).sentence_zh
    (cost,) = [st for st in answer.trace if st.rule.startswith("rec.cost.training")]
    assert "(1024 GPUs, 512 idle)" in cost.sentence
    assert "512 x a100-sxm-80gb busy of the 1024 (the global batch of 64 sequences feeds 64" in answer.summary.headline
    assert "gpu_count 给出的 1024 块中其余空闲" in answer.summary.headline_zh
    assert "busy of the" not in kb.ask(workload).summary.headline


def test_a_global_batch_bounds_the_search_at_every_layout():
    """The menu's layouts, least intrusive first, at a count the batch cannot feed with tp 1."""
    menu = planner._layouts(64, None, None, None, False, 3, 8, ("none",))
    assert [layout.tp for layout in menu] == [1, 2, 4, 8]

    def fewest(layout):  # a replica that needs 16 GPUs' worth of sharding
        return -(-16 // layout.tp)

    assert planner._least_intrusive_at(menu, fewest, 2048).layout.tp == 1
    assert (planner._least_intrusive_at(menu, fewest, 2048, 512).layout.tp,
            planner._least_intrusive_at(menu, fewest, 2048, 512).dp) == (4, 512)
    assert planner._least_intrusive_at(menu, fewest, 2048, 100) is None
    most = planner._most_fed(menu, fewest, 2048, 100)
    assert (most.layout.tp, most.dp, most.count) == (8, 100, 800)
    # the fewest GPUs: tp 1 needs 16 ranks, more than 8 sequences feed; tp 2 needs 8
    assert planner._fewest_training(menu, fewest, planner.NO_LIMIT).layout.tp == 1
    capped = planner._fewest_training(menu, fewest, planner.NO_LIMIT, dp_max=8)
    assert (capped.layout.tp, capped.dp, capped.count) == (2, 8, 16)
    assert planner._use_all(capped, 2048, 8).dp == 8 and planner._use_all(capped, 2048).dp == 1024


def test_a_deadline_grows_a_cluster_no_further_than_the_batch_feeds():
    """A run of 1,000 GPU-days at perfect scaling wants 1,000 GPUs for a one-day deadline; the batch feeds 64."""
    from types import SimpleNamespace

    from gpukb.estimate.deadline import sized_for_deadline

    asked: list[int] = []

    def run(sizes):
        count = sizes["x"].count if "x" in sizes else 8
        asked.append(count)
        return SimpleNamespace(options=[SimpleNamespace(gpu="x", count=count, time_to_train_s=1000 * 86400 / count,
                                                        efficiency=None, strategy=SimpleNamespace(data_parallel=count))])

    sized_for_deadline(1, 86400, 100_000, run, {"x": 8})
    assert max(asked) == 1000
    asked.clear()
    sizes_seen = []
    sized_for_deadline(1, 86400, 100_000, lambda sizes: (sizes_seen.append(dict(sizes)), run(sizes))[1], {"x": 8},
                       fed={"x": 64})
    assert max(asked) == 64
    last = sizes_seen[-1]["x"]
    assert last.count == 64 and "The global batch keeps at most 64 GPUs busy" in last.because()
    assert "全局批次最多让 64 块 GPU 工作" in last.because(zh=True)
