"""Typed models of every knowledge-base entry: the single source of truth.

YAML files are validated against these models and the JSON Schemas in kb/schema/ are
generated from them (`gpukb schema`). Quantities accept human units in YAML and are held in SI.
"""

from __future__ import annotations

import datetime as dt
import math
import unicodedata
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic import Strict as NoCoercion

from ..core import ranges
from ..core.ranges import ARCHITECTURE
from ..core.terminal import invisible
from ..core.units import Bandwidth, Bytes, Flops, Watts, parse_quantity
from ..language import expr

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$", max_length=80)]


def _visible(text: str) -> str:
    if (c := invisible(text)) is not None:
        raise ValueError(f"holds the invisible character U+{ord(c):04X} ({unicodedata.name(c, 'unnamed')}): "
                         "two names that differ only by it print alike; remove it")
    return text


# A name or title people read and tell apart: no character that shows nothing
Name = Annotated[str, AfterValidator(_visible)]
Status = Literal["draft", "stable", "deprecated"]
# Numbers are numbers: YAML's `true` is not 1, and "12" is not 12 (pydantic's lax mode would take both).
Int = Annotated[int, NoCoercion()]
Float = Annotated[float, NoCoercion()]


def Plausible(quantity: str, zero: bool = False) -> Any:
    """A strict float inside the plausible range of `quantity` (core.ranges), 0 too where `zero` allows it."""
    return Annotated[float, NoCoercion(), ranges.bounded(quantity, zero)]


Usd = Plausible("usd")
UsdPerHour = Plausible("usd_per_hour")
Bits = Plausible("bits")
PerValue = Plausible("bytes_per_value")  # bytes held per parameter, logit or activation unit
PerValueOrZero = Annotated[float, NoCoercion(), Field(ge=0), ranges.bounded("bytes_per_value", zero=True)]


class Strict(BaseModel):
    # defer_build: a validator is built when a model first validates, not when gpukb is imported; a
    # command that takes the knowledge base from kbcache never validates most entry kinds
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, defer_build=True)


class Entry(Strict):
    """Fields every entry shares: a stable id and an integer version that rises on each change."""

    id: Slug
    version: Int = Field(ge=1)
    status: Status = "stable"
    superseded_by: Slug | None = None


class Manifest(Strict):
    name: Name
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+$")]
    description: str


class Source(Entry):
    title: Name
    publisher: Name
    kind: Literal["datasheet", "paper", "documentation", "model_config", "article", "whitepaper", "spec", "price_list"]
    url: HttpUrl | None = None
    path: str | None = None
    as_of: dt.date | None = None

    @model_validator(mode="after")
    def _located(self) -> Source:
        if self.url is None and self.path is None:
            raise ValueError("a source needs a url (or, for a local document, a path)")
        return self


class Figure(Strict):
    """A figure of gpukb's that a claim's reason quotes: an ask, computed again whenever the reason is shown,
    so that the quoted number is always today's answer. The reason names its values `{name.field}`."""

    ask: dict[str, Any] = Field(description="the workload, as gpukb.ask takes it")
    gpu: Slug | None = Field(default=None, description="the option for this GPU type (default: the first option)")
    rule: str | None = Field(default=None, description="a rule id: that option's trace step of it lends its values "
                                                       "(e.g. a roofline finding's value and limit)")


class Claim(Entry):
    section: Name
    section_en: Name
    kind: Literal["quantitative", "qualitative", "recommendation"]
    quote_zh: str = Field(min_length=2)
    text_en: str
    title: Name = Field(default="", description="a short human title in English (lint requires it: L101)")
    title_zh: Name = Field(default="", description="the same title in Chinese (lint requires it: L101)")
    verdict: Literal["supported", "qualified", "contradicted", "unverifiable"]
    reason: str
    reason_zh: str = Field(default="", description="the reason in Chinese (lint requires it: L101)")
    evidence: list[Slug] = Field(min_length=1)
    figures: dict[Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")], Figure] = Field(
        default_factory=dict, description="gpukb's own figures the reason quotes, by name (gpukb.contrib.figures)")


class Rhetoric(Strict):
    """An article sentence that asserts nothing checkable, and why it is not a claim."""

    sentence: str
    section: Name = ""
    section_en: Name = ""
    reason: str
    reason_zh: str = Field(default="", description="the reason in Chinese, for the Chinese site")


class Price(Strict):
    usd: Usd = Field(gt=0)
    as_of: dt.date
    source: Slug
    kind: Literal["launch_msrp", "list_price"]


class CloudPrice(Strict):
    """A dated cloud on-demand list price, quoted verbatim from its source."""

    usd_per_gpu_hour: UsdPerHour = Field(gt=0)
    instance: Name
    gpus_per_instance: Int = Field(ge=1)
    instance_usd_per_hour: UsdPerHour = Field(gt=0)
    region: Name
    as_of: dt.date
    source: Slug
    locator: str
    quote: str = Field(min_length=2)
    derived: str = Field(default="", description="which of the per-GPU and instance prices is computed from the other")


