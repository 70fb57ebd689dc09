"""RL post-training (grpo, ppo, dpo): the workload fields, memory per role, the step's phases and the CLI."""

from __future__ import annotations

import dataclasses
import json

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.answer.workload import ResolvedWorkload
from gpukb.cli import app
from gpukb.core.errors import WorkloadError

GRPO = {"model": "qwen2.5-7b", "task": "grpo", "rollout_batch": 64, "samples_per_prompt": 8, "prompt_len": 512,
        "response_len": 2048, "gpus": ["h100-sxm-80gb"]}
PPO = {"model": "llama-3.1-70b", "task": "ppo", "rollout_batch": 512, "prompt_len": 1024, "response_len": 1024,
       "gpus": ["h100-sxm-80gb"]}
DPO = {"model": "llama-3-8b", "task": "dpo", "rollout_batch": 64, "prompt_len": 512, "response_len": 512,
       "gpus": ["h100-sxm-80gb"]}


@pytest.mark.parametrize(("change", "field"), [
    ({"rollout_batch": None}, "rollout_batch"),
    ({"samples_per_prompt": None}, "samples_per_prompt"),
    ({"critic_model": "llama-3-8b"}, "critic_model"),
    ({"seq_len": 4096}, "seq_len"),
    ({"batch_size": 4}, "batch_size"),
    ({"reward_precision": "bf16"}, "reward_precision"),
    ({"micro_batch_size": 3}, "micro_batch_size"),
    ({"global_batch_size": 96}, "global_batch_size"),  # 512 sequences make no whole number of updates of 96
    ({"global_batch_size": 1024}, "global_batch_size"),
    ({"global_batch_size": 128, "micro_batch_size": 256}, "global_batch_size"),
    ({"objective": "cost"}, "objective"),
])
def test_bad_rl_workloads_name_the_field(change: dict, field: str) -> None:
    w = {k: v for k, v in {**GRPO, **change}.items() if v is not None}
    with pytest.raises(WorkloadError) as err:
        gpukb.ask(w)
    assert err.value.field == field


def test_an_rl_ask_missing_several_fields_names_them_all_at_once() -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({"model": "qwen2.5-7b", "task": "grpo"})
    assert err.value.field == "rollout_batch"
    assert "as are prompt_len, response_len, samples_per_prompt" in str(err.value)
    with pytest.raises(WorkloadError) as err:  # one missing: named alone
        gpukb.ask({k: v for k, v in PPO.items() if k != "response_len"})
    assert err.value.field == "response_len" and "as are" not in str(err.value)
    with pytest.raises(WorkloadError) as err:  # a price per step is shown, never ranked by
        gpukb.ask({**GRPO, "objective": "cost"})
    assert "usd_per_step" in str(err.value)


def test_rl_fields_belong_to_rl_tasks() -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({"model": "llama-3-8b", "task": "full_finetune", "rollout_batch": 8})
    assert err.value.field == "rollout_batch"
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**DPO, "samples_per_prompt": 4})
    assert err.value.field == "samples_per_prompt"
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({"model": "llama-3-8b", "task": "inference", "rollout_tensor_parallel": 2})
    assert err.value.field == "rollout_tensor_parallel" and "only for RL" in str(err.value)


def test_grpo_answers_memory_per_role_and_phases() -> None:
    answer = gpukb.ask(GRPO)
    best = answer.best
    assert best is not None and best.rl is not None
    rl = best.rl
    # no reward model, no critic; only an engine sharing the trainer's GPUs sleeps and wakes
    assert set(rl.phases) == {"generation", "reference", "training", "sync", "offload"} | (
        {"switch"} if rl.placement == "colocated" else set())
    assert set(rl.memory_by_role) == {"policy", "reference", "rollout"}
    assert rl.step_time_s == pytest.approx(sum(rl.phases.values()))
    assert rl.bound == max(rl.phases, key=rl.phases.get)
    assert best.per_gpu_bytes <= best.usable_bytes
    # the tokens of a step (prompts and responses) over its time
    assert best.tokens_per_s == pytest.approx(64 * 8 * (512 + 2048) / rl.step_time_s)
    assert answer.workload.task == "grpo" and answer.workload.samples_per_prompt == 8
    assert any("long tail" in a for a in answer.workload.assumptions)
    rules = {s.rule.split("@")[0] for s in best.trace}
    assert {"planner.rl-placement", "rec.rl.step-time", "req.memory.full-training", "rec.throughput.decode"} <= rules


