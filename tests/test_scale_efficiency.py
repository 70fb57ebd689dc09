"""Efficiency that falls with scale, and what published runs at a scale allow an estimate to claim."""

from __future__ import annotations

import pytest

import gpukb
from gpukb.estimate.validation import workload_of

# the tiers of the published-MFU ceiling: a plan of up to so many GPUs is bounded by the policy named after it
TIERS = (8, 128, 512, 12288, 16384)


def _mfu(kb: gpukb.KnowledgeBase, system: str, count: int) -> float:
    answer = kb.ask({"model": "llama-2-13b", "task": "pretrain", "systems": [system], "gpu_count": count,
                     "placement": "all", "zero_stage": 3})
    (option,) = answer.options
    assert option.count == count and option.system == system
    assert option.mfu is not None
    return option.mfu


def test_mfu_falls_from_one_node_to_1024_gpus_more_on_a_slow_network(kb: gpukb.KnowledgeBase) -> None:
    # the same A100-80GB nodes with 100 Gb/s (GCP a2-ultragpu-8g) and 1,600 Gb/s (DGX A100) between them
    slow, fast = "gcp-a2-ultragpu-8g", "nvidia-dgx-a100-640gb"
    assert kb.systems[slow].network_bandwidth < kb.systems[fast].network_bandwidth / 10
    one_node = _mfu(kb, slow, 8)
    assert one_node == pytest.approx(_mfu(kb, fast, 8))  # inside a node the network plays no part
    slow_drop, fast_drop = one_node - _mfu(kb, slow, 1024), one_node - _mfu(kb, fast, 1024)
    assert fast_drop >= 0
    assert slow_drop > fast_drop + 0.1


def test_sharded_collectives_wait_longer_as_the_ranks_grow(kb: gpukb.KnowledgeBase) -> None:
    def latency(count: int) -> float:
        answer = kb.ask({"model": "llama-2-7b", "task": "pretrain", "gpus": ["h100-sxm-80gb"], "gpu_count": count,
                         "placement": "all", "zero_stage": 3})
        step = next(s for s in answer.options[0].trace if s.rule.startswith("bottleneck.interconnect.step"))
        return next(v["value"] for v in step.values if v["name"] == "dp_latency_s")

    small, large = latency(64), latency(1024)
    # the ring's steps grow with the ranks: 0.29 ms per collective on 64 GPUs, 4.8 ms on 1,024
    assert large > 10 * small > 0


def test_the_published_ceilings_do_not_rise_with_scale(kb: gpukb.KnowledgeBase) -> None:
    ceilings = [kb.policy(f"published-mfu-{n}-gpus") for n in TIERS]
    assert ceilings == sorted(ceilings, reverse=True)
    assert all(0 < c < 1 for c in ceilings)


def _tier(kb: gpukb.KnowledgeBase, count: int) -> float:
    return kb.policy(f"published-mfu-{next((n for n in TIERS if count <= n), TIERS[-1])}-gpus")


@pytest.mark.parametrize(("model", "gpu", "count"), [
    ("llama-2-7b", "a100-sxm-80gb", 8), ("llama-2-13b", "a100-sxm-80gb", 64), ("llama-3-8b", "a100-sxm-80gb", 240),
    ("llama-2-70b", "h100-sxm-80gb", 1024), ("llama-3-8b", "h100-sxm-80gb", 16384)])
def test_no_option_or_band_claims_more_mfu_than_published_runs_at_its_scale(
        kb: gpukb.KnowledgeBase, model: str, gpu: str, count: int) -> None:
    answer = kb.ask({"model": model, "task": "pretrain", "tokens": "1T", "gpus": [gpu], "gpu_count": count,
                     "placement": "all"})
    (o,) = answer.options
    assert o.mfu is not None and o.mfu_ceiling is not None and o.tokens_per_s is not None
    assert o.mfu_ceiling == _tier(kb, count)
    assert o.mfu <= o.mfu_ceiling + 1e-9
    band = o.bands["mfu"]
    assert band.low is not None and band.high is not None
    assert band.low <= o.mfu <= band.high <= o.mfu_ceiling + 1e-9  # the band holds its estimate, below the ceiling
    speed = o.bands["tokens_per_s"]
    assert speed.low is not None and speed.high is not None
    assert speed.low <= o.tokens_per_s <= speed.high <= o.tokens_per_s * o.mfu_ceiling / o.mfu * (1 + 1e-9)


def test_an_8b_model_on_240_a100s_is_held_below_57_percent(kb: gpukb.KnowledgeBase) -> None:
    # the case the knowledge base used to answer with 57% MFU: no run on 240 or more GPUs has published that much
    answer = kb.ask({"model": "llama-3-8b", "task": "pretrain", "tokens": "1T", "gpus": ["a100-sxm-80gb"],
                     "gpu_count": 240, "placement": "all"})
    (o,) = answer.options
    assert o.mfu == pytest.approx(kb.policy("published-mfu-512-gpus")) and o.mfu < 0.57


@pytest.mark.parametrize("point", ["llama2-70b-pretrain-gpu-hours", "llama31-405b-training-gpu-hours"])
def test_a_published_runs_gpu_hours_lie_in_the_band(kb: gpukb.KnowledgeBase, point: str) -> None:
    m = kb.measurements[point]
    (o,) = kb.ask(workload_of(m, kb)).options
    band = o.bands["time_to_train_s"]
    assert o.gpu_hours is not None and band.low is not None and band.high is not None
    low, high = band.low * o.count / 3600, band.high * o.count / 3600
    assert low <= o.gpu_hours <= high
    assert low <= m.canonical <= high, (low, m.canonical, high)