class Gpu(Entry):
    name: Name
    vendor: Literal["nvidia", "amd", "intel", "huawei"]
    segment: Literal["datacenter", "workstation", "consumer"]
    architecture: Name
    form_factor: Literal["sxm", "pcie", "oam", "mezzanine"]
    memory: Bytes = Field(gt=0)
    memory_reported: Bytes | None = Field(default=None, gt=0, description=(
        "total memory the driver reports (nvidia-smi), where a source publishes it: datasheets round "
        "(an '80 GB' A100 reports 81,920 MiB); plans are made against this when it is known"))
    memory_source: Slug | None = Field(default=None, description="the source of memory_reported")
    memory_type: Name
    memory_bandwidth: Bandwidth = Field(gt=0)
    bf16_flops: Flops | None = Field(description="dense BF16 tensor FLOP/s; null if unsupported")
    fp16_flops: Flops | None = Field(description="dense FP16 tensor FLOP/s; null if unsupported or unpublished")
    fp8_flops: Flops | None = Field(description="dense FP8 tensor FLOP/s; null if unsupported")
    fp32_flops: Flops | None = Field(description="non-tensor FP32 FLOP/s; null if unpublished")
    scale_up: Slug | None
    scale_up_bandwidth: Bandwidth | None = Field(description="GPU-to-GPU bandwidth per direction")
    scale_up_domain: Int = Field(ge=1, le=576)
    devices: Int = Field(default=1, ge=1, le=8, description=(
        "devices the driver and the framework see in one package: each die of a multi-die accelerator is its own "
        "GPU to PyTorch (the MI250X's two GCDs). Plans count devices, each with 1/devices of the package's memory, "
        "bandwidth, FLOP/s, power, price and scale-up bandwidth; scale_up_domain counts packages"))
    devices_source: Slug | None = Field(default=None, description="the source that says how many devices a package is")
    pcie: Slug
    tdp: Watts = Field(gt=0)
    cooling: list[Literal["passive", "active", "liquid"]] = Field(min_length=1)
    as_of: dt.date
    sources: list[Slug] = Field(min_length=1)
    price: Price | None = None
    cloud_prices: list[CloudPrice] = Field(default_factory=list, description="dated cloud on-demand prices per GPU-hour")
    notes: str = ""

    @property
    def cloud_price(self) -> CloudPrice | None:
        """The lowest dated cloud on-demand price (the earliest-listed among equals)."""
        return min(self.cloud_prices, key=lambda p: p.usd_per_gpu_hour, default=None)

    @property
    def memory_bytes(self) -> float:
        """The memory plans are made against: what the driver reports where known, else the datasheet's."""
        return self.memory_reported or self.memory

    @model_validator(mode="after")
    def _consistent(self) -> Gpu:
        if (self.scale_up is None) != (self.scale_up_bandwidth is None):
            raise ValueError("scale_up and scale_up_bandwidth must both be set or both be null")
        if self.scale_up is None and self.scale_up_domain != 1:
            raise ValueError("scale_up_domain must be 1 when there is no scale-up link")
        if self.devices > 1 and self.devices_source is None:
            raise ValueError("devices > 1 needs devices_source: the source that says the package is several devices")
        return self


class NodePrice(Strict):
    """A dated on-demand price of one whole node (instance) per hour, quoted verbatim from its source."""

    usd_per_node_hour: UsdPerHour = Field(gt=0)
    region: str
    as_of: dt.date
    source: Slug
    locator: str
    quote: str = Field(min_length=2)
    derived: str = Field(default="", description="what of the price is computed rather than quoted, and how")


class System(Entry):
    """A machine people rent or buy: a node of GPUs with the fabric inside it, the network between nodes,
    its host memory and its prices. Plans are laid out on systems: their GPUs come in whole nodes."""

    name: Name
    kind: Literal["cloud", "server", "workstation"]
    provider: Slug
    gpu: Slug = Field(description="the GPU id every device of the node is")
    gpus_per_node: Int = Field(ge=1, le=72)
    fabric: Slug | None = Field(description="the interconnect between the node's GPUs; null for a one-GPU node")
    peer_to_peer: bool | None = Field(default=None, description=(
        "whether the GPUs of the node reach each other's memory directly (GeForce drivers disable it: collectives "
        "then pass through host memory); null only for a one-GPU node, which has no peer"))
    network_bandwidth: Bandwidth | None = Field(gt=0, description=(
        "between nodes, per node and direction, over all the adapters GPUs use (e.g. '3200 Gb/s'); null when the "
        "machine is not built to join others for one job: plans on it stay within one node"))
    network: str | None = None
    host_memory: Bytes = Field(gt=0, description="the node's CPU memory, which offloaded states share")
    vcpus: Int | None = Field(default=None, ge=1)
    prices: list[NodePrice] = Field(default_factory=list, description="dated on-demand prices per node-hour")
    as_of: dt.date
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""

    @property
    def price(self) -> NodePrice | None:
        """The lowest dated on-demand price (the earliest-listed among equals)."""
        return min(self.prices, key=lambda p: p.usd_per_node_hour, default=None)

    @model_validator(mode="after")
    def _consistent(self) -> System:
        if self.gpus_per_node > 1 and self.fabric is None:
            raise ValueError("a node of several GPUs needs its fabric (an interconnect id, e.g. nvlink-4 or pcie-4-x16)")
        if self.gpus_per_node > 1 and self.peer_to_peer is None:
            raise ValueError("a node of several GPUs must say whether peer_to_peer works between them")
        return self


