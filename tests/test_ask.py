"""ask() end to end: every task, the API contract, pins, bad input, determinism, threads."""

import copy
import dataclasses
import json
import os
import pickle
import threading
from pathlib import Path

import pytest

import gpukb
from gpukb import WorkloadError

TASKS = ["pretrain", "full_finetune", "lora", "qlora", "inference"]


@pytest.mark.parametrize("task", TASKS)
def test_every_task_answers_with_traced_options(kb, task):
    answer = kb.ask({"model": "llama-2-7b", "task": task})
    assert answer.kb_version == kb.version
    assert answer.options, "some GPU in the catalog can run a 7B model"
    best = answer.options[0]
    assert best.fits and best.count >= 1
    assert best.per_gpu_bytes <= best.usable_bytes
    assert best.memory.total == best.per_gpu_bytes
    rules = {step.rule for step in best.trace}
    assert "planner.fewest-gpus@1" in rules
    assert any(r.startswith("req.memory.") for r in rules)
    assert all(step.sentence for step in best.trace)
    assert answer.memory.total == sum(
        getattr(answer.memory, p) for p in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"))


def test_options_are_ranked_by_speed_and_the_articles_pick_is_marked_not_ranked_up(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune"})
    keys = [(-o.score, o.count, o.gpu) for o in answer.options]
    assert keys == sorted(keys)
    # the decision tree prefers 80 GB-class cards for full training of a mid-size model: they are marked
    assert all(kb.gpus[o.gpu].memory_bytes >= 80e9 for o in answer.options if o.tier == 0)
    assert any(o.tier == 0 and o.branch == "mid-size-80gb" for o in answer.options)


def test_lora_puts_the_fastest_card_first_not_the_consumer_cards_the_tree_prefers(kb):
    # issue 31: RTX 5090/4090/3090 (1,630/1,286/787 tokens/s) were forced above a B200 at 26,263
    answer = kb.ask({"model": "llama-3.1-8b", "task": "lora"})
    best = answer.options[0]
    assert best.score == max(o.score for o in answer.options) and best.branch is None
    picked = [o for o in answer.options if o.branch == "lora-consumer"]
    assert picked and all(o.score < best.score for o in picked)
    assert answer.summary.fastest.gpu == best.gpu
    assert answer.summary.article_pick.gpu == max(picked, key=lambda o: o.score).gpu
    assert "lora-consumer" in answer.summary.article_pick.why and "slower than" in answer.summary.article_pick.why


@pytest.mark.parametrize("objective", ["speed", "cost", "gpus"])
def test_each_objective_ranks_by_its_own_figure(kb, objective):
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "objective": objective})
    options = answer.options
    assert len(options) > 3 and answer.summary.objective == objective
    if objective == "speed":
        assert [o.score for o in options] == sorted((o.score for o in options), reverse=True)
    elif objective == "gpus":
        keys = [(o.count, -o.score) for o in options]
        assert keys == sorted(keys) and options[0].gpu == answer.summary.fewest_gpus.gpu
    else:
        priced = [o for o in options if o.usd_per_hour]
        per_token = [o.usd_per_hour / o.tokens_per_s for o in priced]
        assert per_token == sorted(per_token) and options[0].gpu == answer.summary.cheapest.gpu
        assert list(options[: len(priced)]) == priced  # unpriced options last


def test_rejected_gpus_say_why_with_figures(kb):
    # at 32k tokens even the checkpointed activations of one sequence exceed a 24 GB card
    answer = kb.ask({"model": "llama-2-70b", "task": "full_finetune", "gpu_count": 8, "seq_len": 32768,
                     "gpus": ["rtx-4090-24gb", "h100-sxm-80gb"]})
    assert [o.gpu for o in answer.options] == ["h100-sxm-80gb"]
    (rejected,) = answer.rejected
    assert rejected.gpu == "rtx-4090-24gb" and not rejected.fits
    (why,) = [f for f in rejected.findings if f.severity == "error"]
    no_fit = kb.rules["bottleneck.capacity.no-fit"]
    assert why.kind == "memory_capacity" and why.rule == f"{no_fit.id}@{no_fit.version}"
    assert "GB per GPU" in why.message and rejected.per_gpu_bytes > rejected.usable_bytes
    assert "Why not:" in answer.explain() and "rtx-4090-24gb" in answer.explain()


