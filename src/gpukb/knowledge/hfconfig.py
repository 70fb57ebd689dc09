"""Models from a Hugging Face `config.json`: the architecture, read into a `Model`.

Each supported `model_type` is read the way its transformers configuration class reads it,
including the defaults that class applies to absent keys (Gemma ties its embeddings unless told
otherwise, Qwen2 always has q/k/v biases). The parameter count follows from the architecture
(`architecture.count_parameters`); nothing is taken from the file's name or from a hub.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..core import safepath
from ..core.errors import WorkloadError
from ..core.messages import Message, message, pydantic_message
from .architecture import count_parameters
from .schema import Mla, Model, Moe

MAX_BYTES = 1_000_000  # real configs are a few kB; a long layer_types list stays far below this
MAX_DIMENSION = 10_000_000
MAX_PARAMS = 10**13  # as for a workload's params


class ConfigError(WorkloadError):
    """A config.json that cannot describe a supported model; names the file and the key."""

    def __init__(self, path: str, key: str, detail: str | Message):
        self.path, self.key = path, key
        super().__init__("model", message("config_error", path=path, key=key, detail=detail))


def _printable(path: str) -> str:
    """A refused path as an error can show it: control characters (a NUL byte) written as escapes."""
    return path.encode("unicode_escape").decode("ascii") if not path.isprintable() else path


class _Reader:
    """Typed access to one config's keys, every error naming the file and the key."""

    def __init__(self, path: str, config: dict[str, Any]):
        self.path, self.config = path, config
        self.model_type = config.get("model_type")

    def error(self, key: str, detail: str | Message) -> ConfigError:
        return ConfigError(self.path, key, detail)

    def int(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        value = self.config.get(key)
        if value is None:
            if default is None:
                raise self.error(key, message("config_missing", model_type=self.model_type))
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, message("config_integer", value=value))
        if not minimum <= value <= MAX_DIMENSION:
            raise self.error(key, message("config_between", minimum=minimum, maximum=MAX_DIMENSION, value=value))
        return value

    def optional_int(self, key: str) -> int | None:
        return None if self.config.get(key) is None else self.int(key)

    def bool(self, key: str, default: bool) -> bool:
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.error(key, message("config_bool", value=value))
        return value


def _common(r: _Reader, *, tied: bool) -> dict[str, Any]:
    hidden, heads = r.int("hidden_size"), r.int("num_attention_heads")
    kv_heads = r.int("num_key_value_heads", heads)
    if heads % kv_heads:
        raise r.error("num_key_value_heads", message("config_kv_heads", kv_heads=kv_heads, heads=heads))
    head_dim = r.optional_int("head_dim")
    if head_dim is None:  # only an explicit head_dim may differ from hidden_size / heads (Gemma)
        if hidden % heads:
            raise r.error("num_attention_heads", message("config_heads", heads=heads, hidden=hidden))
        head_dim = hidden // heads
    return {
        "layers": r.int("num_hidden_layers"), "hidden_size": hidden, "heads": heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "intermediate_size": r.int("intermediate_size"), "vocab_size": r.int("vocab_size"),
        "context_length": _context_length(r), "mlp": "gated", "norm": "rmsnorm",
        "tied_embeddings": r.bool("tie_word_embeddings", tied), "qkv_bias": False, "linear_bias": False,
        "position_embeddings": "rope",
    }


def _context_length(r: _Reader) -> int:
    """The longest context a serving engine accepts for this config, derived as vLLM derives it
    (`_get_and_verify_max_len` in vllm/config.py): max_position_embeddings, times a RoPE scaling
    factor unless the scaling type already states the extended length (llama3, longrope, su); YaRN
    scales `original_max_position_embeddings`."""
    length = r.int("max_position_embeddings")
    scaling = r.config.get("rope_scaling")
    if scaling is None:
        return length
    if not isinstance(scaling, dict):
        raise r.error("rope_scaling", message("config_object", value=scaling))
    kind = scaling.get("rope_type", scaling.get("type"))
    factor = scaling.get("factor", 1.0)
    if kind in ("llama3", "longrope", "su") or factor is None:
        return length
    if isinstance(factor, bool) or not isinstance(factor, int | float) or not 1 <= factor <= 1024:
        raise r.error("rope_scaling", message("config_factor", value=factor))
    if kind == "yarn" and scaling.get("original_max_position_embeddings") is not None:
        original = scaling["original_max_position_embeddings"]
        if isinstance(original, bool) or not isinstance(original, int) or not 1 <= original <= MAX_DIMENSION:
            raise r.error("rope_scaling", message("config_original", maximum=MAX_DIMENSION, value=original))
        length = original
    return min(int(length * factor), MAX_DIMENSION)


