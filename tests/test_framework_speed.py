"""What each serving framework costs in time: its own achieved decode bandwidth, an eager stack's per-layer
launches, and llama.cpp's GGUF formats, each a kb/frameworks term the decode rule reads from the workload fact."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pydantic
import pytest

import gpukb
from gpukb.estimate.validation import validate
from gpukb.knowledge.schema import Framework

A100 = {"model": "llama-2-7b", "task": "inference", "precision": "fp16", "prompt_len": 128, "output_len": 128,
        "gpus": ["a100-sxm-80gb"]}
H200 = {"model": "llama-3.1-8b", "task": "inference", "output_len": 128, "gpus": ["h200-sxm-141gb"]}
GRAPH_ENGINES = ("vllm", "sglang", "tensorrt-llm", "gpt-fast")


def _decode(answer: gpukb.Answer) -> tuple[dict[str, object], str]:
    step = next(s for s in answer.options[0].trace if s.rule.split("@")[0] == "rec.throughput.decode")
    return {v["name"]: v["value"] for v in step.values}, step.sentence


def test_decode_reads_at_the_framework_s_own_share_and_says_so(kb: gpukb.KnowledgeBase) -> None:
    own, own_text = _decode(kb.ask({**A100, "framework": "lmdeploy"}))
    default, default_text = _decode(kb.ask({**A100, "framework": "vllm"}))
    bandwidth = kb.gpus["a100-sxm-80gb"].memory_bandwidth
    assert own["read_rate"] == pytest.approx(bandwidth * kb.frameworks["lmdeploy"].decode_bandwidth_utilisation.value)
    assert default["read_rate"] == pytest.approx(bandwidth * kb.policy("decode-bandwidth-utilisation"))
    assert "fitted for lmdeploy" in own_text and "policy decode-bandwidth-utilisation" not in own_text.split(")")[0]
    assert "policy decode-bandwidth-utilisation; vllm states none" in default_text
    # the share is the decode step's: a prompt's weights stream at the policy's share whatever the engine
    assert own["prefill_read_rate"] == default["prefill_read_rate"] == default["read_rate"]
    assert own["step_time_s"] > default["step_time_s"]


def test_llama_cpp_stores_ggml_s_blocks(kb: gpukb.KnowledgeBase) -> None:
    model = kb.models["llama-2-7b"]
    embedding = 2 * model.vocab_size * model.hidden_size  # untied input and output layers, left in 16 bit
    for precision, block_bytes in (("int4", 18), ("int8", 34)):  # block_q4_0, block_q8_0: 32 weights each
        weights = kb.ask({**A100, "precision": precision, "framework": "llama.cpp"}).memory.weights
        assert weights == pytest.approx((model.params - embedding) * block_bytes / 32 + embedding * 2)
    # another engine's int4 is kb/dtypes' (GPTQ's group of 128: 4.25 bits)
    gptq = kb.ask({**A100, "precision": "int4", "framework": "vllm"}).memory.weights
    assert gptq == pytest.approx((model.params - embedding) * 4.25 / 8 + embedding * 2)


def test_eager_launches_bound_a_step_and_a_short_prompt_not_a_long_one(kb: gpukb.KnowledgeBase) -> None:
    per_layer = kb.frameworks["hf"].layer_launch_s.value
    layers = kb.models["llama-3.1-8b"].layers
    eager, _ = _decode(kb.ask({**H200, "prompt_len": 128, "framework": "hf"}))
    graph, _ = _decode(kb.ask({**H200, "prompt_len": 128, "framework": "vllm"}))
    assert eager["launch_s"] == pytest.approx(layers * per_layer) and graph["launch_s"] == 0
    assert eager["step_time_s"] == pytest.approx(layers * per_layer) and eager["bound"] == "host"
    assert graph["step_time_s"] < eager["step_time_s"] / 4  # the probe measured 26.4 ms eager, 4.6 ms of reads
    # a 128-token prompt waits for the launches (the 4x on the H200); a 2k-token prompt's kernels outlast them
    assert eager["ttft_s"] == pytest.approx(layers * per_layer) and graph["ttft_s"] < eager["ttft_s"] / 3
    long_eager, _ = _decode(kb.ask({**H200, "prompt_len": 2048, "framework": "hf"}))
    long_graph, _ = _decode(kb.ask({**H200, "prompt_len": 2048, "framework": "vllm"}))
    assert long_eager["ttft_s"] == long_graph["ttft_s"] > layers * per_layer


def test_engines_that_replay_cuda_graphs_pay_no_per_layer_launch(kb: gpukb.KnowledgeBase) -> None:
    assert all(kb.frameworks[f].layer_launch_s is None for f in GRAPH_ENGINES)
    assert kb.frameworks["hf"].layer_launch_s is not None and kb.frameworks["llama.cpp"].layer_launch_s is not None


def test_a_share_over_one_or_a_serving_term_on_a_training_stack_is_refused(kb: gpukb.KnowledgeBase) -> None:
    term = {"value": 1.2, "reason": "more than the datasheet", "sources": ["gpt-fast-readme"]}
    base = kb.frameworks["lmdeploy"].model_dump(exclude_none=True)
    with pytest.raises(pydantic.ValidationError, match="decode_bandwidth_utilisation"):
        Framework.model_validate({**base, "decode_bandwidth_utilisation": term})
    training = kb.frameworks["torchtune"].model_dump(exclude_none=True)
    with pytest.raises(pydantic.ValidationError, match="serving terms"):
        Framework.model_validate({**training, "layer_launch_s": {**term, "value": 1e-4}})
    # the KV cache's share is checked the same way, and an engine sizes its cache one way, not two
    with pytest.raises(pydantic.ValidationError, match=r"kv_cache_memory_fraction\s+Value error, 1.2 is outside the "
                                                        r"plausible range of fraction, 1e-06 to 1 "):
        Framework.model_validate({**base, "kv_cache_memory_fraction": term})
    with pytest.raises(pydantic.ValidationError, match="one way"):
        Framework.model_validate({**base, "kv_cache_memory_fraction": {**term, "value": 0.9},
                                  "kv_cache_free_memory_fraction": {**term, "value": 0.9}})
    with pytest.raises(pydantic.ValidationError, match="serving terms"):
        Framework.model_validate({**training, "kv_cache_free_memory_fraction": {**term, "value": 0.9}})


def test_llama_cpp_cells_gpukb_cannot_express_stay_published_but_unvalidated(kb: gpukb.KnowledgeBase) -> None:
    cells = {i: m for i, m in kb.measurements.items() if m.source == "xiongjiedai-gpu-benchmarks-llm-inference"}
    split = {i for i, m in cells.items() if m.workload["gpu_count"] == 2}
    assert len(cells) == 27 and len(split) == 9
    assert all(cells[i].status == "deprecated" and "row" in cells[i].notes for i in split)
    v = validate(kb)
    checked = {p.id for p in v.points}
    assert not split & checked and set(cells) - split <= checked
    row = v.by_framework["llama.cpp"]
    assert row.points >= 19 and row.median_error < 0.2 and v.passed


def _fitter() -> ModuleType:
    path = Path(__file__).resolve().parent.parent / "tools" / "fit_decode_terms.py"
    spec = importlib.util.spec_from_file_location("fit_decode_terms", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("framework", ["lmdeploy", "tensorrt-llm", "mlc-llm", "exllamav2", "llama.cpp"])
def test_each_stated_share_is_the_least_squares_fit_of_its_engine_s_cells(kb: gpukb.KnowledgeBase,
                                                                         framework: str) -> None:
    """A share moved by 0.01 (or llama.cpp's launch time by 0.01 ms) fits the engine's own cells worse."""
    fit = _fitter()
    entry = kb.frameworks[framework]
    share = entry.decode_bandwidth_utilisation.value
    launch = entry.layer_launch_s.value if entry.layer_launch_s else None
    points = fit.cells(kb, framework, every_batch=framework == "tensorrt-llm")
    assert len(points) >= 2

    def sse(f: float, c: float | None) -> float:
        return fit.squared(fit.log_errors(kb, framework, points, f, c))

    best = sse(share, launch)
    assert best < sse(share - 0.01, launch) and best < sse(share + 0.01, launch)
    if launch is not None:
        assert best < sse(share, launch - 1e-5) and best < sse(share, launch + 1e-5)
    assert kb.frameworks[framework] is entry  # the fit puts the entry back


def test_an_engine_whose_host_works_between_steps_adds_that_time_to_each(kb: gpukb.KnowledgeBase) -> None:
    """vLLM's V0 engine schedules, prepares and post-processes each step while the GPU waits: every decode step and
    every prefill takes its step_host_s on top of the GPU's time; the V1 engine, overlapping them, does not."""
    entry = kb.frameworks["vllm-v0"]
    host = entry.step_host_s.value + entry.step_host_per_sequence_s.value  # a step of one sequence
    assert kb.frameworks["vllm"].step_host_s is None and 5e-3 <= host <= 13e-3  # RFC 6854's 5-13 ms bubble
    workload = {"model": "llama-3.1-70b", "task": "inference", "prompt_len": 128, "output_len": 128,
                "gpus": ["h100-sxm-80gb"], "gpu_count": 4, "tensor_parallel": 4, "placement": "all"}
    v0, v0_text = _decode(kb.ask({**workload, "framework": "vllm-v0"}))
    v1, _ = _decode(kb.ask({**workload, "framework": "vllm"}))
    assert v0["gpu_step_s"] == pytest.approx(v1["gpu_step_s"])
    assert v0["step_time_s"] == pytest.approx(v1["step_time_s"] + host)
    assert v0["ttft_s"] == pytest.approx(v1["ttft_s"] + host)
    assert v0["tokens_per_s"] < v1["tokens_per_s"]
    assert f"plus the {entry.step_host_s.value * 1000:.2f} ms, and {entry.step_host_per_sequence_s.value * 1000:.2f} ms" \
           " a sequence, that vllm-v0's host works between steps while the GPU waits" in v0_text
    # RFC 6913's two batches, which the two terms were derived from: 19 and 25 ms a token
    rfc = {**workload, "model": "llama-3-70b", "precision": "fp8", "framework": "vllm-v0"}
    for batch, tpot in ((1, 19e-3), (32, 25e-3)):
        assert _decode(kb.ask({**rfc, "batch_size": batch}))[0]["step_time_s"] == pytest.approx(tpot, rel=0.01)
    training = kb.frameworks["torchtune"].model_dump(exclude_none=True)
    term = {"value": 1e-3, "reason": "the host's loop between steps", "sources": ["vllm-rfc-6854-multi-step"]}
    with pytest.raises(pydantic.ValidationError, match="serving terms"):
        Framework.model_validate({**training, "step_host_s": term})
