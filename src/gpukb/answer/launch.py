"""Launch settings: the serving engine's command line for an inference option, built from the option's
strategy and the workload — deterministic, every figure taken from the answer (the plan's parallel sizes,
the workload's context and concurrency, the reserve policy)."""

from __future__ import annotations

import shlex
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..core.messages import Message, message
from .workload import ResolvedWorkload

ENGINES = ("vllm", "sglang", "tensorrt-llm", "llama.cpp")
# vLLM's --dtype for the 16/32-bit formats; quantized weights keep 16-bit activations (vLLM's default)
VLLM_DTYPE = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
# fp8 weights: vLLM's online dynamic FP8 quantization; int8/int4: bitsandbytes in-flight quantization
# (a pre-quantized checkpoint names its own method in its config.json's quantization_config and gets no flag:
# the engines read it from there)
VLLM_QUANTIZATION = {"fp8": "fp8", "int8": "bitsandbytes", "int4": "bitsandbytes"}
# vLLM stores a 1-byte KV cache as fp8 (it has no int8 KV cache): the same bytes the memory model counts
VLLM_KV_DTYPE = {"fp8": "fp8", "int8": "fp8"}
# SGLang (docs.sglang.io, Server Arguments; python/sglang/srt/server_args.py): --kv-cache-dtype takes auto,
# fp8_e5m2 or fp8_e4m3 (no int8, so a 1-byte cache is fp8 as in vLLM); --quantization fp8 quantizes a 16-bit
# checkpoint's weights at load. It has no in-flight int8/int4 flag gpukb could set for a 16-bit checkpoint.
SGLANG_KV_DTYPE = {"fp8": "fp8_e4m3", "int8": "fp8_e4m3"}
SGLANG_DTYPE = VLLM_DTYPE
SGLANG_QUANTIZATION = {"fp8": "fp8"}
QUANTIZED_WEIGHTS = ("int8", "int4")
# llama.cpp serves GGUF files: convert_hf_to_gguf.py writes the 16/32-bit and Q8_0 formats itself; 4-bit weights are
# GGUF Q4_0 (the format kb/frameworks' int4_weight_bits counts), made by llama-quantize from the bf16 file
GGUF_OUTTYPE = {"bf16": "bf16", "fp16": "f16", "fp32": "f32", "int8": "q8_0", "int4": "bf16"}
# llama-server's -ctk/-ctv: a 1-byte KV cache is q8_0 (it has no fp8 cache type)
LLAMA_KV_TYPE = {"int8": "q8_0"}


def model_reference(w: ResolvedWorkload, hf_repo: str | None) -> str | None:
    """What `vllm serve` takes: a Hugging Face repo id, or the folder holding the config.json read.

    A folder is always written so that no engine can read it as an option: a relative one starting with
    `-` (`./--trust-remote-code/config.json`, which pathlib shortens to `--trust-remote-code`) keeps a
    leading `./`. Its name holds no control or bidirectional character: resolve refused those (safepath),
    so the quoted line names the very folder that was read."""
    if w.config_file:
        if w.config_file.startswith("hf:"):
            return w.config_file.removeprefix("hf:")
        path = Path(w.config_file)
        if w.config_file.startswith("~"):  # a shell does not expand ~ inside the quotes shlex adds
            with suppress(RuntimeError):  # pathlib's "Could not determine home directory"
                path = path.expanduser()
        folder = str(path.parent if path.name.endswith(".json") else path)
        return f"./{folder}" if folder.startswith("-") else folder
    return hf_repo


def max_sequences(w: ResolvedWorkload, capacity: int | None) -> int:
    """The engine's cap on concurrent sequences (vLLM --max-num-seqs, SGLang --max-running-requests): the batch
    where latency targets were planned at it; otherwise the larger of the batch and the sequences a replica's
    KV-cache memory holds at the full context (the capacity rule's max_concurrency), so the engine neither
    turns away the planned batch nor leaves the memory the plan frees unused."""
    if w.ttft_ms or w.tpot_ms:
        return max(1, w.batch_size)
    return max(1, w.batch_size, capacity or 0)


