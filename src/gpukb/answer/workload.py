"""The question: a workload, validated, then resolved against the catalog.

`Workload` is what users write (unknown fields rejected); `ResolvedWorkload` is the same
question with defaults applied and the model's architecture filled in, as the Answer shows it.
"""

from __future__ import annotations

import itertools
import math
import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from ..core import ranges
from ..core.errors import Invalid, WorkloadError
from ..core.messages import message, pydantic_message

Task = Literal["pretrain", "full_finetune", "lora", "qlora", "inference", "grpo", "ppo", "dpo"]
Precision = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
OptimizerId = Literal["adamw", "adamw_8bit", "sgd", "sgd_momentum", "adafactor"]
Offload = Literal["none", "optimizer", "optimizer+params"]
Placement = Literal["fewest", "all"]
Mlp = Literal["gated", "standard"]
KvPrecision = Literal["bf16", "fp16", "fp8", "int8"]
Objective = Literal["speed", "cost", "gpus"]
EnergyScope = Literal["gpu", "node", "facility"]  # what a training option's energy_kwh and co2_kg count
RlPlacement = Literal["colocated", "split"]
Arrival = Literal["poisson", "constant"]  # how requests arrive under load (gpukb.estimate.loadsim)
# a length's distribution about its stated mean: every request the same, exponential (ShareGPT-like chat: many short,
# a long tail), or uniform from 1 to twice the mean
LengthShape = Literal["fixed", "exponential", "uniform"]
# the fields that describe serving under load; all but request_rate need it
LOAD_FIELDS = ("request_rate", "arrival", "prompt_shape", "output_shape", "num_prompts", "ttft_p50_ms", "ttft_p99_ms",
               "tpot_p50_ms", "tpot_p99_ms")
# The stacks a workload may name (kb/frameworks holds what each keeps in memory and which task defaults to it)
FrameworkId = Literal["hf", "torchtune", "fsdp", "deepspeed", "megatron", "unsloth", "vllm", "vllm-v0", "sglang",
                      "tensorrt-llm", "llama.cpp", "lmdeploy", "mlc-llm", "exllamav2", "gpt-fast"]
TRAINING_TASKS = ("pretrain", "full_finetune", "lora", "qlora")
# RL post-training: a trained policy beside a frozen reference (and a reward model, a critic for PPO); GRPO
# and PPO generate their own samples (rollouts), DPO learns from fixed preference pairs (gpukb.estimate.rl)
RL_TASKS = ("grpo", "ppo", "dpo")
# What an RL workload sets for the models it plans (gpukb.estimate.rl); each is planned as a training or a serving job
RL_FIELDS = ("rollout_batch", "samples_per_prompt", "response_len", "mean_response_len", "rl_placement",
             "rollout_tensor_parallel", "reference_model", "reward_model", "critic_model", "reference_precision",
             "reward_precision", "critic_precision")
# Fields of other tasks that an RL workload derives itself (seq_len = prompt_len + response_len) or that its
# planner does not combine with several models on the same GPUs (global_batch_size, the trained roles' optimizer
# batch, is the step's sequences unless given)
RL_EXCLUDED = ("seq_len", "batch_size", "output_len", "tokens", "deadline_days", "ttft_ms",
               "tpot_ms", *LOAD_FIELDS, "lora_rank", "offload", "expert_parallel", "context_parallel", "virtual_pipeline_stages",
                "optimizer_in_backward", "energy_scope", "pue")
MAX_PARAMS = ranges.ARCHITECTURE["params"]  # 10 trillion: beyond any published dense or MoE model
# A custom model's `params` must lie within this factor of the count its architecture implies
# (gpukb.knowledge.architecture, untied embeddings assumed): wide enough for unknown biases, tied embeddings
# and MLP widths, narrow enough to catch a dimension or a count off by an order of magnitude.
CUSTOM_PARAMS_TOLERANCE = 2.0

# Sizes read the same in every field that counts something (tokens, sequences, requests, widths, GPUs): a plain
# number, or a number with a decimal suffix (k or K 10^3, M 10^6, G or B 10^9, T 10^12: '4k' is 4,000, '2T' tokens,
# '7B' parameters) or a binary one (Ki 2^10, Mi 2^20, Gi 2^30, Ti 2^40: '4Ki' is 4,096, a context window's length)
_SUFFIX = {"": 1, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12,
           "KI": 2**10, "MI": 2**20, "GI": 2**30, "TI": 2**40}
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*((?:[KMGT]i?|B)?)", re.IGNORECASE)


