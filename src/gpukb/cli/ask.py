"""`gpukb ask`: place a workload on GPUs. Its options mirror the Workload's fields; the answer is printed by
cli/answer_text.py (tables), as JSON, or as the full reasoning chain."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer

from .. import load_kb
from ..core.errors import ASK_ERRORS, KBError
from ..core.fmt import Lang
from ..core.messages import message
from ..core.safewrite import RefusedWrite, write_file
from .answer_text import print_answer
from .common import BAD_INPUT, NOTHING_FITS, Language, Offload, Optim, Precision, RootOption, Task, err, fail, fail_kb, out, page
from .launch_text import check as check_launch
from .launch_text import print_launch
from .usage import flag

# `--json` without `--trace`: the steps of the reasoning (nine tenths of the bytes) stay out, everything else is there
WITHOUT_TRACE: dict[str, Any] = {"trace": True, "options": {"__all__": {"trace"}}, "rejected": {"__all__": {"trace"}}}


def ask(
    task: Annotated[Task, typer.Option(help="what to do with the model")],
    model: Annotated[str | None, typer.Option(
        help="catalog model id (e.g. llama-3-8b; `gpukb list models`) or its Hugging Face repository "
             "(meta-llama/Llama-3.1-8B, read offline), a config.json or its folder, or hf:ORG/NAME (downloaded)")] = None,
    params: Annotated[str | None, typer.Option(help="parameter count of a custom model, e.g. 7B")] = None,
    layers: Annotated[int | None, typer.Option()] = None,
    hidden_size: Annotated[str | None, typer.Option(metavar="SIZE")] = None,
    heads: Annotated[int | None, typer.Option()] = None,
    kv_heads: Annotated[int | None, typer.Option()] = None,
    vocab_size: Annotated[str | None, typer.Option(metavar="SIZE")] = None,
    intermediate_size: Annotated[str | None, typer.Option(metavar="SIZE")] = None,
    mlp: Annotated[str | None, typer.Option(help="custom models: gated (SwiGLU) or standard")] = None,
    precision: Annotated[Precision | None, typer.Option()] = None,
    optimizer: Annotated[Optim | None, typer.Option()] = None,
    seq_len: Annotated[str | None, typer.Option(metavar="SIZE", help=(
        "tokens per sequence (default 4096); every SIZE reads 4k as 4,000, 4Ki as 4,096, also M, G, T (2T tokens)"))] = None,
    micro_batch_size: Annotated[str | None, typer.Option(metavar="SIZE", help="training sequences per GPU step")] = None,
    global_batch_size: Annotated[str | None, typer.Option(metavar="SIZE",
                                                          help="training and RL sequences per optimizer step")] = None,
    batch_size: Annotated[str | None, typer.Option(metavar="SIZE", help="inference concurrency")] = None,
    prompt_len: Annotated[str | None, typer.Option(metavar="SIZE", help="inference: prompt tokens per request")] = None,
    output_len: Annotated[str | None, typer.Option(metavar="SIZE", help="inference: output tokens per request")] = None,
    kv_cache_precision: Annotated[str | None, typer.Option(help="inference: bf16, fp16, fp8 or int8")] = None,
    ttft_ms: Annotated[float | None, typer.Option(help="inference: time-to-first-token target in ms")] = None,
    tpot_ms: Annotated[float | None, typer.Option(help="inference: time-per-output-token target in ms")] = None,
    request_rate: Annotated[float | None, typer.Option(
        help="inference under load: requests per second; P50/P99 latencies, max_rate and the replicas it needs")] = None,
    arrival: Annotated[str | None, typer.Option(help="with --request-rate: poisson (default) or constant")] = None,
    prompt_shape: Annotated[str | None, typer.Option(
        help="with --request-rate: fixed (default), exponential or uniform about --prompt-len")] = None,
    output_shape: Annotated[str | None, typer.Option(
        help="with --request-rate: fixed (default), exponential or uniform about --output-len")] = None,
    num_prompts: Annotated[str | None, typer.Option(metavar="SIZE",
        help="with --request-rate: requests the simulated run sends, as a benchmark's --num-prompts (default 200)")] = None,
    ttft_p50_ms: Annotated[float | None, typer.Option(help="with --request-rate: median TTFT target in ms")] = None,
    ttft_p99_ms: Annotated[float | None, typer.Option(help="with --request-rate: P99 TTFT target in ms")] = None,
    tpot_p50_ms: Annotated[float | None, typer.Option(help="with --request-rate: median TPOT target in ms")] = None,
    tpot_p99_ms: Annotated[float | None, typer.Option(help="with --request-rate: P99 TPOT target in ms")] = None,
    objective: Annotated[str | None, typer.Option(
        help="rank by speed (default), cost (cheapest per token) or gpus (fewest GPUs, then speed)")] = None,
    region: Annotated[str | None, typer.Option(
        help="training: ISO 3166 country code whose grid intensity sets the CO₂ (us default, fr, de, cn, ...)")] = None,
    activation_checkpointing: Annotated[bool | None, typer.Option(
        "--activation-checkpointing/--no-activation-checkpointing", help="default: the engine decides")] = None,
    flash_attention: Annotated[bool | None, typer.Option(
        "--flash-attention/--no-flash-attention", help="training: fused attention (default on)")] = None,
    flash_attention_version: Annotated[int | None, typer.Option(
        help="training: FlashAttention generation, 2 (default) or 1 (FlashAttention-1, xformers)")] = None,
    lora_rank: Annotated[str | None, typer.Option(metavar="SIZE")] = None,
    gpu_count: Annotated[str | None, typer.Option(metavar="SIZE", help="most GPUs usable")] = None,
    gpu: Annotated[list[str] | None, typer.Option(
        "--gpu", help="candidate GPU id (repeat; `gpukb list gpus`); default all")] = None,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="system id the plans may run on and rent (repeat; `gpukb list systems`); default any")] = None,
    tokens: Annotated[str | None, typer.Option(metavar="SIZE", help="training tokens, e.g. 2T: enables time-to-train")] = None,
    deadline_days: Annotated[float | None, typer.Option(
        help="training with --tokens: days the run may take; each GPU type is sized (whole nodes past one) to "
             "finish within it (pre-training defaults to the horizon of policy pretrain-horizon)")] = None,
    zero_stage: Annotated[int | None, typer.Option()] = None,
    tensor_parallel: Annotated[int | None, typer.Option()] = None,
    pipeline_parallel: Annotated[int | None, typer.Option()] = None,
    expert_parallel: Annotated[int | None, typer.Option(
        help="full training of a mixture of experts: GPUs its routed experts are split over")] = None,
    context_parallel: Annotated[int | None, typer.Option(
        help="training: GPUs each sequence is split over (context parallelism, ring attention)")] = None,
    virtual_pipeline_stages: Annotated[int | None, typer.Option(
        help="training with --pipeline-parallel: model chunks per pipeline rank (interleaved 1F1B)")] = None,
    tp_comm_overlap: Annotated[bool | None, typer.Option(
        "--tp-comm-overlap/--no-tp-comm-overlap",
        help="training: the framework overlaps tensor-parallel traffic with GEMMs (default off)")] = None,
    master_weights: Annotated[bool | None, typer.Option(
        "--master-weights/--no-master-weights",
        help="training in 16 bit: keep an fp32 master copy (default); --no-master-weights: pure bf16 (torchtune)")] = None,
    optimizer_in_backward: Annotated[bool | None, typer.Option(
        "--optimizer-in-backward/--no-optimizer-in-backward",
        help="full training: step each parameter in the backward pass, one gradient alive at a time")] = None,
    offload: Annotated[Offload | None, typer.Option()] = None,
    placement: Annotated[str | None, typer.Option(help="fewest (default) or all: use exactly --gpu-count GPUs")] = None,
    framework: Annotated[str | None, typer.Option(help=(
        "the stack: training hf, torchtune, fsdp, deepspeed, megatron, unsloth; serving vllm, sglang, tensorrt-llm, "
        "llama.cpp, hf; default per task from kb/frameworks, stated in the answer"))] = None,
    rollout_batch: Annotated[str | None, typer.Option(
        metavar="SIZE", help="RL (grpo, ppo): prompts per step; dpo: pairs per step")] = None,
    samples_per_prompt: Annotated[str | None, typer.Option(
        metavar="SIZE", help="RL: responses per prompt (GRPO's group size)")] = None,
    response_len: Annotated[str | None, typer.Option(metavar="SIZE", help="RL: the longest response, in tokens")] = None,
    mean_response_len: Annotated[str | None, typer.Option(metavar="SIZE",
        help="RL: the responses' average length (default response_len: all run to the cap)")] = None,
    rl_placement: Annotated[str | None, typer.Option(
        help="RL: colocated (generation and training take turns on the same GPUs) or split (rollout GPUs of their "
             "own); default: the planner chooses and says which")] = None,
    rollout_tensor_parallel: Annotated[int | None, typer.Option(
        help="RL: the rollout engine's tensor-parallel size (default: sized by memory)")] = None,
    reference_model: Annotated[str | None, typer.Option(help="RL: the frozen reference (default the policy; none)")] = None,
    reward_model: Annotated[str | None, typer.Option(help="RL: a reward model (default none: a rule-based reward)")] = None,
    critic_model: Annotated[str | None, typer.Option(help="ppo: the critic (default the policy's model)")] = None,
    reference_precision: Annotated[Precision | None, typer.Option(help="RL: the reference's precision")] = None,
    reward_precision: Annotated[Precision | None, typer.Option(help="RL: the reward model's precision")] = None,
    critic_precision: Annotated[Precision | None, typer.Option(help="ppo: the critic's precision")] = None,
    as_json: Annotated[bool, typer.Option(
        "--json", help="print the Answer as JSON: options, findings, remedies; the trace too with --trace")] = False,
    trace: Annotated[bool, typer.Option(
        "--trace", help="with --json: also every trace step, the answer's and each option's (megabytes)")] = False,
    launch: Annotated[bool, typer.Option("--launch", help=(
        "inference: after the answer, the first option's command line for the framework it was planned for "
        "(vllm by default; --framework sglang, tensorrt-llm or llama.cpp for theirs)"))] = False,
    energy_scope: Annotated[str | None, typer.Option(help=(
        "training: what energy and CO₂ count: gpu (as model cards do), node (whole servers) or facility (default: "
        "servers x PUE)"))] = None,
    pue: Annotated[float | None, typer.Option(help="training: your data centre's PUE (default policy datacenter-pue)")] = None,
    explain: Annotated[bool, typer.Option("--explain", help="print the full reasoning chain")] = False,
    plot: Annotated[bool, typer.Option("--plot", help=(
        "with --request-rate: also draw the first option's P50/P99 latency against the rate, the knee marked"))] = False,
    plot_svg: Annotated[Path | None, typer.Option(
        metavar="FILE", help="with --request-rate: write that plot as an SVG file")] = None,
    lang: Annotated[Language, typer.Option(help="language of the text: en or zh (JSON is always English)")] = Language.en,
    root: RootOption = None,
) -> None:
    """Place a workload on GPUs: memory breakdown, options, rejected GPUs, findings, remedies."""
    values: dict[str, Any] = {
        "task": task, "model": model, "params": params, "layers": layers, "hidden_size": hidden_size,
        "heads": heads, "kv_heads": kv_heads, "vocab_size": vocab_size, "intermediate_size": intermediate_size,
        "precision": precision, "optimizer": optimizer, "seq_len": seq_len, "micro_batch_size": micro_batch_size,
        "batch_size": batch_size, "activation_checkpointing": activation_checkpointing,
        "flash_attention": flash_attention, "flash_attention_version": flash_attention_version, "lora_rank": lora_rank,
        "gpu_count": gpu_count, "gpus": gpu or None, "systems": system or None, "tokens": tokens, "zero_stage": zero_stage,
        "tensor_parallel": tensor_parallel, "pipeline_parallel": pipeline_parallel, "offload": offload,
        "expert_parallel": expert_parallel, "tp_comm_overlap": tp_comm_overlap,
        "virtual_pipeline_stages": virtual_pipeline_stages, "context_parallel": context_parallel,
        "master_weights": master_weights, "optimizer_in_backward": optimizer_in_backward,
        "mlp": mlp, "global_batch_size": global_batch_size, "prompt_len": prompt_len, "output_len": output_len,
        "kv_cache_precision": kv_cache_precision, "placement": placement, "ttft_ms": ttft_ms, "tpot_ms": tpot_ms,
        "request_rate": request_rate, "arrival": arrival, "prompt_shape": prompt_shape, "output_shape": output_shape,
        "num_prompts": num_prompts,
        "ttft_p50_ms": ttft_p50_ms, "ttft_p99_ms": ttft_p99_ms, "tpot_p50_ms": tpot_p50_ms, "tpot_p99_ms": tpot_p99_ms,
        "objective": objective, "framework": framework, "deadline_days": deadline_days, "region": region,
        "energy_scope": energy_scope, "pue": pue,
        "rollout_batch": rollout_batch, "samples_per_prompt": samples_per_prompt, "response_len": response_len,
        "mean_response_len": mean_response_len, "rl_placement": rl_placement,
        "rollout_tensor_parallel": rollout_tensor_parallel, "reference_model": reference_model,
        "reward_model": reward_model,
        "critic_model": critic_model, "reference_precision": reference_precision,
        "reward_precision": reward_precision, "critic_precision": critic_precision,
    }
    workload = {k: (v.value if isinstance(v, Enum) else v) for k, v in values.items() if v is not None}
    if trace and not as_json:
        fail(message("trace_needs_json"), BAD_INPUT, lang.value)
    try:
        kb = load_kb(root)
        answer = kb.ask(workload)
    except KBError as error:
        fail_kb(error, lang.value)
    except ASK_ERRORS as error:
        fail(error, BAD_INPUT, lang.value, named=flag)
    command = check_launch(answer, lang.value) if launch else None  # exits 2 before any output where none can be
    if (plot or plot_svg) and answer.workload.request_rate is None:
        fail(message("plot_needs_rate"), BAD_INPUT, lang.value)
    if as_json:
        sys.stdout.write(answer.model_dump_json(indent=2, exclude=None if trace else WITHOUT_TRACE) + "\n")
    elif explain:
        page(answer.explain(lang.value))
    else:
        print_answer(answer, lang.value, kb)
    if command is not None and not as_json:  # JSON carries each option's command lines itself
        print_launch(answer, command, kb, lang.value)
    if plot or plot_svg:
        _plot(answer, plot, plot_svg, lang.value)
    late = deadline_days is not None and answer.summary is not None and answer.summary.deadline_met is False
    if not answer.options or late:  # nothing fits, or nothing in time: a script must not read the table as an answer
        if as_json or explain:  # the headline on stderr too, where the output itself is for a program or a reader
            page(answer.summary.lines(lang.value)[0] if answer.summary else "nothing fits", err)
        raise typer.Exit(NOTHING_FITS)


def _plot(answer: Any, show: bool, to: Path | None, lang: Lang) -> None:
    """The latency-against-rate curve of the first option: in the terminal, to an SVG file, or both."""
    from ..contrib.loadchart import svg, terminal
    from ..estimate.load import curve
    drawn = curve(answer)
    if drawn is None:
        return
    if show:
        out.print(terminal(drawn, out.width, lang), markup=False, highlight=False, soft_wrap=True)
    if to is not None:
        try:
            write_file(to.parent, to.name, svg(drawn, lang), replace=True)
        except RefusedWrite as error:
            fail(f"{to}: {error}", BAD_INPUT, lang)