def option_comment(gpu: str, count: int, strategy: Any, devices: int = 1) -> str:
    """The shell comment that names the option a command line is for: GPU type, count and layout."""
    packages = f" ({devices} per package)" if devices > 1 else ""
    unit = "device" if devices > 1 else "GPU"
    layout = (f"tensor parallel {strategy.tensor_parallel}, pipeline parallel {strategy.pipeline_parallel}, "
              f"data parallel {strategy.data_parallel}, {strategy.nodes} node{'s' if strategy.nodes != 1 else ''}")
    return f"# {gpu} x {count} {unit}{'s' if count != 1 else ''}{packages}: {layout}"


def vllm_command(model: str, w: ResolvedWorkload, strategy: Any, reserve_fraction: float,
                 capacity: int | None = None) -> str:
    """`vllm serve` for one replica group: tensor x pipeline parallel, the reserve as gpu_memory_utilization."""
    args = ["vllm", "serve", model,
            "--tensor-parallel-size", str(strategy.tensor_parallel),
            "--pipeline-parallel-size", str(strategy.pipeline_parallel)]
    if strategy.data_parallel > 1:
        args += ["--data-parallel-size", str(strategy.data_parallel)]
    args += ["--gpu-memory-utilization", f"{round(1 - reserve_fraction, 4):g}",
             "--max-model-len", str(w.seq_len),
             "--max-num-seqs", str(max_sequences(w, capacity)),
             "--kv-cache-dtype", VLLM_KV_DTYPE.get(w.kv_cache_precision or "", "auto")]
    if w.precision in VLLM_DTYPE:
        args += ["--dtype", VLLM_DTYPE[w.precision]]
    if w.precision in VLLM_QUANTIZATION and w.checkpoint_precision != w.precision:
        args += ["--quantization", VLLM_QUANTIZATION[w.precision]]
    return shlex.join(args)


def sglang_command(model: str, w: ResolvedWorkload, strategy: Any, reserve_fraction: float,
                   activations_share: float, capacity: int | None = None) -> str:
    """`python -m sglang.launch_server` for one replica group. SGLang's --mem-fraction-static is the share of
    GPU memory for the weights and the KV-cache pool; the rest holds activations and CUDA graphs. With the
    reserve policy that is 1 - reserve - the plan's activations per GPU (a share of the GPU's memory), so the
    reserve still holds the runtime overhead."""
    args = ["python", "-m", "sglang.launch_server", "--model-path", model,
            "--tp-size", str(strategy.tensor_parallel)]
    if strategy.pipeline_parallel > 1:
        args += ["--pp-size", str(strategy.pipeline_parallel)]
    if strategy.data_parallel > 1:
        args += ["--dp-size", str(strategy.data_parallel)]
    args += ["--mem-fraction-static", f"{round(1 - reserve_fraction - activations_share, 4):g}",
             "--context-length", str(w.seq_len),
             "--max-running-requests", str(max_sequences(w, capacity)),
             "--kv-cache-dtype", SGLANG_KV_DTYPE.get(w.kv_cache_precision or "", "auto")]
    if w.precision in SGLANG_DTYPE:
        args += ["--dtype", SGLANG_DTYPE[w.precision]]
    if w.precision in SGLANG_QUANTIZATION and w.checkpoint_precision != w.precision:
        args += ["--quantization", SGLANG_QUANTIZATION[w.precision]]
    return shlex.join(args)


def trtllm_command(model: str, w: ResolvedWorkload, strategy: Any, capacity: int | None = None) -> str:
    """`trtllm-serve` for one replica group (TensorRT-LLM's trtllm-serve options --tp_size, --pp_size,
    --max_batch_size, --max_seq_len); the KV cache takes its default share of the free memory (kb/frameworks
    tensorrt-llm kv_cache_free_memory_fraction), as the plan counts it."""
    args = ["trtllm-serve", model, "--tp_size", str(strategy.tensor_parallel),
            "--pp_size", str(strategy.pipeline_parallel),
            "--max_batch_size", str(max_sequences(w, capacity)), "--max_seq_len", str(w.seq_len)]
    return shlex.join(args)