class Interconnect(Entry):
    name: Name
    kind: Literal["scale_up", "host", "scale_out"]
    bandwidth: Bandwidth = Field(gt=0, description="per direction")
    quoted: Name
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""


class Moe(Strict):
    experts: Int = Field(ge=2, le=ARCHITECTURE["experts"], description="routed experts per MoE layer")
    experts_per_token: Int = Field(ge=1, description="routed experts each token runs through")
    expert_intermediate_size: Int | None = Field(
        default=None, gt=0, le=ARCHITECTURE["intermediate_size"],
        description="width of one expert's MLP; null = intermediate_size")
    shared_experts: Int = Field(default=0, ge=0, description="experts every token runs through (DeepSeekMoE)")
    dense_layers: Int = Field(default=0, ge=0, description="first layers with a dense MLP of intermediate_size")
    router_bias: bool = Field(default=False, description="the router has a per-expert bias (DeepSeek-V3)")

    @model_validator(mode="after")
    def _routed(self) -> Moe:
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})")
        return self


class Mla(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values share one compressed latent."""

    q_lora_rank: Int | None = Field(gt=0, description="rank of the query compression; null = a full q projection")
    kv_lora_rank: Int = Field(gt=0, description="width of the compressed key-value latent, cached per token")
    qk_nope_head_dim: Int = Field(gt=0)
    qk_rope_head_dim: Int = Field(gt=0, description="decoupled rotary key per token, cached beside the latent")
    v_head_dim: Int = Field(gt=0)


class Model(Entry):
    name: Name
    family: Name
    params: Int = Field(gt=0, le=ARCHITECTURE["params"], description="exact total parameter count")
    active_params: Int | None = Field(default=None, gt=0, le=ARCHITECTURE["params"])
    layers: Int = Field(gt=0, le=ARCHITECTURE["layers"])
    hidden_size: Int = Field(gt=0, le=ARCHITECTURE["hidden_size"])
    heads: Int = Field(gt=0, le=ARCHITECTURE["heads"])
    kv_heads: Int = Field(gt=0, le=ARCHITECTURE["kv_heads"])
    head_dim: Int = Field(gt=0, le=ARCHITECTURE["head_dim"])
    intermediate_size: Int = Field(gt=0, le=ARCHITECTURE["intermediate_size"])
    vocab_size: Int = Field(gt=0, le=ARCHITECTURE["vocab_size"])
    context_length: Int = Field(gt=0, le=ARCHITECTURE["context_length"])
    mlp: Literal["gated", "standard"]
    norm: Literal["rmsnorm", "layernorm"]
    tied_embeddings: bool
    qkv_bias: bool
    linear_bias: bool
    position_embeddings: Literal["rope", "learned"]
    moe: Moe | None = None
    mla: Mla | None = Field(default=None, description="multi-head latent attention; null = grouped-query attention")
    qk_norm: bool = Field(default=False, description="RMSNorm over each query and key head (Qwen3)")
    norms_per_layer: Int = Field(default=2, ge=1, le=8, description="4 in Gemma 2 (before and after each block)")
    sliding_window: Int | None = Field(default=None, gt=0, le=ARCHITECTURE["context_length"],
                                       description="tokens a sliding-window layer attends to")
    sliding_window_layers: Int = Field(default=0, ge=0, description="how many layers use the sliding window")
    hf_repo: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$",
                                max_length=200, description="Hugging Face repository id, e.g. meta-llama/Llama-2-7b-hf "
                                                            "(names the model in launch commands)")
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> Model:
        if self.heads % self.kv_heads:
            raise ValueError(f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})")
        if (self.moe is None) != (self.active_params is None):
            raise ValueError("active_params is set exactly when moe is set")
        if self.moe and self.moe.dense_layers >= self.layers:
            raise ValueError(f"moe.dense_layers ({self.moe.dense_layers}) leaves no MoE layer of {self.layers}")
        if (self.sliding_window is None) != (self.sliding_window_layers == 0):
            raise ValueError("sliding_window and sliding_window_layers are set together")
        if self.sliding_window_layers > self.layers:
            raise ValueError(f"sliding_window_layers ({self.sliding_window_layers}) exceeds layers ({self.layers})")
        return self


class TrainingBytes(Strict):
    weight_bytes: PerValue = Field(gt=0)
    grad_bytes: PerValue = Field(gt=0)
    master_bytes: PerValueOrZero = Field(ge=0)


class Term(Entry):
    """A glossary entry: a concept the answers use, the one Chinese term every text of gpukb writes for it, the
    other names readers search for it by, and the words gpukb's own Chinese avoids."""

    en: Name
    zh: Name = Field(description="the preferred Chinese term (a product name stays as it is)")
    aliases: list[Name] = Field(default_factory=list, description=(
        "other names readers know the concept by (abbreviations, English and Chinese synonyms, a library's word): the "
        "glossary page lists them, so searching any of them finds the entry"))
    avoid_zh: list[str] = Field(default_factory=list, description="terms Chinese text must not use for this concept: "
                                "drifting synonyms, translationese, English left in a Chinese sentence")
    note: str = Field(description="why this term, and how to use it")
    note_zh: str = ""
    sources: list[Slug] = Field(default_factory=list)


class Dtype(Entry):
    name: Name
    bits: Bits = Field(gt=0, le=64, description="storage bits per parameter, quantization constants included")
    training: TrainingBytes | None = Field(description="bytes per parameter when this is the training precision")
    inference: bool
    flops_field: Literal["bf16_flops", "fp16_flops", "fp8_flops", "fp32_flops"]
    kv_cache_architectures: list[str] | None = Field(
        default=None, description="as kv_cache_precision: the GPU architectures (kb/gpus `architecture`) on which "
                                  "a serving engine stores the KV cache in this format; null: any GPU")
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""

    @property
    def bytes(self) -> float:
        return self.bits / 8


class Optimizer(Entry):
    name: Name
    state_bytes: PerValueOrZero = Field(ge=0, description="optimizer state bytes per trainable parameter")
    state_bytes_16bit: PerValueOrZero | None = Field(default=None, description=(
        "state bytes per parameter in pure 16-bit training (workload master_weights: false), where the states "
        "take the 16-bit parameters' dtype; unset: the same as state_bytes (states with a dtype of their own)"))
    states: Name
    states_zh: str = Field(default="", description="states in Chinese, for the Chinese site")
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""


# a policy's unit -> the quantity whose plausible range (core.ranges) its value lies in
POLICY_QUANTITY = {"fraction": "fraction", "bytes": "bytes", "bandwidth": "bandwidth", "ratio": "ratio", "tokens": "tokens",
                   "seconds": "seconds", "count": "count", "gCO2/kWh": "gco2_per_kwh"}


class Policy(Entry):
    """A stated engineering assumption (headroom, utilisation, network) with its reason."""

    title: Name
    title_zh: str = Field(default="", description="the title in Chinese, for the Chinese site")
    unit: Literal["fraction", "bytes", "bandwidth", "ratio", "tokens", "seconds", "count", "gCO2/kWh"]
    value: Annotated[float, NoCoercion(), WithJsonSchema({
        "anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}],
        "description": "a number, or a quantity with a unit matching `unit` ('2 GB', '50 GB/s')"})] = Field(ge=0)
    architectures: list[str] = Field(default=[], description=(
        "GPU architectures (as in kb/gpus) this value is for; a policy with the same id prefix and no "
        "architectures is the default for the others"))
    gpus: list[Slug] = Field(default=[], description=(
        "GPU ids this value is for, where the measurements behind it cover some chips of an architecture and not "
        "others (the A100's figures do not speak for the GA102 cards); it is chosen before an architecture's"))
    reason: str
    claims: list[Slug] = []
    sources: list[Slug] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _units(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("value"), str) and data.get("unit") in ("bytes", "bandwidth"):
            data = {**data, "value": parse_quantity(data["value"], data["unit"])}
        return data

    @field_validator("value")
    @classmethod
    def _plausible(cls, value: float, info: ValidationInfo) -> float:
        unit = info.data.get("unit")  # None: the unit itself is wrong, and says so
        return value if unit is None else ranges.check(value, POLICY_QUANTITY[unit], zero=True)


# --- frameworks: the stacks people train and serve with, and what each holds in memory -------------

FrameworkTask = Literal["pretrain", "full_finetune", "lora", "qlora", "inference", "grpo", "ppo", "dpo"]


class FrameworkTerm(Strict):
    """One number a framework's memory depends on, with where it comes from."""

    value: Float = Field(ge=0)
    reason: str = Field(min_length=10, description="how the number follows from the framework's code or documentation")
    sources: list[Slug] = Field(min_length=1)


# each framework term -> the quantity whose plausible range (core.ranges) its value lies in
TERM_QUANTITY = {
    "loss_logit_bytes": "bytes_per_value", "layer_activation_bytes": "bytes_per_value",
    "layer_activation_bytes_fp32_residual": "bytes_per_value", "qlora_unquantized_param_bytes": "bytes_per_value",
    "checkpoint_layers_on_gpu": "count", "comm_buffer_bytes": "bytes", "zero3_live_params": "count",
    "kv_cache_memory_fraction": "fraction", "kv_cache_free_memory_fraction": "fraction",
    "decode_bandwidth_utilisation": "fraction", "layer_launch_s": "seconds", "step_host_s": "seconds",
    "step_host_per_sequence_s": "seconds", "int4_weight_bits": "bits", "int8_weight_bits": "bits",
}


class SchedulerTier(Strict):
    """The scheduler's defaults on GPUs of at least `min_memory_gib` (the engine reads the device's memory at start)."""

    min_memory_gib: Float = Field(gt=0, le=100_000)
    max_num_seqs: int | None = Field(default=None, gt=0, le=1_000_000)
    max_batched_tokens: int | None = Field(default=None, gt=0, le=10_000_000)
    except_gpus: list[str] = Field(default=[], description=(
        "GPU id prefixes that keep the smaller defaults whatever their memory (vLLM leaves the A100 out)"))


class Scheduler(Strict):
    """How a serving engine batches requests as they arrive (continuous batching), from its defaults: the most
    sequences it runs at once, the tokens one step may process (the chunked-prefill budget), the KV cache's block
    size, and whether it allocates KV blocks as sequences grow (preempting one when they run out) or reserves a
    request's whole length when it admits it."""

    max_num_seqs: int = Field(gt=0, le=1_000_000)
    max_batched_tokens: int = Field(gt=0, le=10_000_000)
    kv_block_tokens: int = Field(gt=0, le=65_536)
    admission: Literal["on_demand", "reserve_full"] = Field(description=(
        "'on_demand': blocks are allocated as tokens are generated and the newest running request is preempted "
        "(its KV cache freed, recomputed later) when none is left; 'reserve_full': a request is admitted only when "
        "blocks for its prompt and its whole output are free, and nothing is preempted"))
    prefill: Literal["mixed", "separate"] = Field(default="mixed", description=(
        "'mixed': a step runs the decoding requests' tokens and, within the token budget, prompt chunks together; "
        "'separate': a step that has prompt tokens to run runs them alone and the decoding requests wait for the "
        "next step (prefill first, as SGLang's scheduler without --enable-mixed-chunk)"))
    tiers: list[SchedulerTier] = Field(default=[], description="larger defaults on GPUs with more memory, smallest first")
    reason: str = Field(min_length=10, description="where each default is set in the engine's code or documentation")
    sources: list[Slug] = Field(min_length=1)


class TrainingLayout(Strict):
    """How a training framework lays a replica over many GPUs when the workload pins no layout."""

    order: Literal["sharded", "model_parallel"] = Field(description=(
        "'sharded': data parallelism with ZeRO's stages (DeepSpeed, FSDP), splitting the model only by tensor "
        "parallelism inside a node; 'model_parallel': tensor parallel inside a node first, then pipeline stages across "
        "nodes at any depth up to the layer count (an uneven split charged its fullest stage), the smallest group "
        "that holds the replica and a few deeper ones planned and the rules' estimate choosing, with the optimizer "
        "states sharded over the data-parallel ranks (ZeRO-1), never ZeRO-2 or 3 unless the workload pins them"))
    reason: str = Field(min_length=10, description="where the framework's documentation or papers lay it out so")
    sources: list[Slug] = Field(min_length=1)


class Framework(Entry):
    """A training or serving stack (workload field `framework`) and the memory terms that differ between stacks."""

    name: Name
    tasks: list[FrameworkTask] = Field(min_length=1, description="the workload tasks this framework runs")
    default_for: list[FrameworkTask] = Field(default=[], description=(
        "tasks this framework is the default for (what most people run for them); each task has exactly one"))
    default_reason: str = Field(default="", description="why it is the default, printed with every answer that uses it")
    default_reason_zh: str = Field(default="", description="default_reason in Chinese, for answers in Chinese")
    loss_logit_bytes: FrameworkTerm | None = Field(default=None, description=(
        "training: bytes held per logit (micro-batch x sequence x vocabulary) at the loss's peak: the 16-bit "
        "logits, any fp32 copy and what cross-entropy saves for its gradient"))
    layer_activation_bytes: FrameworkTerm | None = Field(default=None, description=(
        "training: bytes a layer saves for its gradient per token and hidden unit beyond Korthikanti et al.'s count "
        "(fused kernels), with a 16-bit residual stream (LoRA, QLoRA, pure 16-bit); none: the count alone"))
    layer_activation_bytes_fp32_residual: FrameworkTerm | None = Field(default=None, description=(
        "the same where autocast runs over fp32 master weights, so the residual stream between layers is fp32"))
    qlora_unquantized_param_bytes: FrameworkTerm | None = Field(default=None, description=(
        "qlora: bytes a parameter the 4-bit quantization leaves out (embeddings, output layer, norms) holds; unset, "
        "2 (16-bit, as loaded)"))
    checkpoint_layers_on_gpu: FrameworkTerm | None = Field(default=None, description=(
        "training with activation checkpointing: how many layers' saved inputs stay in GPU memory while the others "
        "wait in host memory; unset, every layer's stays on the GPU"))
    comm_buffer_bytes: FrameworkTerm | None = Field(default=None, description=(
        "training with ZeRO stage 1 or 2 (on one GPU or many): bytes of gradient-reduction and all-gather buckets "
        "each GPU holds (allocated at their configured size, whatever the model's); unset, none beyond the runtime "
        "overhead"))
    zero3_live_params: FrameworkTerm | None = Field(default=None, description=(
        "training with ZeRO-3: how many parameters a GPU may hold gathered at once (DeepSpeed's "
        "stage3_max_live_parameters); unset, the policy zero3-gathered-layers' whole layers"))
    kv_cache_memory_fraction: FrameworkTerm | None = Field(default=None, description=(
        "serving: the share of the GPU's memory the engine may use in all, its KV cache pre-allocated in what the "
        "weights, activations and runtime leave of it; a batch beyond the cache runs as many sequences as it holds "
        "and queues the rest. Unset (and no kv_cache_free_memory_fraction), the whole batch must fit"))
    kv_cache_free_memory_fraction: FrameworkTerm | None = Field(default=None, description=(
        "serving: the share of the memory left after the weights, activations and runtime that the engine "
        "pre-allocates as its KV cache, queueing what it cannot hold"))
    decode_bandwidth_utilisation: FrameworkTerm | None = Field(default=None, description=(
        "serving: the share of the GPU's datasheet memory bandwidth a batch-1 decode step's reads achieve in this "
        "engine, fitted to its own published tables; unset, policy decode-bandwidth-utilisation"))
    layer_launch_s: FrameworkTerm | None = Field(default=None, description=(
        "serving: seconds the host spends issuing one layer's kernels in a forward step (eager execution, no CUDA "
        "graphs), added to every decode step and prefill; unset, 0 (the step is issued whole)"))
    step_host_s: FrameworkTerm | None = Field(default=None, description=(
        "serving: seconds the engine's host spends between two steps while the GPU waits (scheduling, preparing "
        "the next step's inputs, turning the last step's sampled tokens into outputs, one after the other in the "
        "same loop), added to every step; unset, 0 (the host works while the GPU runs the previous step)"))
    step_host_per_sequence_s: FrameworkTerm | None = Field(default=None, description=(
        "serving: what that host time grows by for each sequence a step runs (its scheduling, inputs and outputs); "
        "unset, 0"))
    int4_weight_bits: FrameworkTerm | None = Field(default=None, description=(
        "serving: bits a weight takes in the engine's own 4-bit format, scales included (llama.cpp's Q4_0); unset, "
        "kb/dtypes' int4"))
    int8_weight_bits: FrameworkTerm | None = Field(default=None, description=(
        "serving: bits a weight takes in the engine's own 8-bit format, scales included (llama.cpp's Q8_0); unset, "
        "kb/dtypes' int8"))
    scheduler: Scheduler | None = Field(default=None, description=(
        "serving: the engine's continuous-batching scheduler, for answers under load (workload request_rate)"))
    training_layout: TrainingLayout | None = Field(default=None, description=(
        "training: how the planner lays a replica over many GPUs where the workload pins no layout; unset, 'sharded'"))
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""

    @field_validator(*TERM_QUANTITY)
    @classmethod
    def _plausible(cls, term: FrameworkTerm | None, info: ValidationInfo) -> FrameworkTerm | None:
        if term is not None:
            quantity = TERM_QUANTITY[str(info.field_name)]
            ranges.check(term.value, quantity, zero=quantity != "fraction")  # a share is never 0
        return term

    @model_validator(mode="after")
    def _consistent(self) -> Framework:
        if not set(self.default_for) <= set(self.tasks):
            raise ValueError(f"default_for: {sorted(set(self.default_for) - set(self.tasks))} not among its tasks")
        if self.default_for and not self.default_reason:
            raise ValueError("default_reason: say why it is the default for " + ", ".join(self.default_for))
        if self.default_for and not self.default_reason_zh:
            raise ValueError("default_reason_zh: say in Chinese why it is the default for " + ", ".join(self.default_for))
        if self.loss_logit_bytes is None and set(self.tasks) - {"inference"}:
            raise ValueError("loss_logit_bytes: a training framework states what its loss holds per logit")
        # each share lies in (0, 1]: its quantity's plausible range (_plausible)
        shares = ("kv_cache_memory_fraction", "kv_cache_free_memory_fraction", "decode_bandwidth_utilisation")
        if self.kv_cache_memory_fraction and self.kv_cache_free_memory_fraction:
            raise ValueError("kv_cache_memory_fraction, kv_cache_free_memory_fraction: an engine sizes its KV cache one way")
        serving = (*shares, "layer_launch_s", "step_host_s", "step_host_per_sequence_s", "int4_weight_bits",
                   "int8_weight_bits")
        if "inference" not in self.tasks and any(getattr(self, name) is not None for name in serving):
            raise ValueError(", ".join(serving) + ": serving terms, for a framework whose tasks include inference")
        return self


# every per-framework number, in the order the class states them: each has its sources checked at load
FRAMEWORK_TERMS = tuple(name for name, f in Framework.model_fields.items() if f.annotation == FrameworkTerm | None)


# --- measurements: published measured runs, the yardstick for every estimate ---------------------

Quantity = Literal[
    "training_tokens_per_s_per_gpu",  # training throughput per GPU
    "model_tflops_per_gpu",           # achieved model FLOP/s per GPU (6·N + attention per token, no recomputation)
    "hardware_tflops_per_gpu",        # achieved FLOP/s per GPU counting recomputation (Megatron-LM's convention)
    "mfu",                            # model FLOPs utilisation: model FLOP/s over the GPU's dense peak
    "gpu_hours",                      # GPU-hours for a whole run of `tokens`
    "decode_tokens_per_s",            # output tokens/s of one stream
    "decode_tokens_per_s_total",      # output tokens/s of all streams together
    "ttft_s",                         # time to first token
    "peak_memory_per_gpu",            # peak memory on one GPU
    "fewest_gpus",                    # the fewest GPUs of a type that ran it
    "rl_step_time_s",                 # RL post-training: seconds per step (generation, scoring, training, sync)
    "rl_generation_time_s",           # its generation phase: seconds per step the rollout engines decode
    "rl_training_time_s",             # its trainer's phases: the update and every log-prob (or value) pass
    "training_energy_kwh",            # electricity of a whole training run, in the source's scope
    "training_co2_kg",                # its emissions (location-based), in the source's scope
    # serving under load (a benchmark sending requests at a rate): percentiles over its requests (the median end-to-end
    # latency too), and the requests it completed per second
    "ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "request_throughput",
]
LOAD_QUANTITIES = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "request_throughput")
LOAD_LATENCIES = LOAD_QUANTITIES[:-1]  # the load quantities measured in seconds
# unit as published -> (quantities it may measure, factor to the canonical unit, inverted):
# canonical units are tokens/s, FLOP/s, fraction, hours, seconds, bytes, GPUs.
UNITS: dict[str, tuple[frozenset[str], float, bool]] = {
    "tokens/s": (frozenset({"training_tokens_per_s_per_gpu", "decode_tokens_per_s", "decode_tokens_per_s_total"}), 1, False),
    "tokens/s/GPU": (frozenset({"training_tokens_per_s_per_gpu", "decode_tokens_per_s_total"}), 1, False),
    "ms/token": (frozenset({"decode_tokens_per_s"}), 1e-3, True),
    "TFLOP/s": (frozenset({"model_tflops_per_gpu", "hardware_tflops_per_gpu"}), 1e12, False),
    "%": (frozenset({"mfu"}), 0.01, False),
    "fraction": (frozenset({"mfu"}), 1, False),
    "GPU hours": (frozenset({"gpu_hours"}), 1, False),
    "million GPU hours": (frozenset({"gpu_hours"}), 1e6, False),
    "s": (frozenset({"ttft_s", "rl_step_time_s", "rl_generation_time_s", "rl_training_time_s", *LOAD_LATENCIES}),
          1, False),
    "ms": (frozenset({"ttft_s", *LOAD_LATENCIES}), 1e-3, False),
    "requests/s": (frozenset({"request_throughput"}), 1, False),
    "GB": (frozenset({"peak_memory_per_gpu"}), 1e9, False),
    "GiB": (frozenset({"peak_memory_per_gpu"}), 2**30, False),
    "GPUs": (frozenset({"fewest_gpus"}), 1, False),
    "kWh": (frozenset({"training_energy_kwh"}), 1, False),
    "MWh": (frozenset({"training_energy_kwh"}), 1000, False),
    "kg CO2eq": (frozenset({"training_co2_kg"}), 1, False),
    "t CO2eq": (frozenset({"training_co2_kg"}), 1000, False),
}
ENERGY_QUANTITIES = ("training_energy_kwh", "training_co2_kg")
# each quantity -> the range (core.ranges) its canonical value lies in, and the canonical unit's name
MEASURED_RANGE: dict[str, str] = {
    "training_tokens_per_s_per_gpu": "tokens_per_s", "model_tflops_per_gpu": "flops", "hardware_tflops_per_gpu": "flops",
    "mfu": "fraction", "gpu_hours": "hours", "decode_tokens_per_s": "tokens_per_s",
    "decode_tokens_per_s_total": "tokens_per_s", "ttft_s": "seconds", "peak_memory_per_gpu": "bytes",
    "fewest_gpus": "gpus", "rl_step_time_s": "seconds", "rl_generation_time_s": "seconds",
    "rl_training_time_s": "seconds", "training_energy_kwh": "kwh", "training_co2_kg": "kg_co2",
    **{q: "seconds" for q in LOAD_LATENCIES}, "request_throughput": "request_rate",
}
_CANONICAL_UNIT = {"tokens_per_s": "tokens/s", "flops": "FLOP/s", "fraction": "fraction", "hours": "GPU hours",
                   "seconds": "s", "bytes": "bytes", "gpus": "GPUs", "kwh": "kWh", "kg_co2": "kg CO2eq",
                   "request_rate": "requests/s"}


