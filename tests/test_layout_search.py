"""Model-parallel layouts searched over pipeline depths, and deadline sizing that counts whole groups and tightens
toward what the deadline needs (gpukb.estimate.planner, .pipeline, .deadline)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import gpukb
from gpukb.estimate.deadline import sized_for_deadline
from gpukb.estimate.planner import Laid, Sized, _layouts, deeper_depths, pipeline_depths

DAY = 86400.0
PRETRAIN_405B = {"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T"}


def _plan_step(option: Any) -> Any:
    return next(t for t in option.trace if t.rule.startswith("planner.fewest-gpus@"))


def test_pipeline_depths_divide_the_layers() -> None:
    """Megatron splits the layers evenly over the stages: Llama 3.1 405B's 126 layers take 1, 2, 3, 6, 7, 9, ... stages,
    never 4, 8 or 16; the model-parallel menu with a floor of 5 stages offers only depths of 6 and up."""
    assert pipeline_depths(126) == (1, 2, 3, 6, 7, 9, 14, 18, 21, 42, 63, 126)
    assert deeper_depths(126, 2, 3) == (3, 6, 7) and deeper_depths(126, 63, 3) == (126,)
    menu = _layouts(96, None, None, None, None, None, 8, ("none",), None, 96, 5)
    assert menu and {layout.pp for layout in menu} == {6, 8, 12, 16, 24, 32, 48, 96}
    assert all(layout.tp == 8 and layout.zero_stage <= 1 for layout in menu)


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
    assert s.tensor_parallel == 8 and s.pipeline_parallel > 2 and 126 % s.pipeline_parallel == 0
    (shallow,) = kb.ask({**PRETRAIN_405B, "gpus": ["b200-sxm-180gb"], "gpu_count": option.count, "placement": "all",
                         "tensor_parallel": 8, "pipeline_parallel": 2, "zero_stage": 1}).options
    assert shallow.count == option.count and option.time_to_train_s < shallow.time_to_train_s
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
    assert option.strategy.pipeline_parallel > 1 and 96 % option.strategy.pipeline_parallel == 0


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
