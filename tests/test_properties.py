"""Invariants of ask() over many generated workloads."""

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import gpukb
from gpukb import WorkloadError
from gpukb.estimate import planner

KB = gpukb.load_kb()
TRAINING = ["pretrain", "full_finetune", "lora", "qlora"]


@st.composite
def workloads(draw):
    task = draw(st.sampled_from([*TRAINING, "inference"]))
    w = {"model": draw(st.sampled_from(sorted(KB.models))), "task": task,
         "gpus": draw(st.lists(st.sampled_from(sorted(KB.gpus)), min_size=1, max_size=4, unique=True)),
         "seq_len": draw(st.sampled_from([512, 2048, 4096, 32768, 131072]))}
    if draw(st.booleans()):
        w["gpu_count"] = draw(st.integers(1, 64))
    if task == "inference":
        w["precision"] = draw(st.sampled_from(["bf16", "fp16", "fp8", "int8", "int4"]))
        w["batch_size"] = draw(st.integers(1, 64))
    else:
        w["precision"] = draw(st.sampled_from(["bf16", "fp16", "fp8", "fp32"]))
        w["optimizer"] = draw(st.sampled_from(["adamw", "adamw_8bit", "sgd", "sgd_momentum", "adafactor"]))
        w["micro_batch_size"] = draw(st.integers(1, 8))
        if draw(st.booleans()):
            w["activation_checkpointing"] = draw(st.booleans())
        if draw(st.booleans()):
            w["tokens"] = draw(st.integers(10**9, 10**13))
        if draw(st.integers(0, 3)) == 0:  # a pin that only some models and tasks take
            w["expert_parallel"] = draw(st.sampled_from([1, 2, 4, 8, 16]))
    return w


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workloads())
def test_every_option_fits_and_every_rejection_says_why(w):
    try:
        answer = KB.ask(w)
    except WorkloadError as err:  # only for combinations the contract forbids
        assert err.field in w or err.field == "workload"
        return
    assert {o.gpu for o in answer.options} | {o.gpu for o in answer.rejected} == set(w["gpus"])
    for option in answer.options:
        assert option.fits and option.per_gpu_bytes <= option.usable_bytes
        assert option.count <= w.get("gpu_count", 10**9)
        assert option.strategy.expert_parallel == w.get("expert_parallel", 1)
        assert option.strategy.data_parallel % option.strategy.expert_parallel == 0
        parts = option.memory
        assert abs(parts.weights + parts.gradients + parts.optimizer + parts.activations + parts.kv_cache
                   + parts.overhead - option.per_gpu_bytes) <= 6  # rounding of six parts
        assert option.trace
        assert option.score > 0 or option.tokens_per_s is None  # no score only where no FLOPS are published
    for option in answer.rejected:
        assert not option.fits
        # short of memory, or asked for a precision the GPU cannot run (FP8 without FP8 tensor cores)
        assert any(f.severity == "error" and f.kind in ("memory_capacity", "precision") for f in option.findings)
    total = answer.memory
    assert total.total >= total.weights > 0
    assert KB.ask(w).model_dump_json() == answer.model_dump_json()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([1, 2, 4, 8]), st.sampled_from([1, 2, 4]), st.integers(0, 3), st.booleans(),
                          st.sampled_from(["none", "optimizer", "optimizer+params"]), st.integers(1, 64),
                          st.sampled_from([1, 2, 8])),
                min_size=1, max_size=12))
def test_planner_memo_gives_what_the_expressions_give(splits):
    """The planner computes each memory part once per combination of the strategy names it reads;
    in any order of requests that must equal evaluating the expressions afresh."""
    answer = KB.ask({"model": "mixtral-8x7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    step = next(s for s in answer.trace if s.rule.startswith("req.memory."))
    w = answer.workload
    base = {"m": {v["name"]: v["value"] for v in step.values},
            "w": {"layers": w.layers, "params": w.params, "experts": w.experts, "expert_params": w.expert_params,
                  "virtual_pipeline_stages": w.virtual_pipeline_stages or 1, "gathered_layers": 2,
                  "comm_buffer_bytes": 0}}
    cache = planner.PlanCache()
    for tp, pp, zero, ckpt, offload, dp, ep in splits:
        layout = planner.Layout(tp, pp, zero, ckpt, offload, ep)
        fresh = {name: float(e.evaluate({**base, **layout.env(dp)})) for name, e in planner.PARTS.items()}
        assert cache.parts_of(layout, dp, base) == fresh


MOE_MODELS = sorted(m for m, model in KB.models.items() if model.moe)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(MOE_MODELS), st.sampled_from(["full_finetune", "pretrain"]), st.sampled_from([1, 2, 4, 8]),
       st.lists(st.sampled_from(sorted(KB.gpus)), min_size=1, max_size=3, unique=True),
       st.one_of(st.none(), st.integers(1, 256)), st.booleans())
def test_expert_parallel_plans_keep_whole_groups(model, task, ep, gpus, gpu_count, all_of_them):
    w = {"model": model, "task": task, "expert_parallel": ep, "gpus": gpus}
    if gpu_count is not None:
        w["gpu_count"] = gpu_count
        w["placement"] = "all" if all_of_them else "fewest"
    try:
        answer = KB.ask(w)
    except WorkloadError as err:
        assert err.field in ("gpu_count", "expert_parallel")
        return
    for option in (*answer.options, *answer.rejected):
        s = option.strategy
        assert s.expert_parallel == ep and s.data_parallel % ep == 0
        assert option.count == s.data_parallel * s.tensor_parallel * s.pipeline_parallel
    for option in answer.options:
        assert option.count <= (gpu_count or 10**9)


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), cp=st.sampled_from([1, 2, 4, 8]), zero=st.integers(0, 3),
       pp=st.sampled_from([1, 2, 4]), vp=st.sampled_from([1, 2]))