def llama_cpp_command(model: str, w: ResolvedWorkload, strategy: Any) -> str:
    """llama.cpp serves a GGUF file: convert the checkpoint (downloading a Hugging Face repo first), quantize 4-bit
    weights to Q4_0, then `llama-server` with every layer on the GPUs, one slot per request in flight
    (-np) and the context for all of them (-c: the slots share it), split by rows for tensor parallelism and by
    layers otherwise (tools/server/README.md)."""
    folder = model if not _is_repo(model) else model.rsplit("/", 1)[-1]
    steps = [["hf", "download", model, "--local-dir", folder]] if _is_repo(model) else []
    outtype = GGUF_OUTTYPE[w.precision]
    converted = f"{folder.rstrip('/')}-{outtype}.gguf"
    steps.append(["python", "convert_hf_to_gguf.py", folder, "--outtype", outtype, "--outfile", converted])
    served = converted
    if w.precision == "int4":
        served = f"{folder.rstrip('/')}-Q4_0.gguf"
        steps.append(["llama-quantize", converted, served, "Q4_0"])
    gpus = strategy.tensor_parallel * strategy.pipeline_parallel
    server = ["llama-server", "-m", served, "-ngl", "all", "-np", str(max(1, w.batch_size)),
              "-c", str(w.seq_len * max(1, w.batch_size))]
    if gpus > 1:
        server += ["-sm", "row" if strategy.tensor_parallel > 1 else "layer"]
    if w.kv_cache_precision in LLAMA_KV_TYPE:
        server += ["-ctk", LLAMA_KV_TYPE[w.kv_cache_precision], "-ctv", LLAMA_KV_TYPE[w.kv_cache_precision]]
    return " && ".join(shlex.join(step) for step in [*steps, server])


def _is_repo(model: str) -> bool:
    """A Hugging Face repo id (org/name), not a folder that was read (model_reference writes those with a path)."""
    return model.count("/") == 1 and not model.startswith((".", "/", "~")) and not Path(model).exists()


def launch_commands(model: str | None, w: ResolvedWorkload, strategy: Any, reserve_fraction: float,
                    plan: dict[str, Any] | None = None, has_fp8: bool = True,
                    capacity: int | None = None) -> dict[str, str]:
    """Engine name → command line; empty for training and for custom models (no checkpoint to name).

    An engine is left out where it has no setting for the workload: a 1-byte KV cache on a GPU without
    FP8 (neither engine has an int8 KV cache), int8/int4 weights for SGLang."""
    if w.task != "inference" or not model:
        return {}
    if w.kv_cache_precision in ("fp8", "int8") and not has_fp8:
        return {}
    commands = {"vllm": vllm_command(model, w, strategy, reserve_fraction, capacity)}
    if w.precision not in QUANTIZED_WEIGHTS:
        share = plan["activations"] / plan["capacity_bytes"] if plan else 0.0
        commands["sglang"] = sglang_command(model, w, strategy, reserve_fraction, share, capacity)
    # the engines the answer was not planned for keep to the two above; the one it was planned for gets its own
    if w.framework == "tensorrt-llm":
        commands["tensorrt-llm"] = trtllm_command(model, w, strategy, capacity)
    if w.framework == "llama.cpp" and w.precision in GGUF_OUTTYPE and w.kv_cache_precision != "fp8" \
            and not w.checkpoint_precision:
        commands["llama.cpp"] = llama_cpp_command(model, w, strategy)
    return commands


def missing(engine: str, w: ResolvedWorkload) -> Message:
    """Why an inference option has no command line for `engine` (see launch_commands)."""
    if engine == "llama.cpp":
        return message("launch_llama_cpp", precision=w.checkpoint_precision or w.precision,
                       kv=w.kv_cache_precision or "bf16")
    if w.kv_cache_precision in ("fp8", "int8"):
        return message("launch_no_fp8_kv", engine=engine)
    if engine == "sglang" and w.precision in QUANTIZED_WEIGHTS:
        return message("launch_sglang_quantized", precision=w.precision)
    return message("launch_needs_inference")