def test_full_finetune_7b_needs_sharding_on_80gb_but_fits_one_141gb(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb", "h200-sxm-141gb"]})
    by_gpu = {o.gpu: o for o in answer.options}
    assert by_gpu["h200-sxm-141gb"].count == 1
    h100 = by_gpu["h100-sxm-80gb"]
    assert h100.count == 2 and (h100.strategy.zero_stage >= 1 or h100.strategy.activation_checkpointing)
    kinds = {f.kind for f in answer.findings}
    assert "memory_capacity" in kinds
    # stored, the eager (hf) stack's activations of 4,096 tokens do not fit beside 108 GB of states even on the
    # H200: both plans recompute, so checkpointing is no longer offered as a remedy
    assert h100.strategy.activation_checkpointing and by_gpu["h200-sxm-141gb"].strategy.activation_checkpointing
    remedies = {r.id: r for r in answer.remedies}
    assert "activation-checkpointing" not in remedies
    assert {"lora", "qlora", "optimizer-8bit", "offload-optimizer"} <= set(remedies)
    # the plan-specific remedies are the best option's (ZeRO-1 with recomputation): sharding further is offered
    assert answer.best.gpu == "h100-sxm-80gb" and answer.best.strategy.zero_stage == 1 and "zero-3" in remedies
    assert {r.gpu for r in answer.remedies} <= {None, "h100-sxm-80gb"}


def test_70b_inference_in_bf16_needs_more_than_one_80gb_gpu(kb):
    answer = kb.ask({"model": "llama-2-70b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    (option,) = answer.options
    # 138 GB of bf16 weights: one 80 GB GPU cannot hold them; tensor parallel shards them
    assert option.count > 1 and option.strategy.tensor_parallel == option.count
    assert option.per_gpu_bytes <= option.usable_bytes


def test_batch_one_decode_is_bandwidth_bound(kb):
    answer = kb.ask({"model": "llama-3-8b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    (finding,) = [f for f in answer.findings if f.kind == "memory_bandwidth"]
    assert finding.gpu == "h100-sxm-80gb" and "FLOP per byte" in finding.message
    option = answer.options[0]
    # tokens/s = the achieved share (69%, gpt-fast's measured figure) of 3.35 TB/s over the bytes a step
    # reads: every weight but the input embedding (a lookup of one row) and the whole KV cache, and the
    # token's element-wise traffic: 32 layers x (16 x 4096 + 4 x (32 + 8) x 128 + 2 x 3 x 14,336) bytes
    embedding = 128256 * 4096 * 2
    elementwise = 32 * (16 * 4096 + 4 * (32 + 8) * 128 + 2 * 3 * 14336)
    bytes_per_step = answer.memory.weights - embedding + answer.memory.kv_cache + elementwise
    assert option.tokens_per_s == pytest.approx(3.35e12 * 0.69 / bytes_per_step, rel=1e-9)
    assert option.tpot_s == pytest.approx(1 / option.tokens_per_s)


def test_qlora_65b_fits_one_48gb_gpu(kb):
    """QLoRA (Dettmers et al. 2023): a 65B model fine-tunes on a single 48 GB GPU."""
    answer = kb.ask({"model": "llama-65b", "task": "qlora", "gpus": ["rtx-6000-ada-48gb"], "seq_len": 512})
    (option,) = answer.options
    assert option.count == 1 and option.strategy.activation_checkpointing


def test_offload_only_when_nothing_else_fits_and_marked(kb):
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["rtx-4090-24gb"], "gpu_count": 4})
    (option,) = answer.options
    assert option.strategy.offload != "none"
    offload_only = kb.rules["bottleneck.capacity.offload-only"]
    assert any(f.rule == f"{offload_only.id}@{offload_only.version}" for f in option.findings)
    # a data-centre card of the same memory, with no limit on the count, shards instead of offloading
    roomy = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["l4-24gb"]})
    assert roomy.options[0].strategy.offload == "none" and roomy.options[0].count > 8


def test_strategy_pins_are_honoured(kb):
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"],
                     "zero_stage": 3, "tensor_parallel": 2, "activation_checkpointing": True})
    s = answer.options[0].strategy
    assert (s.zero_stage, s.tensor_parallel, s.activation_checkpointing) == (3, 2, True)


def test_gpu_count_limits_options(kb):
    # without CPU offload (which streams a 70B model through one GPU) one H200 cannot hold it
    answer = kb.ask({"model": "llama-2-70b", "task": "full_finetune", "gpu_count": 1, "gpus": ["h200-sxm-141gb"],
                     "offload": "none"})
    assert not answer.options
    assert answer.rejected[0].count == 1


def test_custom_model_by_parameter_count(kb):
    answer = kb.ask({"params": "7B", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000,
                     "task": "inference", "gpus": ["l40s-48gb"]})
    assert answer.workload.params == 7_000_000_000 and answer.workload.model == "custom"
    assert answer.memory.weights == 14_000_000_000
    assert any("kv_heads" in a for a in answer.workload.assumptions)