def test_colocated_frees_the_kv_cache_before_the_optimizer_runs() -> None:
    rl = gpukb.ask({**GRPO, "rl_placement": "colocated"}).best
    assert rl is not None and rl.rl is not None and rl.rl.placement == "colocated" and rl.rl.rollout_gpus == 0
    roles = rl.rl.memory_by_role
    # the phases take turns: a GPU never holds every role's transients at once
    assert rl.per_gpu_bytes < sum(roles.values())
    assert rl.per_gpu_bytes >= max(roles.values())


def test_split_puts_the_rollout_engine_on_its_own_gpus() -> None:
    best = gpukb.ask({**GRPO, "rl_placement": "split"}).best
    assert best is not None and best.rl is not None and best.rl.placement == "split"
    assert best.rl.rollout_gpus > 0 and best.count == best.rl.trainer_gpus + best.rl.rollout_gpus


def test_planner_chooses_the_placement_and_says_which() -> None:
    answer = gpukb.ask(GRPO)
    step = next(s for s in answer.best.trace if s.rule.startswith("planner.rl-placement"))
    assert "Placement chosen" in step.sentence and answer.best.rl.placement in ("colocated", "split")


def test_longer_responses_take_longer_to_generate() -> None:
    short = gpukb.ask({**GRPO, "rl_placement": "colocated", "gpu_count": 8}).best
    long = gpukb.ask({**GRPO, "rl_placement": "colocated", "gpu_count": 8, "response_len": 4096}).best
    assert long.rl.phases["generation"] > short.rl.phases["generation"]
    assert long.rl.memory_by_role["rollout"] > short.rl.memory_by_role["rollout"]


def test_ppo_trains_a_critic_and_scores_with_a_reward_model() -> None:
    answer = gpukb.ask({**PPO, "reward_model": "llama-3-8b"})
    best = answer.best
    assert best is not None and best.rl is not None
    assert set(best.rl.memory_by_role) == {"policy", "critic", "reference", "reward", "rollout"}
    assert {"critic", "reward"} <= set(best.rl.phases)
    assert best.count > 8  # 70B policy and critic with their optimizer states: more than one node
    assert answer.workload.reward_model == "llama-3-8b"


def test_dpo_generates_nothing() -> None:
    best = gpukb.ask(DPO).best
    assert best is not None and best.rl is not None
    assert set(best.rl.phases) == {"reference", "training", "offload"}  # the frozen reference moved on and off
    assert set(best.rl.memory_by_role) == {"policy", "reference"}


def test_generation_bound_step_gets_remedies() -> None:
    answer = gpukb.ask({**PPO, "rl_placement": "split"})
    assert answer.best.rl.bound == "generation"
    assert any(f.kind == "memory_bandwidth" and f.rule.split("@")[0] == "bottleneck.rl.bounding-phase"
               for f in answer.findings)
    ids = {r.id for r in answer.remedies}
    assert {"rl-async-rollouts", "rl-shorter-responses", "rl-rollout-gpus"} <= ids
    asynchronous = next(r for r in answer.remedies if r.id == "rl-async-rollouts")
    assert "→" in asynchronous.effect


def test_nothing_fits_within_gpu_count_is_rejected() -> None:
    answer = gpukb.ask({**PPO, "gpu_count": 8})
    assert not answer.options and answer.rejected[0].gpu == "h100-sxm-80gb"
    assert answer.rejected[0].deciding_finding is not None


