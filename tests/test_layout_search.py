"""Model-parallel layouts searched over pipeline depths, and deadline sizing that counts whole groups and tightens
toward what the deadline needs (gpukb.estimate.planner, .pipeline, .deadline)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

import gpukb
from gpukb.estimate.deadline import sized_for_deadline
from gpukb.estimate.planner import Laid, Sized, _layouts, deeper_depths, pipeline_depths, stage_imbalance

DAY = 86400.0
PRETRAIN_405B = {"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T"}


def _plan_step(option: Any) -> Any:
    return next(t for t in option.trace if t.rule.startswith("planner.fewest-gpus@"))


def test_pipeline_depths_need_not_divide_the_layers() -> None:
    """Megatron-Core splits the layers unevenly when told the first and last stages' counts: Llama 3.1 405B's 126
    layers trained on 16 stages. Any depth up to the layers is offered, and a few above a depth are tried."""
    assert tuple(pipeline_depths(126)) == tuple(range(1, 127))
    # the next three that lighten the fullest stage, and the next three even splits: 15 stages hold 9 layers as 14 do
    assert deeper_depths(126, 2, 3) == (3, 4, 5, 6, 7) and deeper_depths(126, 125, 3) == (126,)
    assert deeper_depths(126, 13, 3) == (14, 16, 18, 21, 42) and deeper_depths(126, 12, 2) == (13, 14, 18, 21)
    menu = _layouts(96, None, None, None, None, None, 8, ("none",), None, 96, 5)
    assert menu and {layout.pp for layout in menu} == set(range(5, 97))
    assert all(layout.tp == 8 and layout.zero_stage <= 1 for layout in menu)


def test_the_fullest_stage_sets_the_pace() -> None:
    """ceil(layers / pp) layers on the fullest stage against layers / pp on average: 126 layers over 16 stages run
    at 8 / 7.875 of an even split's time; a depth that divides the layers runs at 1."""
    assert stage_imbalance(126, 16) == pytest.approx(8 / 7.875)
    assert stage_imbalance(126, 6) == stage_imbalance(126, 1) == 1.0
    assert stage_imbalance(126, 100) == pytest.approx(2 / 1.26)


def _pinned_405b(kb: gpukb.KnowledgeBase, pp: int) -> Any:
    return kb.ask({**PRETRAIN_405B, "tokens": "15.6T", "gpus": ["h100-sxm-80gb"], "gpu_count": 16384,
                   "placement": "all", "tensor_parallel": 8, "pipeline_parallel": pp, "zero_stage": 1})


def _values(option: Any, prefix: str) -> dict[str, Any]:
    step = next(t for t in option.trace if t.rule.startswith(prefix))
    return {v["name"]: v["value"] for v in step.values}


def test_an_uneven_pipeline_is_charged_its_fullest_stage(kb: gpukb.KnowledgeBase) -> None:
    """Llama 3.1 405B at tp 8 x pp 16 (as Meta trained it) uses all 16,384 H100s; the step's compute on the fullest
    stage, 8 of the 126 layers, takes 8 / 7.875 of the mean's, shown in the trace, and the stage's memory holds 8
    layers' weights, gradients and optimizer states."""
    answer = _pinned_405b(kb, 16)
    (even,), (uneven,) = _pinned_405b(kb, 6).options, answer.options
    assert uneven.count == 16384 and even.count == 16368
    step = _values(uneven, "bottleneck.interconnect.step")
    assert step["imbalance"] == pytest.approx(8 / 7.875)
    assert step["imbalance_s"] == pytest.approx(step["compute_time_s"] * (8 / 7.875 - 1))
    assert step["efficiency"] == pytest.approx(step["compute_time_s"] / (
        step["compute_time_s"] + step["imbalance_s"] + step["bubble_time_s"] + step["comm_time_s"]))
    assert _values(even, "bottleneck.interconnect.step")["imbalance"] == 1.0
    # 126 layers over 8 x 16 GPUs, the fullest stage holding 8 of them: 8 / 126 of the replica over tp 8 (the
    # optimizer states also over the 128 data-parallel ranks, ZeRO-1)
    assert uneven.memory.weights == pytest.approx(answer.memory.weights / 8 * 8 / 126, rel=1e-6)
    assert uneven.memory.optimizer == pytest.approx(answer.memory.optimizer / 8 * 8 / 126 / 128, rel=1e-6)


def test_a_pinned_cluster_also_tries_the_depth_that_uses_every_gpu(kb: gpukb.KnowledgeBase) -> None:
    """16,384 H100s hold the 405B replica on tp 8 x pp 6 groups, 16,368 of them. Of the deeper depths tried, pp 8
    fills the cluster; the rules' tokens/s (every one of the 16,384 GPUs is rented either way) decide, and the plan
    names the depths it tried."""
    (option,) = kb.ask({**PRETRAIN_405B, "tokens": "15.6T", "gpus": ["h100-sxm-80gb"], "gpu_count": 16384,
                        "placement": "all"}).options
    sentence = _plan_step(option).sentence
    assert "pipeline depths tried (6, 7, 8, 9, 14)" in sentence
    (filled,) = _pinned_405b(kb, 8).options
    assert filled.count == 16384
    assert option.tokens_per_s >= filled.tokens_per_s * (1 - 1e-9)