def _biases(r: _Reader, arch: dict[str, Any], mlp_bias: bool = False) -> None:
    """Llama-style `attention_bias` puts a bias on q, k, v and o: representable only with the MLP's."""
    attention = r.bool("attention_bias", False)
    mlp = r.bool("mlp_bias", mlp_bias)
    if attention != mlp:
        raise r.error("attention_bias", message("config_biases", attention=attention, mlp=mlp))
    arch["linear_bias"] = attention


def _moe(r: _Reader, experts_key: str, **fields: Any) -> Moe:
    experts, chosen = r.int(experts_key), r.int("num_experts_per_tok")
    if chosen > experts:
        raise r.error("num_experts_per_tok", message("config_chosen", chosen=chosen, experts=experts,
                                                     experts_key=experts_key))
    return Moe(experts=experts, experts_per_token=chosen, **fields)


def _uniform_window(r: _Reader, arch: dict[str, Any]) -> None:
    """Mistral and Phi-3: every layer attends to at most `sliding_window` tokens when it is set."""
    window = r.optional_int("sliding_window")
    if window is not None:
        arch["sliding_window"], arch["sliding_window_layers"] = window, arch["layers"]


def _layer_types(r: _Reader, arch: dict[str, Any]) -> bool:
    """Newer configs list each layer's attention; True when this config does."""
    types = r.config.get("layer_types")
    if types is None:
        return False
    if not isinstance(types, list) or len(types) != arch["layers"] or not all(isinstance(t, str) for t in types):
        raise r.error("layer_types", message("config_layer_types", layers=arch["layers"]))
    sliding = sum(t == "sliding_attention" for t in types)
    if sliding:
        arch["sliding_window"], arch["sliding_window_layers"] = r.int("sliding_window"), sliding
    return True


def _llama(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=False)
    _biases(r, arch)
    return arch


def _mistral(r: _Reader) -> dict[str, Any]:
    arch = _llama(r)
    _uniform_window(r, arch)
    return arch


def _mixtral(r: _Reader) -> dict[str, Any]:
    arch = _mistral(r)
    arch["moe"] = _moe(r, "num_local_experts")
    return arch


def _qwen_window(r: _Reader, arch: dict[str, Any]) -> None:
    # Qwen2/3 slide the window only when use_sliding_window, and only from layer max_window_layers on
    if _layer_types(r, arch) or not r.bool("use_sliding_window", False):
        return
    sliding = arch["layers"] - min(r.int("max_window_layers", minimum=0), arch["layers"])
    if sliding:
        arch["sliding_window"], arch["sliding_window_layers"] = r.int("sliding_window"), sliding


def _qwen2(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=False)
    arch["qkv_bias"] = True  # Qwen2 always has q/k/v biases and no others
    _qwen_window(r, arch)
    return arch


def _qwen3(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=False)
    _biases(r, arch)
    arch["qk_norm"] = True
    _qwen_window(r, arch)
    return arch


def _gemma(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=True)
    _biases(r, arch)
    return arch


def _gemma2(r: _Reader) -> dict[str, Any]:
    arch = _gemma(r)
    arch["norms_per_layer"] = 4  # before and after both attention and MLP
    if not _layer_types(r, arch):  # even-numbered layers slide, odd ones attend globally
        arch["sliding_window"], arch["sliding_window_layers"] = r.int("sliding_window"), (arch["layers"] + 1) // 2
    return arch


def _phi3(r: _Reader) -> dict[str, Any]:
    # q/k/v and gate/up are fused matrices in Phi-3: the same parameters as separate ones
    arch = _llama(r)
    _uniform_window(r, arch)
    return arch


def _deepseek(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=False)
    _biases(r, arch)
    mla = Mla(q_lora_rank=r.optional_int("q_lora_rank"), kv_lora_rank=r.int("kv_lora_rank"),
              qk_nope_head_dim=r.int("qk_nope_head_dim"), qk_rope_head_dim=r.int("qk_rope_head_dim"),
              v_head_dim=r.int("v_head_dim"))
    arch.update(mla=mla, kv_heads=arch["heads"], head_dim=mla.qk_nope_head_dim + mla.qk_rope_head_dim)
    if r.config.get("n_routed_experts") is not None:
        if r.int("moe_layer_freq", 1) != 1:
            raise r.error("moe_layer_freq", message("config_moe_freq"))
        dense = r.int("first_k_dense_replace", 0, minimum=0)
        if dense >= arch["layers"]:
            raise r.error("first_k_dense_replace", message("config_dense", dense=dense, layers=arch["layers"]))
        arch["moe"] = _moe(
            r, "n_routed_experts", expert_intermediate_size=r.int("moe_intermediate_size"),
            shared_experts=r.int("n_shared_experts", 0, minimum=0), dense_layers=dense,
            # DeepSeek-V3's bias-corrected routing learns one bias per expert
            router_bias=r.config.get("topk_method") == "noaux_tc")
    # num_nextn_predict_layers (V3's multi-token prediction module) is left out: it is not run
    # for next-token prediction, and the published 671B excludes it
    return arch