def test_json_carries_rl_only_for_rl_tasks() -> None:
    data = json.loads(gpukb.ask(GRPO).model_dump_json())
    assert {"step_time_s", "phases", "memory_by_role"} <= set(data["options"][0]["rl"])
    other = json.loads(gpukb.ask({"model": "llama-3-8b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]}).model_dump_json())
    assert "rl" not in other["options"][0] and "rollout_batch" not in other["workload"]


def test_cli_asks_an_rl_job() -> None:
    args = ["ask", "--task", "grpo", "--model", "qwen2.5-7b", "--rollout-batch", "64", "--samples-per-prompt", "8",
            "--prompt-len", "512", "--response-len", "2048", "--gpu", "h100-sxm-80gb"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "s/step" in result.output and "gen/train/other" in result.output
    result = CliRunner().invoke(app, [*args, "--json"])
    assert json.loads(result.output)["options"][0]["rl"]["placement"] in ("colocated", "split")


def test_trained_roles_default_to_fsdp_and_say_so() -> None:
    answer = gpukb.ask(GRPO)
    assert answer.workload.framework == "fsdp"
    assert any(a.startswith("framework not given: fsdp") and "grpo" in a for a in answer.workload.assumptions)


def test_a_role_model_error_names_the_rl_field() -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**PPO, "critic_model": "no-such-model"})
    assert err.value.field == "critic_model" and "critic" in str(err.value)


def test_a_gpu_type_a_role_cannot_use_is_rejected_with_that_roles_finding() -> None:
    answer = gpukb.ask({**GRPO, "precision": "fp8", "gpus": ["h100-sxm-80gb", "a100-sxm-80gb"]})
    assert [o.gpu for o in answer.options] == ["h100-sxm-80gb"]
    (a100,) = answer.rejected
    assert a100.gpu == "a100-sxm-80gb" and a100.deciding_finding is not None
    assert a100.deciding_finding.kind == "precision"


def test_training_time_is_the_training_rules_on_the_trainer_layout() -> None:
    best = gpukb.ask({**GRPO, "rl_placement": "colocated", "gpu_count": 8}).best
    pinned = gpukb.ask({"model": "qwen2.5-7b", "task": "full_finetune", "framework": "fsdp", "seq_len": 2560,
                        "global_batch_size": 512, "gpu_count": best.rl.trainer_gpus, "placement": "all",
                        "zero_stage": best.strategy.zero_stage,
                        "activation_checkpointing": best.strategy.activation_checkpointing,
                        "gpus": ["h100-sxm-80gb"]}).best
    # the policy's update and its old log-probs' forward pass (2·N·D of 6·N·D, of 8·N·D when checkpointing)
    forward = 2 / (8 if best.strategy.activation_checkpointing else 6)
    assert best.rl.phases["training"] == pytest.approx(512 * 2560 / pinned.tokens_per_s * (1 + forward))
    # the reference's log-probs are the same engine's forward pass over the same tokens, the same size of model
    assert best.rl.phases["reference"] == pytest.approx(512 * 2560 / pinned.tokens_per_s * forward)


def test_colocated_engines_generate_in_waves_when_the_batch_does_not_fit() -> None:
    # 1,024 sequences of 5,120 tokens: 755 GB of KV cache, more than 8 H100s hold beside the models
    w = {"model": "qwen3-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8, "prompt_len": 1024,
         "response_len": 4096, "gpus": ["h100-sxm-80gb"], "gpu_count": 8, "placement": "all",
         "rl_placement": "colocated"}
    answer = gpukb.ask(w)
    best = answer.best
    assert best is not None and best.count == 8 and best.per_gpu_bytes <= best.usable_bytes
    step = next(s for s in best.trace if s.rule.startswith("planner.rl-placement"))
    values = {v["name"]: v["value"] for v in step.values}
    assert values["waves"] >= 2 and values["engine_batch"] * values["waves"] >= 1024 // 8
    assert values["rollout_bytes"] < 755e9 / 8


def test_placement_all_uses_exactly_gpu_count() -> None:
    best = gpukb.ask({**GRPO, "gpu_count": 16, "placement": "all", "rl_placement": "colocated"}).best
    assert best.count == 16 and best.rl.trainer_gpus == 16


def test_shorter_average_responses_train_fewer_tokens_but_generation_waits_for_the_longest() -> None:
    capped = gpukb.ask({**GRPO, "rl_placement": "colocated", "gpu_count": 8}).best
    short = gpukb.ask({**GRPO, "rl_placement": "colocated", "gpu_count": 8, "mean_response_len": 512}).best
    assert short.rl.phases["training"] < capped.rl.phases["training"] * (512 + 512) / (512 + 2048) * 1.01
    # the longest response still decodes to the cap: no faster than one sequence alone
    alone = gpukb.ask({"model": "qwen2.5-7b", "task": "inference", "batch_size": 1, "prompt_len": 512,
                       "output_len": 2048, "tensor_parallel": 1, "gpus": ["h100-sxm-80gb"]}).best
    assert short.rl.phases["generation"] >= 2048 / alone.tokens_per_s * 0.99
    # but the batch thins as responses end: far less than every response decoding to the cap
    assert short.rl.phases["generation"] < capped.rl.phases["generation"] * 0.9
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**GRPO, "mean_response_len": 4096})
    assert err.value.field == "mean_response_len"