class Measurement(Entry):
    """A published measurement of a real run: what a prediction is checked against."""

    title: Name
    quantity: Quantity
    value: Float = Field(gt=0, allow_inf_nan=False, description="exactly as published, in `unit`")
    unit: Literal[tuple(UNITS)]
    unit_as_published: str | None = Field(default=None, description="the source's own wording, where it differs")
    workload: dict[str, object] = Field(description=(
        "the run as a gpukb workload (checked by lint), naming its `framework` (kb/frameworks; lint M002): what the "
        "run's stack holds in memory differs, and validate reports accuracy per framework"))
    setup: str = Field(min_length=10, description="what the source states: GPUs, layout, batch, framework, precision")
    framework: str = Field(description="the software as the source names it, with its version; workload.framework is its id")
    flop_accounting: str | None = Field(default=None, description="for FLOP/s and MFU: what the FLOP count includes")
    flop_per_token: str | None = Field(default=None, description=(
        "for FLOP/s and MFU: the source's own FLOPs per trained token, as an expression over the workload's fields "
        "(params, layers, hidden_size, seq_len, vocab_size, intermediate_size, heads, kv_heads, mlp_matrices); "
        "validate turns gpukb's tokens/s into the quantity with it, so both sides count FLOPs the same way"))
    memory_counter: Literal["device", "allocator"] = Field(default="device", description=(
        "for peak memory, what the published figure counts: 'device', all the GPU holds (nvidia-smi, a card it "
        "fits); 'allocator', PyTorch's caching-allocator peak (torch.cuda.max_memory_allocated or "
        "max_memory_reserved, as torchtune and torchtitan log it), which leaves out the CUDA context and NCCL's "
        "buffers, so validate compares it with the plan's memory less the runtime overhead"))
    energy_scope: Literal["gpu", "node", "facility"] | None = Field(default=None, description=(
        "for energy and emissions: what the published figure counts: 'gpu' (the GPUs' board power), 'node' (whole "
        "servers), 'facility' (with the data centre's PUE); validate compares the same part of gpukb's estimate"))
    gpu_hours: Float | None = Field(default=None, gt=0, allow_inf_nan=False, description=(
        "for energy and emissions: the GPU-hours the source states for the same run; validate predicts the "
        "energy of these GPU-hours, so the point checks power, PUE and grid (the time to train has its own "
        "gpu_hours points)"))
    source: Slug
    locator: str = Field(min_length=3, description="where in the source: table, figure, row, section")
    quote: str = Field(min_length=3, description="the source's words or table row, verbatim")
    unstated: list[str] = Field(default=[], description="what the source leaves unstated, and what was assumed")
    notes: str = ""

    @model_validator(mode="after")
    def _unit_fits(self) -> Measurement:
        quantities, _, _ = UNITS[self.unit]
        if self.quantity not in quantities:
            raise ValueError(f"unit '{self.unit}' cannot measure {self.quantity} "
                             f"(units for it: {', '.join(u for u, (q, _, _) in UNITS.items() if self.quantity in q)})")
        if self.quantity in ("model_tflops_per_gpu", "hardware_tflops_per_gpu", "mfu") and not self.flop_accounting:
            raise ValueError("flop_accounting: say what the published FLOP count includes (recomputation, attention)")
        energy = self.quantity in ENERGY_QUANTITIES
        if energy and (self.energy_scope is None or self.gpu_hours is None):
            raise ValueError("energy and emissions: give energy_scope and the published gpu_hours of the run")
        if not energy and (self.energy_scope is not None or self.gpu_hours is not None):
            raise ValueError("energy_scope and gpu_hours: only for energy and emissions measurements")
        if self.flop_per_token is not None and self.quantity not in ("model_tflops_per_gpu", "hardware_tflops_per_gpu",
                                                                      "mfu"):
            raise ValueError("flop_per_token: only for FLOP/s and MFU measurements")
        return self

    @field_validator("memory_counter")
    @classmethod
    def _a_memory_figure(cls, counter: str, info: ValidationInfo) -> str:
        if counter != "device" and info.data.get("quantity") != "peak_memory_per_gpu":
            raise ValueError("only for peak_memory_per_gpu measurements")
        return counter

    @field_validator("flop_per_token")
    @classmethod
    def _an_expression(cls, text: str | None) -> str | None:
        if text is not None:
            expr.parse(text)  # the rules' safe expression language: refused here, at the field, if it is not one
        return text

    @property
    def canonical(self) -> float:
        """The value in the canonical unit of its quantity (tokens/s, FLOP/s, fraction, hours, s, bytes, GPUs);
        infinite where an implausible value underflows (see `implausible`)."""
        _, factor, inverted = UNITS[self.unit]
        scaled = self.value * factor
        if inverted:
            return 1 / scaled if scaled else math.inf
        return scaled

    def implausible(self) -> tuple[str, str] | None:
        """(field, why) where the value (or gpu_hours) lies outside its quantity's plausible range (core.ranges).
        Not a load error: only validation and the bands use a measurement, so a bad one fails lint and validate
        and is left out of the bands, while every answer stands."""
        try:
            ranges.check(self.canonical, MEASURED_RANGE[self.quantity])
        except ranges.OutOfRange:
            low, high = ranges.RANGES[MEASURED_RANGE[self.quantity]]
            return "value", (f"{self.value:g} {self.unit} is outside the plausible range of {self.quantity}, "
                             f"{low:g} to {high:g} {_CANONICAL_UNIT[MEASURED_RANGE[self.quantity]]}")
        if self.gpu_hours is not None:
            try:
                ranges.check(self.gpu_hours, "hours")
            except ranges.OutOfRange as out:
                return "gpu_hours", str(out)
        return None