@pytest.mark.parametrize(("workload", "field", "message"), [
    ({"model": "llama-9-7b", "task": "lora"}, "model", "unknown model 'llama-9-7b'; did you mean"),
    ({"model": "~gpukb-no-such-user", "task": "lora"}, "model", "unknown model '~gpukb-no-such-user'"),  # no home
    ({"model": "llama-2-7b", "task": "lora", "gpus": ["h100"]}, "gpus.0", "unknown GPU 'h100'"),
    ({"model": "llama-2-7b", "task": "inference", "gpus": ["l4-24gb", "a100-sxm-80gb", "a100-sxm-80gb", "a100-sxm-80gb"]},
     "gpus.2", "'a100-sxm-80gb' is listed 3 times: gpus names the GPU types to compare, each once; for 3 GPUs of one "
     "type give gpu_count: 3"),
    ({"model": "llama-2-7b", "task": "finetune"}, "task", "Input should be"),
    ({"model": "llama-2-7b", "task": "lora", "precision": "fp4"}, "precision", "Input should be"),
    ({"model": "llama-2-7b", "task": "full_finetune", "precision": "int4"}, "precision", "inference only"),
    ({"model": "llama-2-7b", "task": "inference", "optimizer": "adamw"}, "optimizer", "not used for inference"),
    ({"model": "llama-2-7b", "task": "inference", "flash_attention": False}, "flash_attention", "not used for inference"),
    ({"model": "llama-2-7b", "task": "inference", "flash_attention_version": 1}, "flash_attention_version",
     "not used for inference"),
    ({"model": "llama-2-7b", "task": "lora", "flash_attention": False, "flash_attention_version": 1},
     "flash_attention_version", "remove one of them"),
    ({"model": "llama-2-7b", "task": "lora", "flash_attention_version": 3}, "flash_attention_version", "Input should be"),
    ({"model": "llama-2-7b", "task": "lora", "seq_len": -5}, "seq_len", "greater than 0"),
    ({"model": "llama-2-7b", "task": "lora", "seq_len": 10**12}, "seq_len", "less than or equal"),
    ({"params": "1e20", "layers": 2, "hidden_size": 8, "heads": 2, "vocab_size": 10, "task": "lora"},
     "params", "less than or equal"),
    ({"params": "7B", "task": "lora"}, "layers", "needed with params"),
    ({"model": "llama-2-7b", "params": "7B", "task": "lora"}, "workload", "either model"),
    ({"model": "llama-2-7b", "task": "lora", "colour": "red"}, "colour", "unknown field"),
    ({"model": "llama-2-7b", "task": "lora", "tensor_parallel": 3}, "tensor_parallel", "does not divide"),
    ({"model": "llama-2-7b", "task": "lora", "batch_size": 4}, "batch_size", "micro_batch_size"),
])
def test_bad_workloads_name_the_field(kb, workload, field, message):
    with pytest.raises(WorkloadError) as info:
        kb.ask(workload)
    assert info.value.field == field
    assert message in str(info.value)


def test_same_workload_gives_byte_identical_json(kb):
    workload = {"model": "mixtral-8x7b", "task": "full_finetune", "tokens": "1T"}
    first = kb.ask(workload).model_dump_json()
    for _ in range(3):
        assert kb.ask(workload).model_dump_json() == first
    assert json.loads(first)["workload"]["tokens"] == 10**12


def test_an_answer_pickles_and_copies_with_its_trace(kb):
    """A multiprocessing pool hands answers back pickled; the planner's steps are written by functions."""
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-80gb"]})
    assert any(s.rule.startswith("planner.") for s in answer.trace)
    for copied in (pickle.loads(pickle.dumps(answer)), copy.deepcopy(answer)):
        assert copied.model_dump_json() == answer.model_dump_json()
        assert copied.explain(lang="zh") == answer.explain(lang="zh")


def test_an_answer_cannot_be_changed_behind_the_next_one(kb):
    """Trace steps and their citations are shared with the compiled rules and the planner's cache: they are frozen."""
    answer = kb.ask({"model": "llama-2-7b", "task": "lora"})
    step = next(s for s in answer.trace if s.claims)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.claims[0].verdict = "supported"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.sentence = "something else"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        step.sources.append("made-up")  # type: ignore[attr-defined]


def test_concurrent_asks_match_sequential_ones(kb):
    workloads = [{"model": m, "task": t} for m in ("llama-2-7b", "llama-3-70b", "qwen2.5-14b")
                 for t in ("lora", "inference", "full_finetune")]
    expected = [kb.ask(w).model_dump_json() for w in workloads]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(3):
                results[i] = kb.ask(workloads[i % len(workloads)]).model_dump_json()
        except BaseException as err:
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert all(results[i] == expected[i % len(workloads)] for i in range(16))


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="resident memory is read from Linux /proc")
def test_memory_stays_flat_over_thousands_of_asks(kb):
    """Each ask's rules-engine session is deleted: resident memory (C heap included) stays flat."""
    workload = {"model": "llama-3-8b", "task": "lora", "gpus": ["h100-sxm-80gb", "rtx-4090-24gb"]}
    for _ in range(300):
        kb.ask(workload)
    before = _rss()
    for _ in range(2000):
        kb.ask(workload)
    growth = _rss() - before
    assert growth < 4_000_000, f"resident memory grew by {growth:,} bytes over 2000 asks"


