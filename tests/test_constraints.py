"""Real-world constraints (consumer cards, multi-die packages, peer-to-peer, FP8), remedies and findings
that apply to the plan they describe, and launch lines that say which option they are for."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest

from gpukb.estimate.resolve import gpu_fact

REPO = Path(__file__).resolve().parent.parent
CONSUMER = ["rtx-3080-10gb", "rtx-3090-24gb", "rtx-4080-16gb", "rtx-4090-24gb", "rtx-4090d-24gb", "rtx-5090-32gb"]
HEAVY = [{"model": "llama-65b", "task": "qlora"}, {"model": "llama-2-70b", "task": "inference", "batch_size": 32},
         {"model": "llama-2-70b", "task": "full_finetune"}, {"model": "mixtral-8x7b", "task": "inference"},
         {"model": "llama-2-13b", "task": "full_finetune"}, {"model": "llama-3.1-405b", "task": "inference"}]


def step_values(option, rule: str) -> dict:
    (step,) = [s for s in option.trace if s.rule.startswith(rule + "@")]
    return {v["name"]: v["value"] for v in step.values}


def test_the_catalogs_consumer_cards_are_the_geforce_ones(kb):
    assert sorted(g for g, gpu in kb.gpus.items() if gpu.segment == "consumer") == CONSUMER


@pytest.mark.parametrize("workload", HEAVY, ids=lambda w: f"{w['model']}-{w['task']}")
def test_no_consumer_option_spans_servers(kb, workload):
    answer = kb.ask({**workload, "gpus": CONSUMER + ["h100-sxm-80gb"]})
    for option in answer.options + answer.rejected:
        if option.gpu in CONSUMER:
            assert option.count <= 8 and option.strategy.nodes == 1, (option.gpu, option.count)
    for option in answer.rejected:
        if option.gpu in CONSUMER and option.deciding_finding.kind == "memory_capacity":
            # the trace says why the search stopped at one node (its systems have no network between nodes),
            # and a finding says so in words
            (plan_step,) = [s for s in option.trace if s.rule.startswith("planner.fewest-gpus@")]
            assert f"{option.count} GPUs, one node of " in plan_step.sentence
            assert "the system has no network between nodes" in plan_step.sentence
            assert "nvidia-geforce-driver-license" in plan_step.sources
            # one node, its GPU memory or its host memory (offloaded state) is what runs out
            assert any(f.rule.startswith(("bottleneck.capacity.consumer-box@", "bottleneck.capacity.host-memory@"))
                       for f in option.findings)


def test_a_gpu_count_above_one_box_does_not_lift_the_consumer_limit(kb):
    answer = kb.ask({"model": "llama-65b", "task": "qlora", "gpus": ["rtx-3080-10gb"], "gpu_count": 64, "offload": "none"})
    assert not answer.options and answer.rejected[0].count <= 8
    # a data-centre card of the same memory is not boxed
    assert kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["l4-24gb"]}).best.count > 8


def test_the_qlora_65b_answer_is_not_a_rack_of_gaming_cards(kb):
    answer = kb.ask({"model": "llama-65b", "task": "qlora"})
    assert answer.best.gpu not in CONSUMER and answer.best.count == 1
    # a 10 GB card is never spread over boxes: it takes one with everything offloaded to CPU memory, or none
    assert all(o.count == 1 and o.strategy.offload == "optimizer+params" for o in answer.options if o.gpu == "rtx-3080-10gb")


def test_a_dual_die_accelerator_is_planned_as_two_devices_of_half_the_memory(kb):
    mi250x = kb.gpus["mi250x-128gb"]
    # rocminfo: two GCDs of 65,520 MiB
    assert mi250x.devices == 2 and mi250x.memory_bytes == 2 * 65520 * 2**20
    # Mixtral 8x7B in bf16 with a 4k context: a replica of about 96 GB, more than one 64 GB GCD
    one = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["mi250x-128gb"], "gpu_count": 1})
    assert not one.options and one.memory.total > 64e9
    (option,) = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["mi250x-128gb"]}).options
    assert option.count >= 2 and option.usable_bytes < 64e9 and option.per_gpu_bytes <= option.usable_bytes
    # one GCD's 65,520 MiB less the 10% reserve, which holds the 2 GB runtime overhead
    assert option.usable_bytes == pytest.approx(65520 * 2**20 * 0.9 + 2e9)
    (plan_step,) = [s for s in option.trace if s.rule.startswith("planner.fewest-gpus@")]
    assert "2 devices to the framework" in plan_step.sentence
    # every rate of a device is half the package's: bandwidth, FLOP/s, power, scale-up bandwidth; the domain doubles
    fact = gpu_fact(kb, mi250x, "bf16")
    assert fact["memory_bandwidth"] == mi250x.memory_bandwidth / 2 and fact["flops"] == mi250x.bf16_flops / 2
    assert fact["tdp"] == mi250x.tdp / 2 and fact["scale_up_domain"] == 2 * mi250x.scale_up_domain


def test_consumer_cards_talk_through_host_memory_at_the_measured_rate(kb):
    measured = kb.policy("consumer-collective-bandwidth")
    assert measured == 28e9
    w = {"model": "llama-2-70b", "task": "inference"}
    # an 8-GPU RTX 4090 server (PCIe 4.0: 31.5 GB/s of link, 28 GB/s measured without peer-to-peer)
    (rtx,) = kb.ask({**w, "gpus": ["rtx-4090-24gb"]}).options
    (l40s,) = kb.ask({**w, "gpus": ["l40s-48gb"]}).options  # PCIe 4.0 with peer-to-peer
    assert rtx.strategy.tensor_parallel == 8 and l40s.strategy.tensor_parallel > 1
    assert step_values(rtx, "rec.throughput.decode")["link"] == measured
    # with peer-to-peer, NCCL moves the bytes at the 24 GB/s it counts for the link (policy collective-share-pcie)
    assert step_values(l40s, "rec.throughput.decode")["link"] == pytest.approx(
        kb.interconnects["pcie-4-x16"].bandwidth * kb.policy("collective-share-pcie"))
    assert kb.policy("collective-share-pcie") < 1
    (finding,) = [f for f in rtx.findings if f.rule.startswith("bottleneck.interconnect.tp-over-pcie@")]
    assert "through host memory" in finding.message and "(28 GB/s per direction" in finding.message


def test_fp8_runs_only_where_the_gpu_runs_it(kb):
    train = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "precision": "fp8",
                    "gpus": ["a100-sxm-80gb", "h100-sxm-80gb"]})
    assert [o.gpu for o in train.options] == ["h100-sxm-80gb"]
    (a100,) = train.rejected
    assert a100.deciding_finding.kind == "precision" and "precision fp8" in a100.deciding_finding.message
    serve = kb.ask({"model": "llama-2-7b", "task": "inference", "precision": "fp8",
                    "gpus": ["a100-sxm-80gb", "v100-sxm-32gb", "mi250x-128gb", "h100-sxm-80gb"]})
    # weight-only FP8 (vLLM's FP8 Marlin) on Ampere, native on Hopper; nothing on Volta or CDNA 2
    assert {o.gpu for o in serve.options} == {"a100-sxm-80gb", "h100-sxm-80gb"}
    assert {o.gpu for o in serve.rejected} == {"v100-sxm-32gb", "mi250x-128gb"}
    for option in serve.rejected:
        assert "precision fp8 cannot be served" in option.deciding_finding.message


REMEDY_ASKS = [{"model": "llama-2-70b", "task": "lora", "gpus": ["rtx-4090-24gb"]},
               {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]},
               {"model": "llama-2-13b", "task": "full_finetune", "gpus": ["rtx-4090-24gb"]},
               {"model": "llama-2-70b", "task": "full_finetune"},
               {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 1},
               {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["l40s-48gb"], "zero_stage": 2,
                "gpu_count": 8, "placement": "all"}]


@pytest.mark.parametrize("workload", REMEDY_ASKS, ids=lambda w: "-".join(str(v) for v in w.values())[:60])
def test_a_remedy_is_not_already_in_the_plan_and_is_possible_on_its_gpu(kb, workload):
    answer = kb.ask(workload)
    best = answer.best
    by_id = {r.id: r for r in answer.remedies}
    assert "flash-attention" not in by_id  # assumed by every estimate: not a change to make
    for remedy in answer.remedies:
        assert remedy.gpu in (None, best.gpu)
        assert remedy.effect_bytes > 0 or "→" in remedy.effect
        if remedy.gpu:  # a change to this plan says how much it changes it
            assert remedy.effect.endswith(f"per GPU on {best.gpu}") or "scaling efficiency" in remedy.effect
    s = best.strategy
    if s.activation_checkpointing:
        assert "activation-checkpointing" not in by_id
    if s.zero_stage == 3 or s.data_parallel == 1:
        assert "zero-3" not in by_id
    if s.offload != "none":
        assert "offload-optimizer" not in by_id
    if kb.gpus[best.gpu].scale_up_domain == 1 or s.tensor_parallel > 1 or workload.get("gpu_count") == 1:
        assert "tensor-parallel" not in by_id


def test_the_plan_remedies_name_what_they_save_on_this_plan(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["l40s-48gb"], "zero_stage": 2,
                     "gpu_count": 8, "placement": "all"})
    zero = next(r for r in answer.remedies if r.id == "zero-3")
    # ZeRO-2 over 8 ranks keeps the 16-bit weights whole on each GPU: ZeRO-3 would keep 1/8 of them
    assert zero.effect_bytes == round(answer.best.memory.weights * 7 / 8)


def test_a_one_gpu_plan_has_no_scaling_finding(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"],
                        "gpu_count": 1}).options
    assert option.count == 1 and option.strategy.offload != "none"
    assert not [f for f in option.findings if f.rule.startswith("bottleneck.interconnect.wall@")]
    assert not [r for r in kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"],
                                   "gpu_count": 1}).remedies if "scaling efficiency" in r.effect]


def test_the_launch_line_says_which_option_it_is_for_and_holds_the_batch():
    from typer.testing import CliRunner

    import gpukb
    from gpukb.cli import app
    from launchtext import launch_block

    args = ["ask", "--model", "llama-2-70b", "--task", "inference", "--batch-size", "32", "--launch"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    comment, line = launch_block(result.stdout)
    best = gpukb.ask({"model": "llama-2-70b", "task": "inference", "batch_size": 32}).best
    assert comment.startswith(f"# {best.gpu} x {best.count} GPU")
    assert f"tensor parallel {best.strategy.tensor_parallel}," in comment
    argv = shlex.split(line)
    seqs = int(argv[argv.index("--max-num-seqs") + 1])
    assert seqs >= 32 and seqs == max(32, best.max_concurrency)
    assert argv[argv.index("--tensor-parallel-size") + 1] == str(best.strategy.tensor_parallel)
    # with a latency target the engine is capped at the batch the target was planned for
    result = CliRunner().invoke(app, [*args, "--tpot-ms", "200"])
    argv = shlex.split(launch_block(result.stdout)[1])
    assert argv[argv.index("--max-num-seqs") + 1] == "32"


def test_every_launch_value_is_shell_quoted(kb, tmp_path):
    folder = tmp_path / "it's a $(model); rm -rf"
    shutil.copytree(REPO / "tests" / "fixtures" / "hf" / "llama-3.1-8b", folder)
    (option,) = kb.ask({"model": str(folder), "task": "inference", "gpus": ["h100-sxm-80gb"]}).options
    for engine, line in option.launch.items():
        argv = shlex.split(line)
        assert str(folder) in argv, engine  # one argument, read back exactly
        assert shlex.join(argv) == line
