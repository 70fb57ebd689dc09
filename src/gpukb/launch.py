"""Launch settings: the serving engine's command line for an inference option, built from the option's
strategy and the workload — deterministic, every figure taken from the answer (the plan's parallel sizes,
the workload's context and concurrency, the reserve policy)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .workload import ResolvedWorkload

ENGINES = ("vllm",)
# vLLM's --dtype for the 16/32-bit formats; quantized weights keep 16-bit activations (vLLM's default)
VLLM_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# fp8 weights: vLLM's online dynamic FP8 quantization; int8/int4: bitsandbytes in-flight quantization
# (a pre-quantized AWQ/GPTQ checkpoint names its own method and needs no flag)
VLLM_QUANTIZATION = {"fp8": "fp8", "int8": "bitsandbytes", "int4": "bitsandbytes"}
# vLLM stores a 1-byte KV cache as fp8 (it has no int8 KV cache): the same bytes the memory model counts
VLLM_KV_DTYPE = {"fp8": "fp8", "int8": "fp8"}


def model_reference(w: ResolvedWorkload, hf_repo: str | None) -> str | None:
    """What `vllm serve` takes: a Hugging Face repo id, or the folder holding the config.json read."""
    if w.config_file:
        if w.config_file.startswith("hf:"):
            return w.config_file.removeprefix("hf:")
        path = Path(w.config_file)
        return str(path.parent if path.name.endswith(".json") else path)
    return hf_repo


def vllm_command(model: str, w: ResolvedWorkload, strategy: Any, reserve_fraction: float) -> str:
    """`vllm serve` for one replica group: tensor x pipeline parallel, the reserve as gpu_memory_utilization."""
    args = ["vllm", "serve", model,
            "--tensor-parallel-size", str(strategy.tensor_parallel),
            "--pipeline-parallel-size", str(strategy.pipeline_parallel)]
    if strategy.data_parallel > 1:
        args += ["--data-parallel-size", str(strategy.data_parallel)]
    args += ["--gpu-memory-utilization", f"{round(1 - reserve_fraction, 4):g}",
             "--max-model-len", str(w.seq_len),
             "--max-num-seqs", str(w.batch_size),
             "--kv-cache-dtype", VLLM_KV_DTYPE.get(w.kv_cache_precision or "", "auto")]
    if w.precision in VLLM_DTYPE:
        args += ["--dtype", VLLM_DTYPE[w.precision]]
    if w.precision in VLLM_QUANTIZATION:
        args += ["--quantization", VLLM_QUANTIZATION[w.precision]]
    return shlex.join(args)


def launch_commands(model: str | None, w: ResolvedWorkload, strategy: Any, reserve_fraction: float) -> dict[str, str]:
    """Engine name → command line; empty for training and for custom models (no checkpoint to name)."""
    if w.task != "inference" or not model:
        return {}
    return {"vllm": vllm_command(model, w, strategy, reserve_fraction)}