def test_context_and_pipeline_pins_divide_the_work_as_their_formulas_say(tp, cp, zero, pp, vp):
    """Every GPU of a pinned layout is one of dp x tp x pp x cp; each holds 1/(tp·cp) of the activations
    (times the interleaved schedule's 1 + (pp-1)/(pp·v)) and its ZeRO share over data x context ranks."""
    assume(tp * cp * pp <= 128)  # more is an error naming gpu_count (tests/test_performance.py)
    workload = {"model": "llama-3-8b", "task": "pretrain", "seq_len": 16384, "gpus": ["h100-sxm-80gb"],
                "gpu_count": 128, "placement": "all", "tensor_parallel": tp, "context_parallel": cp,
                "pipeline_parallel": pp, "zero_stage": zero, "activation_checkpointing": True}
    if pp > 1:
        workload["virtual_pipeline_stages"] = vp
    answer = KB.ask(workload)
    if not answer.options:
        return  # a layout that does not fit 80 GB is a rejection with its reason, not a plan
    (option,) = answer.options
    s = option.strategy
    assert s.data_parallel * s.tensor_parallel * s.pipeline_parallel * s.context_parallel == option.count == 128
    plan = next({v["name"]: v["value"] for v in st_.values} for st_ in option.trace if st_.rule.startswith("planner."))
    replica = next({v["name"]: v["value"] for v in st_.values} for st_ in option.trace
                   if st_.rule.startswith("req.memory."))
    v = vp if pp > 1 else 1
    interleave = 1 + (pp - 1) / (pp * v) if v > 1 else 1
    assert abs(plan["activations"] - replica["activations_checkpointed"] / (tp * cp) * interleave) <= 1e-6 * plan["activations"]
    if s.offload == "none":  # what does not fit without sharding is offloaded (only without context parallelism)
        shards = s.data_parallel * cp if zero >= 1 else 1
        assert abs(plan["optimizer"] - replica["optimizer"] / (tp * pp) / shards) <= 1e-6 * plan["optimizer"]
    else:
        assert cp == 1


SERVING = ["vllm", "sglang", "tensorrt-llm", "llama.cpp", "hf"]


@st.composite
def served(draw):
    w = {"model": draw(st.sampled_from(sorted(KB.models))), "task": "inference",
         "gpus": draw(st.lists(st.sampled_from(sorted(KB.gpus)), min_size=1, max_size=3, unique=True)),
         "precision": draw(st.sampled_from(["bf16", "fp16", "fp8", "int8", "int4"])),
         "batch_size": draw(st.sampled_from([1, 2, 3, 5, 8, 16, 33, 64, 256])),
         "seq_len": draw(st.sampled_from([512, 2048, 8192])),
         "framework": draw(st.sampled_from(SERVING))}
    if draw(st.booleans()):
        w["prompt_len"] = draw(st.sampled_from([16, 128, 1024]))
        w["output_len"] = draw(st.sampled_from([1, 128, 1024]))
        w["seq_len"] = w["prompt_len"] + w["output_len"]
    if draw(st.booleans()):
        w["gpu_count"] = draw(st.sampled_from([1, 2, 4, 8, 16]))
        w["placement"] = draw(st.sampled_from(["fewest", "all"]))
    return w


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(served())
def test_serving_throughput_never_exceeds_the_requests_over_the_time_per_token(w):
    """However many replicas a plan has, the sequences in flight are the batch: no option decodes more than
    batch_size tokens per time per output token, and the replicas share the batch rather than each running it."""
    try:
        answer = KB.ask(w)
    except WorkloadError as err:
        assert err.field in w or err.field == "workload"
        return
    for option in answer.options:
        if option.tokens_per_s is None:
            continue
        assert option.tokens_per_s <= w["batch_size"] / option.tpot_s * (1 + 1e-9), option.gpu
        estimate = next({v["name"]: v["value"] for v in s.values} for s in option.trace
                        if s.rule.startswith("rec.throughput.decode@"))
        dp = option.strategy.data_parallel
        assert estimate["concurrency"] <= -(-w["batch_size"] // dp)  # a replica decodes its share at most
        assert estimate["in_flight"] <= min(w["batch_size"], dp * estimate["concurrency"])
