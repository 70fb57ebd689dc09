"""Typed models of every knowledge-base entry: the single source of truth.

YAML files are validated against these models and the JSON Schemas in kb/schema/ are
generated from them (`gpukb schema`). Quantities accept human units in YAML and are held in SI.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, WithJsonSchema, model_validator

from .units import Bandwidth, Bytes, Flops, Watts, parse_quantity

Slug = Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9._\-]*$", max_length=80)]
Status = Literal["draft", "stable", "deprecated"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Entry(Strict):
    """Fields every entry shares: a stable id and an integer version that rises on each change."""

    id: Slug
    version: int = Field(ge=1)
    status: Status = "stable"
    superseded_by: Slug | None = None


class Manifest(Strict):
    name: str
    version: Annotated[str, Field(pattern=r"^\d+\.\d+\.\d+$")]
    description: str


class Source(Entry):
    title: str
    publisher: str
    kind: Literal["datasheet", "paper", "documentation", "model_config", "article", "whitepaper", "spec"]
    url: HttpUrl | None = None
    path: str | None = None
    as_of: dt.date | None = None

    @model_validator(mode="after")
    def _located(self) -> Source:
        if self.url is None and self.path is None:
            raise ValueError("a source needs a url (or, for a local document, a path)")
        return self


class Claim(Entry):
    section: str
    section_en: str
    kind: Literal["quantitative", "qualitative", "recommendation"]
    quote_zh: str = Field(min_length=2)
    text_en: str
    verdict: Literal["supported", "qualified", "contradicted", "unverifiable"]
    reason: str
    evidence: list[Slug] = Field(min_length=1)


class Rhetoric(Strict):
    """An article sentence that asserts nothing checkable, and why it is not a claim."""

    sentence: str
    section: str = ""
    section_en: str = ""
    reason: str


class Price(Strict):
    usd: float = Field(gt=0)
    as_of: dt.date
    source: Slug
    kind: Literal["launch_msrp", "list_price"]


class Gpu(Entry):
    name: str
    vendor: Literal["nvidia", "amd", "intel"]
    segment: Literal["datacenter", "workstation", "consumer"]
    architecture: str
    form_factor: Literal["sxm", "pcie", "oam", "mezzanine"]
    memory: Bytes = Field(gt=0)
    memory_type: str
    memory_bandwidth: Bandwidth = Field(gt=0)
    bf16_flops: Flops | None = Field(description="dense BF16 tensor FLOP/s; null if unsupported")
    fp16_flops: Flops | None = Field(description="dense FP16 tensor FLOP/s; null if unsupported or unpublished")
    fp8_flops: Flops | None = Field(description="dense FP8 tensor FLOP/s; null if unsupported")
    fp32_flops: Flops | None = Field(description="non-tensor FP32 FLOP/s; null if unpublished")
    scale_up: Slug | None
    scale_up_bandwidth: Bandwidth | None = Field(description="GPU-to-GPU bandwidth per direction")
    scale_up_domain: int = Field(ge=1, le=576)
    pcie: Slug
    tdp: Watts = Field(gt=0)
    cooling: list[Literal["passive", "active", "liquid"]] = Field(min_length=1)
    as_of: dt.date
    sources: list[Slug] = Field(min_length=1)
    price: Price | None = None
    notes: str = ""

    @property
    def memory_bytes(self) -> float:
        return self.memory

    @model_validator(mode="after")
    def _consistent(self) -> Gpu:
        if (self.scale_up is None) != (self.scale_up_bandwidth is None):
            raise ValueError("scale_up and scale_up_bandwidth must both be set or both be null")
        if self.scale_up is None and self.scale_up_domain != 1:
            raise ValueError("scale_up_domain must be 1 when there is no scale-up link")
        return self


class Interconnect(Entry):
    name: str
    kind: Literal["scale_up", "host", "scale_out"]
    bandwidth: Bandwidth = Field(gt=0, description="per direction")
    quoted: str
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""


class Moe(Strict):
    experts: int = Field(ge=2, description="routed experts per MoE layer")
    experts_per_token: int = Field(ge=1, description="routed experts each token runs through")
    expert_intermediate_size: int | None = Field(
        default=None, gt=0, description="width of one expert's MLP; null = intermediate_size")
    shared_experts: int = Field(default=0, ge=0, description="experts every token runs through (DeepSeekMoE)")
    dense_layers: int = Field(default=0, ge=0, description="first layers with a dense MLP of intermediate_size")
    router_bias: bool = Field(default=False, description="the router has a per-expert bias (DeepSeek-V3)")

    @model_validator(mode="after")
    def _routed(self) -> Moe:
        if self.experts_per_token > self.experts:
            raise ValueError(f"experts_per_token ({self.experts_per_token}) exceeds experts ({self.experts})")
        return self


class Mla(Strict):
    """Multi-head latent attention (DeepSeek-V2/V3): keys and values share one compressed latent."""

    q_lora_rank: int | None = Field(gt=0, description="rank of the query compression; null = a full q projection")
    kv_lora_rank: int = Field(gt=0, description="width of the compressed key-value latent, cached per token")
    qk_nope_head_dim: int = Field(gt=0)
    qk_rope_head_dim: int = Field(gt=0, description="decoupled rotary key per token, cached beside the latent")
    v_head_dim: int = Field(gt=0)


class Model(Entry):
    name: str
    family: str
    params: int = Field(gt=0, description="exact total parameter count")
    active_params: int | None = Field(default=None, gt=0)
    layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate_size: int = Field(gt=0)
    vocab_size: int = Field(gt=0)
    context_length: int = Field(gt=0)
    mlp: Literal["gated", "standard"]
    norm: Literal["rmsnorm", "layernorm"]
    tied_embeddings: bool
    qkv_bias: bool
    linear_bias: bool
    position_embeddings: Literal["rope", "learned"]
    moe: Moe | None = None
    mla: Mla | None = Field(default=None, description="multi-head latent attention; null = grouped-query attention")
    qk_norm: bool = Field(default=False, description="RMSNorm over each query and key head (Qwen3)")
    norms_per_layer: int = Field(default=2, ge=1, le=8, description="4 in Gemma 2 (before and after each block)")
    sliding_window: int | None = Field(default=None, gt=0, description="tokens a sliding-window layer attends to")
    sliding_window_layers: int = Field(default=0, ge=0, description="how many layers use the sliding window")
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
    weight_bytes: float = Field(gt=0)
    grad_bytes: float = Field(gt=0)
    master_bytes: float = Field(ge=0)


class Dtype(Entry):
    name: str
    bits: float = Field(gt=0, le=64, description="storage bits per parameter, quantization constants included")
    training: TrainingBytes | None = Field(description="bytes per parameter when this is the training precision")
    inference: bool
    flops_field: Literal["bf16_flops", "fp16_flops", "fp8_flops", "fp32_flops"]
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""

    @property
    def bytes(self) -> float:
        return self.bits / 8


class Optimizer(Entry):
    name: str
    state_bytes: float = Field(ge=0, description="optimizer state bytes per trainable parameter")
    states: str
    sources: list[Slug] = Field(min_length=1)
    notes: str = ""


class Policy(Entry):
    """A stated engineering assumption (headroom, utilisation, network) with its reason."""

    title: str
    value: Annotated[float, WithJsonSchema({
        "anyOf": [{"type": "number", "minimum": 0}, {"type": "string"}],
        "description": "a number, or a quantity with a unit matching `unit` ('2 GB', '50 GB/s')"})] = Field(ge=0)
    unit: Literal["fraction", "bytes", "bandwidth", "ratio", "tokens"]
    reason: str
    claims: list[Slug] = []
    sources: list[Slug] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _units(cls, data: object) -> object:
        if isinstance(data, dict) and isinstance(data.get("value"), str) and data.get("unit") in ("bytes", "bandwidth"):
            data = {**data, "value": parse_quantity(data["value"], data["unit"])}
        return data