def test_a_horizon_does_not_grow_a_cluster_into_its_communication_wall(kb: gpukb.KnowledgeBase) -> None:
    # 15T tokens of a 70B model on H100s cannot train in the 30-day horizon with the layout a sharded framework
    # (FSDP) gets (ZeRO-3 data parallelism, its collectives' latency growing with the ranks): the cluster stops where
    # its step still computes 80% of the time (policy scaling-efficiency-floor) and says it misses the horizon
    floor = kb.policy("scaling-efficiency-floor")
    workload = {"model": "llama-3-70b", "task": "pretrain", "tokens": "15T", "gpus": ["h100-sxm-80gb"],
                "framework": "fsdp"}
    (o,) = kb.ask(workload).options
    assert o.efficiency is not None and o.efficiency >= floor
    assert o.meets_deadline is False
    (larger,) = kb.ask({**workload, "gpu_count": 2 * o.count, "placement": "all"}).options
    assert larger.efficiency is not None and larger.efficiency < floor


def test_a_gpu_type_below_the_floor_at_its_smallest_cluster_still_grows_toward_the_deadline(kb):
    """B200s hold Llama 3.1 405B on 40 GPUs, whose flat ZeRO-3 step already computes less than the scaling-efficiency
    floor (its per-step gathers do not shrink with the ranks). That is no communication wall to stop at: the cluster
    grows while it shortens the run. It used to stay on those 40 GPUs, for 23,487 days."""
    answer = kb.ask({"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T", "gpus": ["b200-sxm-180gb"]})
    (option,) = answer.options
    smallest = kb.ask({"model": "llama-3.1-405b", "task": "pretrain", "gpus": ["b200-sxm-180gb"]}).options[0]
    assert smallest.efficiency < kb.policy("scaling-efficiency-floor")
    assert option.count > 100 * smallest.count and option.time_to_train_s < 365 * 86400


def test_a_megatron_run_is_laid_out_model_parallel_where_that_trains_sooner(kb: gpukb.KnowledgeBase) -> None:
    """Megatron lays runs out tensor-parallel in the node and pipelined across nodes (kb/frameworks training_layout):
    both layouts are sized and the rules' estimate decides. Llama 3.1 405B on 15T tokens took 108 days on 16,384
    B200s as a flat ZeRO-3 over 16,384 ranks, slower per GPU than H100s; Meta ran it at tp 8 and pp 16. A 70B on 2T
    tokens keeps ZeRO's layout, which needs fewer GPU-hours there; a pinned layout is planned as pinned."""
    big = {"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T", "gpus": ["b200-sxm-180gb", "h100-sxm-80gb"]}
    answer = kb.ask(big)
    b200, h100 = (next(o for o in answer.options if o.gpu == g) for g in ("b200-sxm-180gb", "h100-sxm-80gb"))
    for o in (b200, h100):
        s = o.strategy
        assert s.tensor_parallel == 8 and s.pipeline_parallel > 1 and s.zero_stage == 1, s
        step = next(t for t in o.trace if t.rule.startswith("planner.fewest-gpus@"))
        assert "Laid out model-parallel" in step.sentence and "按模型并行布局" in step.sentence_zh
    (flat,) = kb.ask({**big, "gpus": ["b200-sxm-180gb"], "framework": "fsdp"}).options
    assert flat.strategy.zero_stage == 3 and flat.time_to_train_s and b200.time_to_train_s
    assert b200.time_to_train_s < flat.time_to_train_s / 2
    assert b200.tokens_per_s / b200.count > h100.tokens_per_s / h100.count  # per GPU, the faster card is faster
    (mid,) = kb.ask({"model": "llama-2-70b", "task": "pretrain", "tokens": "2T", "gpus": ["b200-sxm-180gb"]}).options
    step = next(t for t in mid.trace if t.rule.startswith("planner.fewest-gpus@"))
    assert mid.strategy.zero_stage == 3 and "it beats the model-parallel layout" in step.sentence
    (pinned,) = kb.ask({**big, "gpus": ["h100-sxm-80gb"], "tensor_parallel": 8, "pipeline_parallel": 16}).options
    step = next(t for t in pinned.trace if t.rule.startswith("planner.fewest-gpus@"))
    assert "Laid out" not in step.sentence


def test_the_users_cluster_is_laid_out_the_faster_way(kb: gpukb.KnowledgeBase) -> None:
    """placement 'all' keeps gpu_count; on a model-parallel framework the rules pick its layout, as for a deadline.
    Llama 3.1 405B has 126 layers: a pipeline depth that divides them (6 here) makes groups of 48 GPUs, of which
    16,384 hold 341; the 16 left over stand idle and are still rented."""
    work = {"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T", "gpus": ["b200-sxm-180gb"],
            "gpu_count": 16384, "placement": "all"}
    (o,) = kb.ask(work).options
    (flat,) = kb.ask({**work, "framework": "fsdp"}).options
    s = o.strategy
    group = s.tensor_parallel * s.pipeline_parallel
    assert flat.count == 16384 and flat.strategy.zero_stage == 3 and s.pipeline_parallel > 1
    assert 126 % s.pipeline_parallel == 0 and o.count == s.data_parallel * group and 16384 - group < o.count <= 16384
    assert o.tokens_per_s and flat.tokens_per_s and o.tokens_per_s > 2 * flat.tokens_per_s
    step = next(t for t in o.trace if t.rule.startswith("planner.fewest-gpus@"))
    assert "tokens/s)." in step.sentence and "每秒" in step.sentence_zh
    if o.count < 16384:
        assert f"{16384 - o.count} stand idle (still rented)" in step.sentence
        assert f"{16384 - o.count} 块空闲（仍计入租用）" in step.sentence_zh
    cost = next(t for t in o.trace if t.rule.startswith("rec.cost.training"))
    assert "(16384 GPUs, " in cost.sentence
