"""Invariants of ask() over many generated workloads."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpukb
from gpukb import WorkloadError

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
        parts = option.memory
        assert abs(parts.weights + parts.gradients + parts.optimizer + parts.activations + parts.kv_cache
                   + parts.overhead - option.per_gpu_bytes) <= 6  # rounding of six parts
        assert option.trace
        assert option.score > 0 or option.tokens_per_s is None  # no score only where no FLOPS are published
    for option in answer.rejected:
        assert not option.fits
        assert any(f.severity == "error" and f.kind == "memory_capacity" for f in option.findings)
    total = answer.memory
    assert total.total >= total.weights > 0
    assert KB.ask(w).model_dump_json() == answer.model_dump_json()