def _gpt_neox(r: _Reader) -> dict[str, Any]:
    arch = _common(r, tied=False)
    # LayerNorm and biases on every linear layer; rotary_pct only changes how much of each head
    # is rotated, not the parameters or the KV cache
    arch.update(mlp="standard", norm="layernorm", linear_bias=r.bool("attention_bias", True))
    if not arch["linear_bias"]:
        raise r.error("attention_bias", message("config_neox_bias"))
    return arch


FAMILIES: dict[str, tuple[str, Callable[[_Reader], dict[str, Any]]]] = {
    "llama": ("llama", _llama),
    "mistral": ("mistral", _mistral),
    "mixtral": ("mistral", _mixtral),
    "qwen2": ("qwen", _qwen2),
    "qwen3": ("qwen", _qwen3),
    "gemma": ("gemma", _gemma),
    "gemma2": ("gemma", _gemma2),
    "phi3": ("phi", _phi3),
    "deepseek_v2": ("deepseek", _deepseek),
    "deepseek_v3": ("deepseek", _deepseek),
    "gpt_neox": ("gpt-neox", _gpt_neox),
}


@dataclass(frozen=True)
class Quantized:
    """The precision a checkpoint stores its weights in, as its config.json's `quantization_config` declares
    it: a gpukb precision id, the method as written, and the format in words for the answer's assumptions."""

    precision: str
    method: str
    format: str
    format_zh: str = ""


def _bits(r: _Reader, q: dict[str, Any], key: str, method: str) -> str:
    bits = q.get(key, 4)
    precision = {4: "int4", 8: "int8"}.get(bits) if isinstance(bits, int) and not isinstance(bits, bool) else None
    if precision is None:
        raise r.error(f"quantization_config.{key}", message("config_quant_bits", method=method, bits=bits))
    return precision


def _compressed_tensors(r: _Reader, q: dict[str, Any]) -> Quantized:
    """llm-compressor's compressed-tensors format: each of `config_groups` states its weights' `num_bits` and
    `type` (int or float); 8-bit floats are FP8 (W8A8-FP8), 8- and 4-bit integers INT8 and INT4 (W8A8, W4A16)."""
    groups = q.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise r.error("quantization_config.config_groups", message("config_object", value=groups))
    found = set()
    for name, group in groups.items():
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            raise r.error(f"quantization_config.config_groups.{name}.weights", message("config_object", value=weights))
        bits, kind = weights.get("num_bits"), weights.get("type", "int")
        if bits == 8 and kind == "float":
            found.add("fp8")
        elif kind == "int":
            found.add(_bits(r, weights, "num_bits", "compressed-tensors"))
        else:
            raise r.error(f"quantization_config.config_groups.{name}.weights.num_bits",
                          message("config_quant_bits", method=f"compressed-tensors {kind}", bits=bits))
    if len(found) != 1:  # groups in different formats: no one precision sizes the weights
        raise r.error("quantization_config.config_groups",
                      message("config_quant_bits", method="compressed-tensors", bits=sorted(found)))
    (precision,) = found
    return Quantized(precision, "compressed-tensors", f"compressed-tensors {precision} weights",
                     f"compressed-tensors {precision} 权重")