def test_every_number_in_an_option_comes_from_a_trace_step(kb):
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["a100-sxm-80gb"]})
    option = answer.options[0]
    values = {round(v["value"]) for s in option.trace for v in s.values if isinstance(v["value"], float | int)}
    for part in ("weights", "gradients", "optimizer", "activations", "kv_cache", "overhead"):
        assert getattr(option.memory, part) in values
    assert option.per_gpu_bytes in values and option.usable_bytes in values
    assert round(option.tokens_per_s) in values


def test_packaged_kb_is_used_by_gpukb_ask():
    root = gpukb.packaged_root()
    assert (root / "kb" / "manifest.yaml").is_file() and (root / "rules" / "requirements").is_dir()
    answer = gpukb.ask(gpukb.Workload(model="llama-3-8b", task="qlora"))
    assert answer.options and answer.kb_version == gpukb.load_kb(root).version


def test_the_packaged_kb_once_loaded_is_not_looked_for_again(monkeypatch):
    """gpukb.ask() goes through load_kb() every time: after the first, no file is resolved or read."""
    loaded = gpukb.load_kb()

    def no_files() -> Path:
        raise AssertionError("load_kb() looked for the packaged files again")

    monkeypatch.setattr(gpukb.estimate.packaged, "packaged_root", no_files)
    assert gpukb.load_kb() is loaded
    assert gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]}).options


def test_attention_without_flash_costs_memory_and_time(kb):
    """Without fused attention the s×s scores are stored (Korthikanti's 5·a·s/h term) and cross memory."""
    workload = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-80gb"], "seq_len": 4096,
                "gpu_count": 8, "placement": "all", "activation_checkpointing": False}
    fused, unfused = kb.ask(workload), kb.ask({**workload, "flash_attention": False})
    # per layer s·b·h·5·a·s/h = 5·a·s²·b bytes more: 5 × 32 × 4096² × 1 = 2,684,354,560 bytes, 32 layers
    assert unfused.memory.activations - fused.memory.activations == 32 * 5 * 32 * 4096**2
    assert unfused.options[0].tokens_per_s < fused.options[0].tokens_per_s
    assert "flash_attention" not in fused.workload.model_dump() or fused.workload.flash_attention
    assert '"flash_attention":false' in unfused.model_dump_json()


def test_flash_attention_1_computes_attention_at_its_own_rate(kb):
    """A FlashAttention-1 (or xformers) stack spends 1/0.224 - 1/0.508 more peak FLOP-seconds per attention FLOP than
    the FlashAttention-2 stacks the A100's 57% was measured on: the step's rate falls by the attention's share."""
    workload = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["a100-sxm-80gb"], "seq_len": 4096,
                "gpu_count": 8, "placement": "all", "activation_checkpointing": False}
    fa2, fa1 = kb.ask(workload), kb.ask({**workload, "flash_attention_version": 1})

    def traced(option, name):
        return next(v["value"] for s in option.trace if s.rule.startswith("rec.throughput.training@") for v in s.values
                    if v["name"] == name)

    # attention: 2 x 32 layers x 4096 x 4096 forward, 3 times that with the backward, of 43,651,719,168 FLOP a token
    share = 3 * 2 * 32 * 4096 * 4096 / 43_651_719_168
    factor = 1 / (1 + 0.57 * (1 / 0.224 - 1 / 0.508) * share)
    assert traced(fa2.options[0], "attention_kernel") == 1
    assert traced(fa1.options[0], "attention_kernel") == pytest.approx(factor, rel=1e-6)
    assert traced(fa1.options[0], "utilisation") == pytest.approx(0.57 * factor, rel=1e-6)
    assert fa1.options[0].tokens_per_s < fa2.options[0].tokens_per_s * (factor + 0.01)
    assert fa1.options[0].mfu < fa2.options[0].mfu
    assert '"flash_attention_version":1' in fa1.model_dump_json()
    assert "flash_attention_version" not in fa2.workload.model_dump(exclude_defaults=True)


def test_an_ask_leaves_the_cycle_collector_as_it_found_it(kb):
    import gc

    workload = {"model": "llama-2-7b", "task": "lora", "gpus": ["a100-sxm-80gb"]}
    assert gc.isenabled()
    kb.ask(workload)
    assert gc.isenabled()
    gc.disable()
    try:
        kb.ask(workload)
        assert not gc.isenabled()  # an application that turned it off keeps it off
    finally:
        gc.enable()
