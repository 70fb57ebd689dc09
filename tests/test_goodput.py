"""Goodput at scale: the share of wall-clock a training run trains, from sourced interruption, restart and
checkpoint terms (rec.rank.training), in time to train, GPU-hours, cost and energy."""

from __future__ import annotations

import math

import pytest

DAY = 86400


def _run(kb, count, model="llama-3.1-405b", tokens="15.6T"):
    answer = kb.ask({"model": model, "task": "pretrain", "tokens": tokens, "gpus": ["h100-sxm-80gb"],
                     "gpu_count": count, "placement": "all"})
    (option,) = answer.options
    return option


def test_the_llama_3_405b_run_trains_90_percent_of_its_wall_clock_as_published(kb):
    option = _run(kb, 16384)
    assert option.goodput == pytest.approx(0.90, abs=0.005)  # "higher than 90% effective training time"
    # the loss is in the time, and so in GPU-hours, dollars and energy
    assert option.time_to_train_s == pytest.approx(15.6e12 / option.tokens_per_s / option.goodput, rel=1e-9)
    # the GPUs the plan runs on: whole groups of tp x pp use 16,368 of the 16,384 (the 16 left over are rented idle)
    assert option.count == 16368
    assert option.gpu_hours == pytest.approx(option.count * option.time_to_train_s / 3600, rel=1e-9)
    assert option.cost_usd == pytest.approx(option.usd_per_hour * option.time_to_train_s / 3600, rel=1e-9)
    step = next(s for s in option.trace if s.rule.startswith("rec.rank.training"))
    values = {v["name"]: v["value"] for v in step.values}
    # each loss is in the trace: interruptions (466 in 54 days on 16,384 GPUs), the restart, the checkpoint writes
    assert values["interruption_interval_s"] == pytest.approx(16384 * 54 * DAY / 466 / 16384, rel=1e-3)
    assert values["checkpoint_interval_s"] == pytest.approx(
        math.sqrt(2 * values["checkpoint_s"] * values["interruption_interval_s"]), rel=1e-9)
    assert 1 / ((1 + values["checkpoint_loss"]) * (1 + values["interruption_loss"])) == pytest.approx(option.goodput)
    assert "Goodput 90%" in step.sentence and "interrupted every" in step.sentence


def test_goodput_falls_as_the_cluster_grows_and_a_node_barely_notices(kb):
    goodputs = [_run(kb, n, "llama-2-7b", "1T").goodput for n in (8, 512, 16384)]
    assert goodputs == sorted(goodputs, reverse=True)
    assert goodputs[0] > 0.995 and goodputs[-1] < 0.98


def test_goodput_is_training_only_and_in_the_json(kb):
    serving = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert serving.options[0].goodput is None and "goodput" not in serving.options[0].model_dump()
    tune = kb.ask({"model": "llama-2-7b", "task": "lora", "tokens": "1B", "gpus": ["h100-sxm-80gb"]})
    assert 0.99 < tune.options[0].goodput < 1 and "goodput" in tune.options[0].model_dump()


def test_a_run_with_no_state_to_checkpoint_loses_only_its_interruptions(kb):
    """LoRA with SGD keeps no optimizer state: nothing to checkpoint, so the checkpoint loss is 0 (it divided
    0 by a 0-second interval and failed the whole ask)."""
    answer = kb.ask({"model": "llama-2-7b", "task": "lora", "precision": "fp32", "optimizer": "sgd",
                     "tokens": "1B", "gpus": ["a10-24gb"]})
    (option, *_) = answer.options
    step = next(s for s in option.trace if s.rule.startswith("rec.rank.training"))
    values = {v["name"]: v["value"] for v in step.values}
    assert values["checkpoint_s"] == 0 and values["checkpoint_loss"] == 0
    assert option.goodput == pytest.approx(1 / (1 + values["interruption_loss"]), rel=1e-12)
    assert option.goodput < 1