def read_size(value: str) -> int:
    """'4k' -> 4000, '4Ki' -> 4096, '7B' -> 7e9, '70e9', '2T', '1_000'; anything else, or a number that is not
    whole (a fraction of a token), is an Invalid naming the text."""
    text = value.strip().replace("_", "").replace(",", "")
    match = _SIZE.fullmatch(text)
    if not match or len(match[1]) > 40:
        raise Invalid("", "count_unreadable", value=value)
    number = Decimal(match[1]) * _SUFFIX[match[2].upper()]  # exact: '6.74B' is 6,740,000,000, not 6,739,999,999.9
    if not number.is_finite() or number > 10**30:
        raise Invalid("", "count_too_large", value=value)
    if number != number.to_integral_value():
        raise Invalid("", "count_not_whole", value=value)
    return int(number)


def _integer(value: Any) -> Any:
    """Booleans are ints to Python, not counts to a user: `seq_len: true` is an error, not 1."""
    if isinstance(value, bool):
        raise Invalid("", "whole_number", value=str(value).lower())
    return value


def _count(value: Any) -> Any:
    """A size written as text ('4k', '7B', '70e9', '2T', '4Ki') -> its whole number; other values pass through to
    validation (which refuses a fraction)."""
    value = _integer(value)
    if isinstance(value, str):
        return read_size(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


# More candidate GPU ids than any catalog holds (the packaged one has 28; tests ask one of 1,028): `gpus`
# is read up to one past this, so an endless iterable is an error rather than all the memory there is.
MAX_GPU_IDS = 10_000


def _gpu_ids(value: Any) -> Any:
    """At most MAX_GPU_IDS + 1 items of any iterable, read lazily; other values pass to validation."""
    if value is None or isinstance(value, str | bytes | dict):
        return value  # validation names what it is
    try:
        items = iter(value)
    except TypeError:
        return value
    head = list(itertools.islice(items, MAX_GPU_IDS + 1))
    if len(head) > MAX_GPU_IDS:
        raise Invalid("", "too_many_gpu_ids", limit=MAX_GPU_IDS)
    return head


Count = Annotated[int, BeforeValidator(_count)]
Int = Annotated[int, BeforeValidator(_integer)]


def _number(value: Any) -> Any:
    """`deadline_days: true` is an error, not 1.0 days."""
    if isinstance(value, bool):
        raise Invalid("", "not_a_number", value=str(value).lower())
    return value


def _plausible(quantity: str) -> AfterValidator:
    """Inside the quantity's plausible range (core.ranges): 1e-310 days is an error naming the field, not an
    overflow deep in a plan."""
    low, high = ranges.RANGES[quantity]

    def check(value: float | None) -> float | None:
        if value is not None and not low <= value <= high:
            raise Invalid("", "out_of_range", value=value, low=low, high=high)
        return value
    return AfterValidator(check)


Milliseconds = Annotated[float, BeforeValidator(_number), _plausible("milliseconds")]
RequestRate = Annotated[float, BeforeValidator(_number), _plausible("request_rate")]
Days = Annotated[float, BeforeValidator(_number), _plausible("days")]


class Workload(BaseModel):
    """An LLM workload to place on GPUs. Unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, description="catalog model id, e.g. 'llama-3-8b', or the path to a "
                                                         "Hugging Face config.json (or its folder), or hf:ORG/NAME")
    params: Count | None = Field(default=None, gt=0, le=MAX_PARAMS)
    layers: Int | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["layers"])
    hidden_size: Count | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["hidden_size"])
    heads: Int | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["heads"])
    kv_heads: Int | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["kv_heads"])
    vocab_size: Count | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["vocab_size"])
    intermediate_size: Count | None = Field(default=None, gt=0, le=ranges.ARCHITECTURE["intermediate_size"])
    mlp: Mlp | None = Field(default=None, description="custom models: 'gated' (SwiGLU, 3 matrices) or 'standard' (2)")
    task: Task
    precision: Precision = "bf16"
    optimizer: OptimizerId | None = Field(default=None, description="default adamw for training")
    seq_len: Count = Field(default=4096, gt=0, le=ranges.ARCHITECTURE["context_length"])
    micro_batch_size: Count = Field(default=1, gt=0, le=65536)
    global_batch_size: Count | None = Field(default=None, gt=0, le=10_000_000,
                                          description="training and RL: sequences per optimizer step (sets gradient "
                                                      "accumulation; RL: the step's sequences unless given)")
    batch_size: Count = Field(default=1, gt=0, le=65536, description="inference concurrency")
    prompt_len: Count | None = Field(default=None, gt=0, le=10_000_000, description="inference: prompt tokens per request")
    output_len: Count | None = Field(default=None, gt=0, le=10_000_000, description="inference: output tokens per request")
    kv_cache_precision: KvPrecision | None = Field(default=None, description="inference: KV-cache format (default 16-bit)")
    ttft_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                  description="inference: SLA target for the time to the first token, in ms")
    tpot_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                  description="inference: SLA target for the time per output token, in ms")
    request_rate: RequestRate | None = Field(default=None, gt=0, allow_inf_nan=False, description=(
        "inference under load: requests arriving per second over all replicas; the answer simulates the engine's "
        "scheduler and gives P50/P99 latencies, the highest rate that meets the targets and the replicas this rate needs"))
    arrival: Arrival = Field(default="poisson", description=(
        "with request_rate: 'poisson' (independent users, exponential gaps) or 'constant' (evenly spaced)"))
    prompt_shape: LengthShape = Field(default="fixed", description=(
        "with request_rate: prompt_len is every prompt's length ('fixed') or the mean of an 'exponential' or "
        "'uniform' distribution"))
    output_shape: LengthShape = Field(default="fixed", description="with request_rate: output_len's shape, as prompt_shape")
    # bounded: a simulated run's time grows with its requests (gpukb.estimate.loadsim), and a full-catalog ask
    # bisects each GPU type's highest rate over the whole run: 2,400 prompts, the longest load test measured, take
    # 2.2 s on one core, 10,000 took 17 s
    num_prompts: Count | None = Field(default=None, gt=0, le=2_500, description=(
        "with request_rate: how many requests the simulated run sends from an idle server, as a serving benchmark's "
        "--num-prompts (a short run's queue has less time to build); default 200, as vLLM's nightly benchmark"))
    ttft_p50_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                             description="with request_rate: median time-to-first-token target, in ms")
    ttft_p99_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                             description="with request_rate: P99 time-to-first-token target, in ms")
    tpot_p50_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                             description="with request_rate: median time-per-output-token target, in ms")
    tpot_p99_ms: Milliseconds | None = Field(default=None, gt=0, allow_inf_nan=False,
                                             description="with request_rate: P99 time-per-output-token target, in ms")
    objective: Objective = Field(default="speed", description=(
        "rank options by 'speed' (default: the shortest time, the most tokens/s), 'cost' (the cheapest per token) "
        "or 'gpus' (the fewest GPUs, then speed)"))
    region: str | None = Field(default=None, pattern=r"^[a-z]{2}$", description=(
        "training: where the run draws its electricity, a lower-case ISO 3166 country code ('us', 'fr', 'de'); "
        "sets the grid intensity of co2_kg (policies grid-intensity-<code>); default 'us'"))
    energy_scope: EnergyScope = Field(default="facility", description=(
        "training: what energy_kwh and co2_kg count: 'gpu' (the GPU boards, as model cards count), 'node' (the "
        "servers) or 'facility' (default: the servers times the data centre's PUE)"))
    pue: Annotated[float, BeforeValidator(_number)] | None = Field(
        default=None, ge=1.0, le=5.0, allow_inf_nan=False, description=(
        "training: the data centre's power usage effectiveness (facility over IT power) for energy_scope "
        "facility; default the policy datacenter-pue"))
    activation_checkpointing: bool | None = None
    flash_attention: bool = Field(default=True, description=(
        "training: fused (flash) attention keeps the s×s attention scores out of GPU memory; false for stacks "
        "without it (before mid-2022, Volta GPUs): the scores are stored and cross memory twice"))
    flash_attention_version: Literal[1, 2] = Field(default=2, description=(
        "training with flash_attention: the kernel generation the attention runs on: 2 (default: FlashAttention-2, "
        "the stacks since mid-2023) or 1 (FlashAttention-1 or xformers' memory-efficient kernel, mid-2022 to "
        "mid-2023), which computes attention at under half FlashAttention-2's rate"))
    lora_rank: Count = Field(default=16, gt=0, le=65536)
    gpu_count: Count | None = Field(default=None, gt=0, le=1_000_000)
    gpus: Annotated[list[str] | None, BeforeValidator(_gpu_ids)] = Field(default=None, min_length=1)
    systems: Annotated[list[str] | None, BeforeValidator(_gpu_ids)] = Field(default=None, min_length=1, description=(
        "ids of the systems (kb/systems: nodes, instances, workstations) the plans may run on and rent; their GPUs "
        "are the candidates (with `gpus` too, only the GPUs both name)"))
    tokens: Count | None = Field(default=None, gt=0, le=10**16)
    deadline_days: Days | None = Field(default=None, gt=0, le=3650, allow_inf_nan=False, description=(
        "training with tokens: days the run may take; each GPU type gets the GPUs (whole nodes past one node) "
        "that train the tokens within it; with placement 'all' the gpu_count GPUs stay, and the answer says whether "
        "and by how much they meet it"))
    zero_stage: Int | None = Field(default=None, ge=0, le=3)
    tensor_parallel: Int | None = Field(default=None, gt=0, le=512)
    pipeline_parallel: Int | None = Field(default=None, gt=0, le=1024)
    expert_parallel: Int | None = Field(default=None, gt=0, le=1024, description=(
        "full training of a mixture-of-experts model: its routed experts split over this many data-parallel "
        "GPUs (expert parallelism, a divisor of the experts), tokens sent to them by all-to-all"))
    context_parallel: Int | None = Field(default=None, gt=0, le=1024, description=(
        "training: GPUs each sequence is split over (context parallelism: ring attention passes the keys and "
        "values around them); activations divide by it, ZeRO shards over data x context ranks"))
    virtual_pipeline_stages: Int | None = Field(default=None, gt=0, le=128, description=(
        "training with pipeline_parallel: model chunks per pipeline rank in the interleaved 1F1B schedule "
        "(Megatron's virtual pipeline, NeMo's VP); the bubble shrinks by this factor"))
    tp_comm_overlap: bool = Field(default=False, description=(
        "training: the framework hides tensor-parallel traffic under the GEMMs it feeds (Megatron-Core "
        "--tp-comm-overlap, torchtitan async TP); default false: the traffic sits between them"))
    master_weights: bool = Field(default=True, description=(
        "training in 16 bit: keep an fp32 master copy of the weights (mixed precision, the default); false: pure "
        "16-bit training, the optimizer updates the 16-bit weights and keeps its states in their dtype (torchtune)"))
    optimizer_in_backward: bool = Field(default=False, description=(
        "full training: each parameter is stepped as soon as its gradient is complete and the gradient freed "
        "(torchtune optimizer_in_bwd, PyTorch post-accumulate-grad hooks): one tensor's gradient at a time, "
        "and no gradient accumulation"))
    offload: Offload | None = None
    placement: Placement = Field(default="fewest", description="'fewest' GPUs that fit, or 'all' gpu_count GPUs")
    framework: FrameworkId | None = Field(default=None, description=(
        "the stack it runs on: training hf, torchtune, fsdp, deepspeed, megatron, unsloth; serving vllm, sglang, "
        "tensorrt-llm, llama.cpp, hf (also vllm-v0 for vLLM's V0 engine, the default before 0.8, lmdeploy, "
        "mlc-llm, exllamav2, gpt-fast); null = the task's default (kb/frameworks), stated in the answer"))
    # RL post-training (tasks grpo, ppo, dpo): the policy is `model`, trained in `precision`
    rollout_batch: Count | None = Field(default=None, gt=0, le=1_000_000, description=(
        "RL: prompts per step (grpo, ppo), or preference pairs per step (dpo)"))
    samples_per_prompt: Count | None = Field(default=None, gt=0, le=4096, description=(
        "RL: responses generated per prompt (GRPO's group size; ppo default 1)"))
    response_len: Count | None = Field(default=None, gt=0, le=10_000_000, description=(
        "RL: the longest response a rollout may generate, in tokens (dpo: the responses' length)"))
    mean_response_len: Count | None = Field(default=None, gt=0, le=10_000_000, description=(
        "RL (grpo, ppo): the responses' average length; default response_len (every response runs to the cap). "
        "Training and scoring count the average, generation lasts until the longest response"))
    rl_placement: RlPlacement | None = Field(default=None, description=(
        "RL: 'colocated' (generation and training take turns on the same GPUs, the KV cache freed before the "
        "optimizer runs) or 'split' (the rollout engine on GPUs of its own); null = the planner chooses and says which"))
    rollout_tensor_parallel: Int | None = Field(default=None, gt=0, le=64, description=(
        "RL (grpo, ppo): the rollout engine's tensor-parallel size (verl rollout.tensor_model_parallel_size, NeMo RL "
        "vllm_cfg.tensor_parallel_size, OpenRLHF --vllm_tensor_parallel_size); default: the planner sizes the "
        "engines by memory and says which"))
    reference_model: str | None = Field(default=None, description=(
        "RL: the frozen reference model (catalog id or config.json); default the policy's model; 'none' for a run "
        "without a KL term"))
    reward_model: str | None = Field(default=None, description=(
        "RL (grpo, ppo): a learned reward model (catalog id or config.json); default none: a rule-based reward"))
    critic_model: str | None = Field(default=None, description="ppo: the trained critic (value model); default the policy's")
    reference_precision: Precision | None = Field(default=None, description="RL: the reference precision (default: the policy's)")
    reward_precision: Precision | None = Field(default=None, description="RL: the reward model precision (default: the policy's)")
    critic_precision: Precision | None = Field(default=None, description="ppo: the critic's precision (default: the policy's)")

    @model_validator(mode="after")
    def _fits_together(self) -> Workload:
        given = self.model_fields_set
        if (self.model is None) == (self.params is None):
            raise Invalid("", "model_or_params")
        if self.task in RL_TASKS:
            _check_rl(self, given)
        elif given & set(RL_FIELDS):
            raise Invalid(sorted(given & set(RL_FIELDS))[0], "rl_only")
        if self.task in RL_TASKS:
            pass
        elif self.task == "inference":
            _check_load(self, given)
            for name in ("optimizer", "activation_checkpointing", "flash_attention", "flash_attention_version",
                         "zero_stage", "offload",
                         "micro_batch_size", "tokens", "deadline_days", "lora_rank", "global_batch_size",
                         "tp_comm_overlap", "master_weights", "optimizer_in_backward", "virtual_pipeline_stages",
                         "context_parallel", "energy_scope", "pue"):
                if name in given:
                    raise Invalid(name, "not_for_inference")
        else:
            if self.precision in ("int8", "int4"):
                raise Invalid("precision", "precision_inference_only", precision=self.precision)
            if "batch_size" in given:
                raise Invalid("batch_size", "batch_size_training")
            for name in ("prompt_len", "output_len", "kv_cache_precision", "ttft_ms", "tpot_ms"):
                if name in given:
                    raise Invalid(name, "inference_only")
            for name in LOAD_FIELDS:
                if name in given:
                    raise Invalid(name, "inference_only_load")
            if self.global_batch_size is not None and self.global_batch_size % self.micro_batch_size:
                raise Invalid("global_batch_size", "global_batch_multiple", global_batch_size=self.global_batch_size,
                              micro_batch_size=self.micro_batch_size)
            if "lora_rank" in given and self.task not in ("lora", "qlora"):
                raise Invalid("lora_rank", "lora_rank_task")
            if self.offload == "optimizer+params" and self.zero_stage not in (None, 3):
                raise Invalid("offload", "offload_needs_zero3")
            for name in ("context_parallel", "expert_parallel"):  # the planner offers no offload layout with them
                if getattr(self, name) not in (None, 1) and self.offload not in (None, "none"):
                    raise Invalid(name, "no_offload_with")
            if self.context_parallel and self.seq_len % self.context_parallel:
                raise Invalid("context_parallel", "context_parallel_divides", context_parallel=self.context_parallel,
                              seq_len=self.seq_len)
        if self.deadline_days is not None and self.tokens is None and self.task != "inference":
            raise Invalid("deadline_days", "deadline_needs_tokens")
        if (self.virtual_pipeline_stages or 1) > 1 and (self.pipeline_parallel or 1) < 2:
            raise Invalid("virtual_pipeline_stages", "virtual_stages_need_pipeline")
        if self.optimizer_in_backward and self.task not in ("full_finetune", "pretrain"):
            raise Invalid("optimizer_in_backward", "backward_step_task")
        if self.optimizer_in_backward and self.global_batch_size is not None:
            raise Invalid("optimizer_in_backward", "backward_step_accumulation")
        if self.expert_parallel is not None and self.task not in ("full_finetune", "pretrain"):
            raise Invalid("expert_parallel", "expert_parallel_task")
        if self.mlp is not None and self.model is not None:
            raise Invalid("mlp", "mlp_from_model")
        if "flash_attention_version" in given and not self.flash_attention:
            raise Invalid("flash_attention_version", "flash_version_needs_flash")
        if self.placement == "all" and self.gpu_count is None:
            raise Invalid("placement", "placement_needs_count")
        if self.gpu_count is not None:
            needed = ((self.tensor_parallel or 1) * (self.pipeline_parallel or 1) * (self.expert_parallel or 1)
                      * (self.context_parallel or 1))
            if needed > self.gpu_count:
                raise Invalid("gpu_count", "gpu_count_too_few", gpu_count=self.gpu_count, needed=needed)
        return self


def _check_load(w: Workload, given: set[str]) -> None:
    """Serving under load needs a rate and the requests' lengths; its concurrency and targets are the load's own."""
    if w.request_rate is None:
        for name in LOAD_FIELDS:
            if name in given:
                raise Invalid(name, "load_needs_rate")
        return
    for name in ("prompt_len", "output_len"):
        if getattr(w, name) is None:
            raise Invalid(name, "load_needs_lengths")
    for name, instead in (("batch_size", "request_rate"), ("ttft_ms", "ttft_p50_ms / ttft_p99_ms"),
                          ("tpot_ms", "tpot_p50_ms / tpot_p99_ms")):
        if name in given:
            raise Invalid(name, "load_excludes", instead=instead)
    for kind in ("ttft", "tpot"):
        median, tail = getattr(w, f"{kind}_p50_ms"), getattr(w, f"{kind}_p99_ms")
        if median is not None and tail is not None and tail < median:
            raise Invalid(f"{kind}_p99_ms", "load_p99_below_p50", p99=tail, p50=median)


def _check_rl(w: Workload, given: set[str]) -> None:
    """An RL workload names its batch and lengths, and only the models and fields its task has."""
    for name in RL_EXCLUDED:
        if name in given:
            raise Invalid(name, "rl_excluded", task=w.task)
    if w.objective == "cost":  # RL options carry no price: ranking them by one would be ranking by nothing
        raise Invalid("objective", "rl_no_cost")
    missing = [name for name in ("rollout_batch", "prompt_len", "response_len") if getattr(w, name) is None]
    if missing:  # all of them at once: a command line that lacks three fields is not sent back three times
        group = ["samples_per_prompt"] if w.task == "grpo" and w.samples_per_prompt is None else []
        if others := [*missing[1:], *group]:
            raise Invalid(missing[0], "rl_needed_also", task=w.task, others=others)  # joined as each language lists
        raise Invalid(missing[0], "rl_needed", task=w.task)
    if w.task == "grpo" and w.samples_per_prompt is None:
        raise Invalid("samples_per_prompt", "rl_group_size")
    if w.task == "dpo":
        for name in ("samples_per_prompt", "rl_placement", "reward_model", "reward_precision", "kv_cache_precision",
                     "mean_response_len", "rollout_tensor_parallel"):
            if name in given:
                raise Invalid(name, "rl_dpo_generates_nothing")
    if w.task != "ppo":
        for name in ("critic_model", "critic_precision"):
            if name in given:
                raise Invalid(name, "rl_critic_ppo_only")
    if w.mean_response_len is not None and w.response_len is not None and w.mean_response_len > w.response_len:
        raise Invalid("mean_response_len", "rl_mean_too_long", mean=w.mean_response_len, longest=w.response_len)
    if w.reference_model == "none" and "reference_precision" in given:
        raise Invalid("reference_precision", "rl_no_reference")
    if w.reward_model in (None, "none") and "reward_precision" in given:
        raise Invalid("reward_precision", "rl_no_reward_model")
    if w.precision in ("int8", "int4"):
        raise Invalid("precision", "rl_trained_role_quantized", precision=w.precision, role="policy")
    if w.placement == "all" and w.task != "dpo" and w.rl_placement == "split" and w.gpu_count is not None \
            and w.gpu_count < 2:
        raise Invalid("gpu_count", "rl_split_needs_two")
    if w.critic_precision in ("int8", "int4"):
        raise Invalid("critic_precision", "rl_trained_role_quantized", precision=w.critic_precision, role="critic")
    sequences = w.rollout_batch * (2 if w.task == "dpo" else w.samples_per_prompt or 1)  # type: ignore[operator]
    # the step's sequences are the trained roles' global batch and the rollout engine's batch, its lengths their
    # sequence length (gpukb.estimate.rl.role_workloads): bounded here, in the fields the user set
    given = "rollout_batch × 2" if w.task == "dpo" else \
        f"rollout_batch × samples_per_prompt ({w.rollout_batch:,} × {w.samples_per_prompt or 1:,})"
    if w.task != "dpo" and sequences > _le("batch_size"):  # the rollout engine generates them as one batch
        raise Invalid("rollout_batch", "rl_rollout_too_large", given=given, sequences=sequences, limit=_le("batch_size"))
    if sequences > _le("global_batch_size"):
        raise Invalid("rollout_batch", "rl_step_too_large", given=given, sequences=sequences,
                      limit=_le("global_batch_size"))
    tokens = w.prompt_len + w.response_len  # type: ignore[operator]
    if tokens > _le("seq_len"):
        raise Invalid("response_len", "rl_sequence_too_long", tokens=tokens, limit=_le("seq_len"))
    if sequences % w.micro_batch_size:
        raise Invalid("micro_batch_size", "rl_micro_batch_divides", micro_batch_size=w.micro_batch_size,
                      sequences=sequences)
    # the trained roles' optimizer batch: the step's sequences make whole updates of it
    if w.global_batch_size is not None and (sequences % w.global_batch_size or w.global_batch_size % w.micro_batch_size):
        raise Invalid("global_batch_size", "rl_global_batch_divides", global_batch_size=w.global_batch_size,
                      sequences=sequences, micro_batch_size=w.micro_batch_size)


def _le(name: str) -> int:
    """The largest value Workload's field `name` takes (its `le`)."""
    return next(int(m.le) for m in Workload.model_fields[name].metadata if getattr(m, "le", None) is not None)


class ResolvedWorkload(BaseModel):
    """The workload as answered: defaults applied, architecture resolved."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    task: Task
    precision: Precision
    optimizer: OptimizerId | None
    params: int
    active_params: int
    layers: int
    hidden_size: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab_size: int
    intermediate_size: int
    mlp: Mlp
    tied_embeddings: bool
    experts: int
    experts_per_token: int
    seq_len: int
    micro_batch_size: int
    global_batch_size: int | None
    batch_size: int
    prompt_len: int | None
    output_len: int | None
    kv_cache_precision: KvPrecision | None
    activation_checkpointing: bool | None
    lora_rank: int | None
    gpu_count: int | None
    gpus: tuple[str, ...]
    systems: tuple[str, ...] = Field(default=(), exclude_if=lambda v: not v)  # the allowed systems; () = any
    tokens: int | None
    zero_stage: int | None
    tensor_parallel: int | None
    pipeline_parallel: int | None
    offload: Offload | None
    placement: Placement
    framework: str = Field(default="hf", description="the stack it runs on (given, or the task's default)")
    expert_parallel: int | None = Field(default=None, exclude_if=lambda v: v is None)
    tp_comm_overlap: bool = Field(default=False, exclude_if=lambda v: not v)
    master_weights: bool = Field(default=True, exclude_if=lambda v: v)
    virtual_pipeline_stages: int | None = Field(default=None, exclude_if=lambda v: v is None)
    context_parallel: int | None = Field(default=None, exclude_if=lambda v: v is None)
    optimizer_in_backward: bool = Field(default=False, exclude_if=lambda v: not v)
    assumptions: tuple[str, ...] = ()
    # the same assumptions in Chinese, one for one (explain(lang="zh"), the Chinese site); not in the JSON
    assumptions_zh: tuple[str, ...] = Field(default=(), exclude=True)
    # RL post-training (tasks grpo, ppo, dpo; gpukb.estimate.rl); left out of the JSON for other tasks
    rollout_batch: int | None = Field(default=None, exclude_if=lambda v: v is None)
    samples_per_prompt: int | None = Field(default=None, exclude_if=lambda v: v is None)
    response_len: int | None = Field(default=None, exclude_if=lambda v: v is None)
    mean_response_len: int | None = Field(default=None, exclude_if=lambda v: v is None)
    rl_placement: RlPlacement | None = Field(default=None, exclude_if=lambda v: v is None)
    rollout_tensor_parallel: int | None = Field(default=None, exclude_if=lambda v: v is None)
    reference_model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    reward_model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    critic_model: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # Left out of the JSON when not asked for, so answers to workloads without them keep their shape.
    ttft_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    tpot_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    request_rate: float | None = Field(default=None, exclude_if=lambda v: v is None)
    arrival: Arrival = Field(default="poisson", exclude_if=lambda v: v == "poisson")
    prompt_shape: LengthShape = Field(default="fixed", exclude_if=lambda v: v == "fixed")
    output_shape: LengthShape = Field(default="fixed", exclude_if=lambda v: v == "fixed")
    num_prompts: int | None = Field(default=None, exclude_if=lambda v: v is None)
    ttft_p50_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    ttft_p99_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    tpot_p50_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    tpot_p99_ms: float | None = Field(default=None, exclude_if=lambda v: v is None)
    objective: Objective = Field(default="speed", exclude_if=lambda v: v == "speed")
    deadline_days: float | None = Field(default=None, exclude_if=lambda v: v is None)
    # training: the region whose grid intensity co2_kg uses (the default named when none was given)
    region: str | None = Field(default=None, exclude_if=lambda v: v is None)
    # training: what energy_kwh and co2_kg count, and the PUE asked for (None: the policy's)
    energy_scope: EnergyScope = Field(default="facility", exclude_if=lambda v: v == "facility")
    pue: float | None = Field(default=None, exclude_if=lambda v: v is None)
    flash_attention: bool = Field(default=True, exclude_if=lambda v: v)
    flash_attention_version: int = Field(default=2, exclude_if=lambda v: v == 2)
    # Only some architectures have these; left out of the JSON where they do not apply.
    expert_params: int = Field(default=0, exclude_if=lambda v: v == 0,
                               description="one routed expert's parameters over all MoE layers")
    moe_layers: int = Field(default=0, exclude_if=lambda v: v == 0, description="the layers with routed experts")
    config_file: str | None = Field(default=None, exclude_if=lambda v: v is None,
                                    description="the config.json the architecture was read from")
    checkpoint_precision: Precision | None = Field(
        default=None, exclude_if=lambda v: v is None,
        description="the weights' precision the config.json's quantization_config declares")
    attention: Literal["gqa", "mla"] = Field(default="gqa", exclude_if=lambda v: v == "gqa")
    kv_lora_rank: int = Field(default=0, exclude_if=lambda v: v == 0)
    qk_rope_head_dim: int = Field(default=0, exclude_if=lambda v: v == 0)
    sliding_window: int = Field(default=0, exclude_if=lambda v: v == 0)
    sliding_layers: int = Field(default=0, exclude_if=lambda v: v == 0)
    # the model's max_position_embeddings (0 for a custom model); read where memory sets no bound
    context_length: int = Field(default=0, exclude=True)

    def assumptions_in(self, lang: str) -> tuple[str, ...]:
        """The assumptions in `lang`: the Chinese where every one has it, else the English."""
        if lang == "zh" and len(self.assumptions_zh) == len(self.assumptions):
            return self.assumptions_zh
        return self.assumptions


def parse_workload(data: Workload | dict[str, Any]) -> Workload:
    if isinstance(data, Workload):
        return data
    if not isinstance(data, dict):
        raise WorkloadError("workload", message("not_a_workload", type=type(data).__name__))
    try:
        return Workload.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "workload"
        cause = (first.get("ctx") or {}).get("error")
        if isinstance(cause, Invalid):  # a check of ours: its message id and values, in either language
            raise WorkloadError(field if first["loc"] else cause.field or field, cause.message) from None
        if first["type"] == "extra_forbidden":
            raise WorkloadError(field, message("unknown_field", fields=list(Workload.model_fields))) from None
        raise WorkloadError(field, pydantic_message(first)) from None