def test_a_framework_that_does_not_run_the_rl_task_is_refused() -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**GRPO, "framework": "unsloth"})
    assert err.value.field == "framework" and "grpo" in str(err.value)


# an 8-GPU node, 2,048-token responses averaging 1,024, verl's shape of GRPO
NODE = {"model": "llama-3.1-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8, "prompt_len": 512,
        "response_len": 2048, "mean_response_len": 1024, "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
        "placement": "all", "rl_placement": "colocated"}


def test_generation_share_on_one_node_lies_in_the_published_range() -> None:
    rl = gpukb.ask(NODE).best.rl
    # verl's colocated synchronous DAPO of a 7B on 16 H20 spends 30% (Megatron) and 43% (FSDP2) of a step
    # generating (docs/advance/one_step_off.md); verl's DAPO 32B about 70%, OpenRLHF 80% (its README)
    assert 0.30 <= rl.phases["generation"] / rl.step_time_s <= 0.80


def test_a_longer_cap_generates_longer_at_the_same_mean() -> None:
    base = gpukb.ask(NODE).best.rl
    longer = gpukb.ask({**NODE, "response_len": 4096}).best.rl
    # the tail runs on to the cap one token step at a time; the tokens trained are the same
    assert longer.phases["generation"] > base.phases["generation"] * 1.2
    assert longer.phases["training"] == pytest.approx(base.phases["training"], rel=0.15)


def test_colocated_pays_sleep_wake_and_reload_split_pays_the_transfer() -> None:
    colocated = gpukb.ask(NODE).best.rl
    split = gpukb.ask({**NODE, "rl_placement": "split", "gpu_count": 16}).best.rl
    kb = gpukb.load_kb()
    assert colocated.phases["switch"] == pytest.approx(kb.policy("rl-engine-switch-time"))
    # the reload: the 16-bit weights (8.03B parameters) into each tp-1 engine, no faster than a published refit
    assert colocated.phases["sync"] >= 2 * 8.03e9 / kb.policy("rl-weight-load-rate") * 0.99
    assert "switch" not in split.phases and split.phases["sync"] > 0
    # the frozen reference comes onto the GPUs for its pass and goes back, every step
    assert colocated.phases["offload"] > 0 and split.phases["offload"] > 0


def test_rl_steps_are_deterministic() -> None:
    first, second = gpukb.ask(NODE).best.rl, gpukb.ask(dict(NODE)).best.rl
    assert first.phases == second.phases and first.step_time_s == second.step_time_s


def test_a_stated_rollout_tensor_parallel_size_sizes_the_engines() -> None:
    one = gpukb.ask({**NODE, "rollout_tensor_parallel": 1})
    two = gpukb.ask({**NODE, "rollout_tensor_parallel": 2})
    assert two.workload.rollout_tensor_parallel == 2
    step = next(s for s in two.best.trace if s.rule.startswith("planner.rl-placement"))
    assert "4 rollout engine(s) of tp 2" in step.sentence
    # each engine GPU loads half the weights, and every engine decodes twice the share at twice the bandwidth
    assert two.best.rl.phases["sync"] == pytest.approx(one.best.rl.phases["sync"] / 2)
    assert two.best.rl.phases["generation"] != pytest.approx(one.best.rl.phases["generation"], rel=0.01)