# quant_method (transformers' QuantizationMethod) → how the weights are stored. fp8: block-wise E4M3 weights with
# a scale per 128 x 128 block (DeepSeek-V3; FineGrainedFP8Config); fbgemm_fp8: E4M3 with a scale per output row
# (Meta's Llama 3.1 405B FP8; FbgemmFp8Config); awq and gptq: 4- or 8-bit integers with a 16-bit scale per group
# (AwqConfig, GPTQConfig `bits`); bitsandbytes: LLM.int8() or 4-bit NF4/FP4 (BitsAndBytesConfig load_in_8bit /
# load_in_4bit, serialized with or without a leading underscore).
def checkpoint_quantization(config: dict[str, Any], path: str) -> Quantized | None:
    """The weights' precision a config.json's `quantization_config` declares; None when it declares none.
    Errors name the file and the key."""
    q = config.get("quantization_config")
    if q is None:
        return None
    r = _Reader(path, config)
    if not isinstance(q, dict):
        raise r.error("quantization_config", message("config_object", value=q))
    method = q.get("quant_method")
    if method in ("fp8", "fbgemm_fp8"):
        blocks = q.get("weight_block_size")
        shape = " x ".join(str(b) for b in blocks) if isinstance(blocks, list) and blocks else ""
        fp8 = q.get("fmt", "e4m3")
        return Quantized("fp8", method, f"FP8 {fp8} weights" + (f" in {shape} blocks" if shape else ""),
                         f"FP8 {fp8} 权重" + (f"，按 {shape} 分块" if shape else ""))
    if method in ("awq", "gptq"):
        precision = _bits(r, q, "bits", method)
        group = q.get("group_size")
        grouped = isinstance(group, int) and group > 0
        return Quantized(precision, method, f"{method.upper()} {precision} weights" + (
            f", a scale per {group} weights" if grouped else ""),
            f"{method.upper()} {precision} 权重" + (f"，每 {group} 个权重一个缩放因子" if grouped else ""))
    if method == "bitsandbytes":
        if q.get("load_in_4bit") or q.get("_load_in_4bit"):
            kind = q.get("bnb_4bit_quant_type", "nf4")
            return Quantized("int4", method, f"bitsandbytes 4-bit {kind} weights", f"bitsandbytes 4 位 {kind} 权重")
        if q.get("load_in_8bit") or q.get("_load_in_8bit"):
            return Quantized("int8", method, "bitsandbytes LLM.int8() weights", "bitsandbytes LLM.int8() 权重")
        raise r.error("quantization_config.load_in_4bit", message("config_quant_bits", method=method, bits=None))
    if method == "compressed-tensors":
        return _compressed_tensors(r, q)
    raise r.error("quantization_config.quant_method",
                  message("config_quant_method", method=method, known=list(QUANT_METHODS)))


QUANT_METHODS = ("fp8", "fbgemm_fp8", "awq", "gptq", "bitsandbytes", "compressed-tensors")


def read_config(path: Path, shown: str | None = None) -> tuple[dict[str, Any], str]:
    """A config.json (or the one in a directory) as a dict, and how errors name the file. Only a
    regular file is read (safepath): a FIFO, a device or a name no file can have is a ConfigError."""
    shown = shown or str(path)
    try:
        if safepath.is_dir(path):
            path = path / "config.json"
            shown = str(Path(shown) / "config.json")
        data = safepath.read_bytes(path, MAX_BYTES)
    except safepath.RefusedPath as error:
        raise ConfigError(_printable(shown), "file", error.message) from None
    if len(data) > MAX_BYTES:
        raise ConfigError(shown, "file", message("config_too_large", limit=MAX_BYTES))
    try:
        config = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ConfigError(shown, "file", message("config_not_json", detail=str(error))) from None
    if not isinstance(config, dict):
        raise ConfigError(shown, "file", message("config_not_object"))
    return config, shown


def model_from_config(config: dict[str, Any], path: str, name: str | None = None) -> Model:
    """The `Model` a parsed config.json describes; errors name `path`. `name` overrides the
    config's `_name_or_path`, which otherwise names the model (else `path` does)."""
    r = _Reader(path, config)
    if not isinstance(r.model_type, str) or r.model_type not in FAMILIES:
        got = message("config_type_missing") if r.model_type is None else message("config_type", model_type=r.model_type)
        raise r.error("model_type", message("config_supported", got=got, families=list(FAMILIES)))
    family, read = FAMILIES[r.model_type]
    given = config.get("_name_or_path")
    name = name or (given if isinstance(given, str) and given.strip() else path)
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-._")[:80] or "config"
    try:
        arch = read(r)
        # a model read from a file is its own source: the id stands for the config itself; params
        # are a placeholder until the architecture, validated here, has been counted
        model = Model(id=slug, version=1, name=name, family=family, params=1, sources=[slug],
                      active_params=1 if arch.get("moe") else None, **arch)
        total, active = count_parameters(model)
        if total > MAX_PARAMS:
            raise r.error("num_hidden_layers", message("config_params", total=total))
        return model.model_copy(update={"params": total, "active_params": active if model.moe else None})
    except ValidationError as error:
        first = error.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "model_type"
        raise r.error(key, pydantic_message(first)) from None


def load_model(path: Path, shown: str | None = None, name: str | None = None) -> Model:
    return model_from_config(*read_config(path, shown), name=name)