def _whole_groups(group: int, need: int, fewest: int, exponent: float) -> tuple[Any, list[int | None]]:
    """A run whose plans use whole groups of `group` GPUs (what it is given, rounded down), training in 30 days on
    `need` GPUs and in 30 x (need / n) ** exponent days on n (an exponent above 1: larger clusters run leaner
    layouts, so linear scaling's guess overshoots)."""
    asked: list[int | None] = []

    def run(sizes: dict[str, Sized]) -> Any:
        n = sizes["g"].count // group * group if "g" in sizes else fewest
        asked.append(sizes["g"].count if "g" in sizes else None)
        option = SimpleNamespace(gpu="g", count=n, time_to_train_s=30 * DAY * (need / n) ** exponent, efficiency=0.75,
                                 strategy=SimpleNamespace(data_parallel=n // group))
        return SimpleNamespace(options=[option])

    return run, asked


def test_a_cluster_of_whole_groups_grows_until_it_meets_the_deadline() -> None:
    """400 GPUs would train in time, but a plan runs whole 64-GPU groups: asked for 400 it runs 384 and misses. The
    growth step asks for whole groups, 448. It used to ask for 400 again each round and end on 384, past the
    deadline."""
    run, asked = _whole_groups(64, 400, 64, 0.8)
    keep: dict[str, Sized] = {}
    (option,) = sized_for_deadline(10**12, 30 * DAY, 16384, run, {"g": 8}, 0.0, None, keep).options
    assert option.time_to_train_s <= 30 * DAY and option.count == keep["g"].count == 448
    assert len(asked) == len(set(asked))  # no count asked twice


def test_the_tightening_halves_toward_what_the_deadline_needs() -> None:
    """Linear scaling overshoots to 1,856 GPUs (8 days of a 30-day budget); its guess down, 512, misses. The sizing
    then halves the gap between the largest count that missed and the fewest that met, to 704 GPUs (29.8 days). It
    used to go back to the overshoot, and a 30-day budget was answered with an 8-day cluster."""
    run, _ = _whole_groups(64, 700, 64, 1.4)
    (option,) = sized_for_deadline(10**12, 30 * DAY, 16384, run, {"g": 8}).options
    assert 0.9 * 30 * DAY < option.time_to_train_s <= 30 * DAY
    assert option.count <= 768


def test_a_deeper_pipeline_the_rules_find_faster_is_chosen(kb: gpukb.KnowledgeBase) -> None:
    """Llama 3.1 405B on 15T tokens on B200s: the smallest group that holds the replica on 16,384 of them is tp 8,
    pp 2 (42.7 days); of the depths tried, a deeper one trains sooner on the same cluster, and the plan says which
    it chose and what the next best took."""
    (option,) = kb.ask({**PRETRAIN_405B, "gpus": ["b200-sxm-180gb"]}).options
    s = option.strategy
    assert s.tensor_parallel == 8 and s.pipeline_parallel > 2
    (shallow,) = kb.ask({**PRETRAIN_405B, "gpus": ["b200-sxm-180gb"], "gpu_count": option.count, "placement": "all",
                         "tensor_parallel": 8, "pipeline_parallel": 2, "zero_stage": 1}).options
    # the same rented cluster: whole tp 8 x pp 2 groups use as many of its GPUs as they can
    assert shallow.count <= option.count and option.time_to_train_s < shallow.time_to_train_s
    step = _plan_step(option)
    assert f"at pp={s.pipeline_parallel}, the best of the pipeline depths tried (2, " in step.sentence
    assert "在所试的流水线深度（2、" in step.sentence_zh and f"取 pp={s.pipeline_parallel}" in step.sentence_zh
    assert "megatron-core-transformer-config" in step.sources


def test_a_deadline_cluster_shrinks_toward_what_the_deadline_needs(kb: gpukb.KnowledgeBase) -> None:
    """GPT-3 175B on 300B tokens in the 30-day horizon on Ascend 910B: the model-parallel cluster stopped at 1,376
    GPUs for 22.5 days; it now stops within 10% of the budget and still meets it."""
    (option,) = kb.ask({"model": "gpt3-175b", "task": "pretrain", "tokens": "300B",
                        "gpus": ["ascend-910b-64gb"]}).options
    assert option.meets_deadline and option.time_to_train_s > 27 * DAY
    assert option.strategy.pipeline_parallel > 1


def test_the_plan_names_the_layout_chosen_and_the_nearest_alternative() -> None:
    deeper = Laid("model_parallel", 6, "model_parallel", other_s=40.7 * DAY, other_tp=8, other_pp=3,
                  depths=(2, 3, 6, 7), other_count=16368, other_gpu_hours=16e6)
    assert deeper.because(pp=6) == (
        " Laid out model-parallel (tensor parallelism in the node, pipeline stages across nodes, ZeRO-1) at pp=6, the "
        "best of the pipeline depths tried (2, 3, 6, 7), it beats the next best, tp=8 and pp=3 (16,368 GPUs for 40.7 "
        "days, 16,000,000 GPU-hours).")
    assert deeper.because(zh=True, pp=6) == (
        "按模型并行布局（节点内张量并行、跨节点流水线并行、ZeRO-1），在所试的流水线深度（2、3、6、7）中取 pp=6，"
        "胜过次优的 tp=8、pp=3（16,368 块 GPU 需 40.7 天，共 16,000,000 GPU 时）。")
    sharded = Laid("sharded", 0, "model_parallel", other_rate=1234.0, other_tp=8, other_pp=2, depths=(1, 2))
    assert sharded.because() == (" Laid out as ZeRO's stages over data parallelism, it beats the model-parallel layout "
                                 "(at best tp=8, pp=2 of the pipeline depths 1, 2 tried: 1,234 tokens/s).")
    assert sharded.because(zh=True) == ("按数据并行加 ZeRO 分片布局，胜过模型并行布局（所试流水线深度 1、2 中最好的 "
                                        "tp=8、pp=2，每秒 1,234 个 token）。")
    assert Laid("model_parallel", 6).because(pp=6) == ""  # nothing compared: nothing said