@pytest.mark.parametrize(("change", "why"), [
    ({"rollout_tensor_parallel": 3}, "does not divide the 28 attention heads"),
    ({"rollout_tensor_parallel": 3, "rl_placement": "split"}, "does not divide the 28 attention heads"),
])
def test_a_rollout_tensor_parallel_size_must_divide_the_heads(change: dict, why: str) -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**GRPO, **change})
    assert err.value.field == "rollout_tensor_parallel" and why in str(err.value)


def test_dpo_has_no_rollout_engine_to_size() -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**DPO, "rollout_tensor_parallel": 2})
    assert err.value.field == "rollout_tensor_parallel"


def test_a_stated_rollout_engine_wider_than_a_node_takes_whole_engines() -> None:
    w = {"model": "llama-3.1-70b", "task": "grpo", "rollout_batch": 64, "samples_per_prompt": 8, "prompt_len": 512,
         "response_len": 1024, "gpus": ["h100-sxm-80gb"], "placement": "all", "rl_placement": "colocated",
         "rollout_tensor_parallel": 16}
    best = gpukb.ask({**w, "gpu_count": 32}).best
    assert best.count == 32 and "2 rollout engine(s) of tp 16" in next(
        s.sentence for s in best.trace if s.rule.startswith("planner.rl-placement"))
    # 24 GPUs hold one engine of 16 and half of another: the count is what fails, and the answer names 32
    rejected = gpukb.ask({**w, "gpu_count": 24}).rejected[0]
    (finding,) = [f for f in rejected.findings if f.severity == "error"]
    assert finding.rule.startswith("bottleneck.rl.too-few-gpus") and "needs 32 GPUs, more than the 24" in finding.message


# Llama 3.1 8B on 16 H100s in a pipeline of two stages, the NeMo RL recipe's shape: short responses pack into
# 4,096-token micro-batches
PACKED = {"model": "llama-3.1-8b", "task": "grpo", "framework": "megatron", "rollout_batch": 64,
          "samples_per_prompt": 32, "prompt_len": 128, "response_len": 3968, "mean_response_len": 932,
          "rl_placement": "colocated", "rollout_tensor_parallel": 1, "gpus": ["h100-sxm-80gb"], "gpu_count": 16,
          "placement": "all", "tensor_parallel": 1, "pipeline_parallel": 2, "activation_checkpointing": True}



def test_the_trainer_runs_the_packed_micro_batches_of_each_update() -> None:
    from gpukb.estimate import rl
    w = gpukb.Workload(**PACKED)
    # 2,048 sequences of 1,060 tokens on average pack into about 2,048 x 1,060 / 4,096 = 530 micro-batches of
    # 4,096 tokens, dealt to 8 data-parallel ranks: about 67 each in one update; 512 sequences an update: about
    # 17 in each of four, every one padded to the capacity in a pipeline, holding its own tokens without one
    assert rl.updates(w) == 1 and rl.updates(w.model_copy(update={"global_batch_size": 512})) == 4
    per_rank, held = rl.packing(w, 8, 2)
    assert 66 <= per_rank <= 70 and held == 4096
    per_rank, held = rl.packing(w.model_copy(update={"global_batch_size": 512}), 8, 1)
    assert 16 <= per_rank <= 18 and 4000 < held <= 4096
    assert per_rank * 8 * held >= 512 * (128 + 932) * 0.999  # never fewer tokens than the update's
    one = gpukb.ask(PACKED).best
    four = gpukb.ask({**PACKED, "global_batch_size": 512}).best
    assert one.rl.trainer_gpus == four.rl.trainer_gpus == 16 and one.strategy.data_parallel == 8
    # four updates pay the two-stage pipeline's fill and drain (and the optimizer step) four times
    assert four.rl.phases["training"] > one.rl.phases["training"] * 1.03
    assert four.rl.phases["generation"] == pytest.approx(one.rl.phases["generation"])


def test_training_time_is_the_training_rules_over_the_packed_micro_batches() -> None:
    from gpukb.estimate import rl
    flat = {**PACKED, "pipeline_parallel": 1, "global_batch_size": 512}
    best = gpukb.ask(flat).best
    dp = best.strategy.data_parallel
    per_rank, held = rl.packing(gpukb.Workload(**flat), dp, 1)
    pinned = gpukb.ask({"model": "llama-3.1-8b", "task": "full_finetune", "framework": "megatron", "seq_len": 4096,
                        "global_batch_size": per_rank * dp, "gpu_count": 16, "placement": "all",
                        "zero_stage": best.strategy.zero_stage, "tensor_parallel": 1, "pipeline_parallel": 1,
                        "activation_checkpointing": True, "gpus": ["h100-sxm-80gb"]}).best
    # four updates of the slowest rank's micro-batches on every rank, at the rate of that global batch, and the
    # old log-probs' forward pass (2 of 8·N·D with checkpointing)
    assert best.rl.phases["training"] == pytest.approx(4 * per_rank * dp * held / pinned.tokens_per_s * (1 + 2 / 8))
    # a pipeline pads each micro-batch to 4,096 tokens and idles while it fills and drains: slower on the same GPUs
    assert gpukb.ask({**flat, "pipeline_parallel": 2}).best.rl.phases["training"] > best.rl.phases["training"]


def test_rollout_engines_wait_for_their_host_each_decode_step() -> None:
    kb = gpukb.load_kb()
    step_host, per_seq = kb.policy("rl-rollout-host-per-step"), kb.policy("rl-rollout-host-per-sequence")
    base = kb.ask(NODE).best
    # without the fixed part, the same step's generation is shorter by that part at each of its token steps: at least
    # one per token of the step's longest response (its expected length, near the 2,048-token cap), at most one per
    # token its engine decodes (1,024 sequences over 8 one-GPU engines, 128 each, of 1,024 tokens on average)
    policies = {**kb.policies, "rl-rollout-host-per-step": kb.policies["rl-rollout-host-per-step"].model_copy(
        update={"value": 0.0})}
    without = dataclasses.replace(kb, tables={**kb.tables, "policies": policies}).ask(NODE).best
    paid = base.rl.phases["generation"] - without.rl.phases["generation"]
    assert 1900 * step_host <= paid <= 128 * 1024 * step_host
    assert base.rl.phases["training"] == without.rl.phases["training"]
    # the trace says what each step waits for, in both languages, and names the policies the phase reads
    step = next(s for s in base.trace if s.rule.startswith("planner.rl-placement"))
    assert f"waits {step_host * 1e3:.2f} ms for its host, plus {per_seq * 1e6:.1f} µs a running sequence" in step.sentence
    assert f"还要等主机 {step_host * 1e3:.2f} ms" in step.sentence_zh
    expr = next(v["expr"] for v in step.values if v["name"] == "generation_s")
    assert "rl-rollout-host-per-step" in expr and "rl-rollout-host-per-sequence" in expr


def _resolved(model: str) -> ResolvedWorkload:
    return gpukb.ask({"model": model, "task": "full_finetune", "gpus": ["h100-sxm-80gb"]}).workload


def test_the_last_pipeline_stage_carries_the_output_layer() -> None:
    from gpukb.estimate import rl
    llama = _resolved("llama-3.1-8b")  # 8,030,261,248 parameters, 32 layers of width 4,096, 128,256 tokens, untied
    assert rl.last_stage(llama, 1, 4096) == 1.0
    out = 2 * 128_256 * 4096  # the output layer's FLOP per token; the untied input embedding's parameters compute none
    layers = 2 * 8_030_261_248 - 2 * out + 2 * 32 * 4096 * 4096
    assert rl.last_stage(llama, 2, 4096) == pytest.approx((layers + 2 * out) / (layers + out))
    assert rl.last_stage(llama, 4, 4096) > rl.last_stage(llama, 2, 4096) > 1.06
    # 32 layers on 3 stages: the trainer's step already runs at the fullest stage's 11 layers (11 x 3 / 32 of the
    # mean, the interconnect rule's imbalance); only the output layer on the last stage is added, not the imbalance again
    fullest = layers * 33 / 32
    assert rl.last_stage(llama, 3, 4096) == pytest.approx((fullest + 3 * out) / (layers + out) / (33 / 32))
    # longer sequences put more attention into every layer, so the output layer weighs less
    assert rl.last_stage(llama, 2, 32_768) < rl.last_stage(llama, 2, 4096)
    # a tied output layer is the embedding's parameters, counted once
    tied = _resolved("llama-3.2-1b")
    assert tied.tied_embeddings
    tied_out = 2 * tied.vocab_size * tied.hidden_size
    tied_layers = 2 * tied.active_params - tied_out + 2 * tied.layers * 4096 * tied.hidden_size
    assert rl.last_stage(tied, 2, 4096) == pytest.approx((tied_layers + 2 * tied_out) / (tied_layers + tied_out))


def test_a_megatron_pipeline_waits_for_its_last_stage() -> None:
    from gpukb.estimate import rl
    best = gpukb.ask({**PACKED, "global_batch_size": 512}).best
    dp = best.strategy.data_parallel
    per_rank, held = rl.packing(gpukb.Workload(**PACKED, global_batch_size=512), dp, 2)
    pinned = gpukb.ask({"model": "llama-3.1-8b", "task": "full_finetune", "framework": "megatron", "seq_len": 4096,
                        "global_batch_size": per_rank * dp, "gpu_count": 16, "placement": "all",
                        "zero_stage": best.strategy.zero_stage, "tensor_parallel": 1, "pipeline_parallel": 2,
                        "activation_checkpointing": True, "gpus": ["h100-sxm-80gb"]}).best
    stage = rl.last_stage(_resolved("llama-3.1-8b"), 2, 4096)
    update = 4 * per_rank * dp * held / pinned.tokens_per_s
    # the updates and the old log-probs' pass, then the reference's, each at the pace of the stage with the output layer
    assert best.rl.phases["training"] == pytest.approx(update * (1 + 2 / 8) * stage)
    assert best.rl.phases["reference"] == pytest.approx(update * 2 / 8 * stage)


def test_a_megatron_trainer_moves_its_states_to_the_host_every_step() -> None:
    from gpukb.estimate.resolve import gpu_fact
    kb = gpukb.load_kb()
    link = gpu_fact(kb, kb.gpus["h100-sxm-80gb"], "bf16")["pcie_bandwidth"]
    best = gpukb.ask(PACKED).best
    weights = 2 * 8_030_261_248  # the 16-bit weights; each GPU holds its pipeline stage's half, whole over dp
    shard, engine, optimizer = weights / 2, weights / 1, best.memory.optimizer
    moves = {m: kb.policy(m) for m in ("rl-trainer-weight-moves", "rl-reference-swap-moves", "rl-optimizer-moves",
                                       "rl-engine-weight-moves")}
    assert moves == {"rl-trainer-weight-moves": 2, "rl-reference-swap-moves": 3, "rl-optimizer-moves": 2,
                     "rl-engine-weight-moves": 2}
    # the weights out during generation and back, the reference swapped in and the policy back, the optimizer states
    # out and back, the engine's weights out at its level-1 sleep and back at its wake: over PCIe, pinned copies
    moved = 2 * shard + (2 * shard + shard) + 2 * optimizer + 2 * engine
    assert best.rl.phases["offload"] == pytest.approx(moved / link, rel=1e-3)
    # a split engine does not sleep, and the trainer keeps its weights: the reference swap and the optimizer remain
    split = gpukb.ask({k: v for k, v in {**PACKED, "rl_placement": "split"}.items()
                       if k not in ("gpu_count", "placement")}).best
    assert split.rl.placement == "split"
    assert split.rl.phases["offload"] == pytest.approx((3 * shard + 2 * split.memory.optimizer) / link, rel=1e-3)
    # FSDP (verl) offloads only the frozen reference's shard, in and out: far less
    fsdp = gpukb.ask({k: v for k, v in PACKED.items() if k not in ("framework", "pipeline_parallel")}).best
    assert fsdp.rl.phases["offload"] < best.rl.phases["offload"] / 10
    assert any("NeMo RL's Megatron backend" in a for a in gpukb.ask(PACKED).workload.assumptions)
    fsdp_ask = {k: v for k, v in PACKED.items() if k not in ("framework", "pipeline_parallel")}
    assert not any("NeMo RL's Megatron backend" in a for a in gpukb.ask(fsdp_ask).workload.assumptions)
    step = next(s for s in best.trace if s.rule.startswith("rec.rl.step-time"))
    assert "weights and optimizer states to host memory and back" in step.sentence
    assert "权重与优化器状态换出到主机内存再换回" in step.sentence_zh
