"""A Llama-style decoder in plain PyTorch, built with random weights from a resolved architecture, and the
timed runs `gpukb probe` measures on it: training steps, a prefill and decode steps.

Self-contained on purpose: nothing is downloaded and no modelling library is needed, so the shapes are
exactly the ones gpukb predicted for. The training step follows the eager Transformers stack (framework
`hf`): fp32 parameters under bf16 autocast (16-bit frozen base for LoRA), SDPA attention, grouped-query
heads repeated before attention, the logits upcast to fp32 for the cross-entropy loss.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

ROPE_THETA = 500000.0  # Llama 3's rotary base; the base changes values, not memory or time


@dataclass(frozen=True)
class Shape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    gated: bool
    tied: bool = False  # one matrix for the token embedding and the output layer (Llama 3.2 1B, Gemma)

    @staticmethod
    def of(w: Any) -> Shape:
        """From a gpukb.ResolvedWorkload."""
        return Shape(w.layers, w.hidden_size, w.heads, w.kv_heads, w.head_dim, w.intermediate_size, w.vocab_size,
                     w.mlp == "gated", w.tied_embeddings)


class LoraLinear(nn.Module):
    """A frozen linear layer plus a trainable rank-r update B·A (A random, B zero, as PEFT initialises them)."""

    def __init__(self, base: nn.Linear, rank: int) -> None:
        super().__init__()
        self.base = base.requires_grad_(False)
        self.a = nn.Parameter(torch.randn(rank, base.in_features, device=base.weight.device) / math.sqrt(base.in_features))
        self.b = nn.Parameter(torch.zeros(base.out_features, rank, device=base.weight.device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # PEFT casts the input to the adapters' fp32 first; under autocast each adapter's matmul then saves its
        # own 16-bit copy of it
        return self.base(x) + F.linear(F.linear(x.to(self.a.dtype), self.a), self.b)


def _rope(x: torch.Tensor, start: int) -> torch.Tensor:
    """Rotary position embedding of x (batch, heads, tokens, head_dim) from position `start`, as Transformers'
    apply_rotary_pos_emb computes it: x·cos + rotate_half(x)·sin, with cos and sin in x's dtype."""
    half = x.shape[-1] // 2
    freq = ROPE_THETA ** (-torch.arange(half, device=x.device, dtype=torch.float32) / half)
    angles = torch.arange(start, start + x.shape[-2], device=x.device, dtype=torch.float32)[:, None] * freq
    angles = torch.cat((angles, angles), dim=-1)
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
    return x * cos + rotated * sin


class RMSNorm(nn.Module):
    """Transformers' LlamaRMSNorm: the input upcast to fp32, normalised, cast back, then scaled (what it saves
    for the gradient is what the eager stack holds, unlike a fused kernel's)."""

    def __init__(self, hidden: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


class Attention(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.s = s
        self.q = nn.Linear(s.hidden, s.heads * s.head_dim, bias=False)
        self.k = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.v = nn.Linear(s.hidden, s.kv_heads * s.head_dim, bias=False)
        self.o = nn.Linear(s.heads * s.head_dim, s.hidden, bias=False)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None,
                start: int = 0) -> torch.Tensor:
        b, t, _ = x.shape
        s = self.s
        q = _rope(self.q(x).view(b, t, s.heads, s.head_dim).transpose(1, 2), start)
        k = _rope(self.k(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2), start)
        v = self.v(x).view(b, t, s.kv_heads, s.head_dim).transpose(1, 2)
        if cache is not None:  # a preallocated KV cache: write this step's keys and values, attend to all so far
            cache[0][:, :, start:start + t] = k
            cache[1][:, :, start:start + t] = v
            k, v = cache[0][:, :, :start + t], cache[1][:, :, :start + t]
        # grouped-query heads inside SDPA, as Transformers calls it without a mask (no repeated K and V)
        out = F.scaled_dot_product_attention(q, k, v, is_causal=start == 0 and t > 1, enable_gqa=s.heads != s.kv_heads)
        return self.o(out.transpose(1, 2).reshape(b, t, s.heads * s.head_dim))


class Mlp(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.gated = s.gated
        self.up = nn.Linear(s.hidden, s.intermediate, bias=False)
        self.gate = nn.Linear(s.hidden, s.intermediate, bias=False) if s.gated else None
        self.down = nn.Linear(s.intermediate, s.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate is not None:
            return self.down(F.silu(self.gate(x)) * self.up(x))
        return self.down(F.gelu(self.up(x)))


class Block(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.norm1, self.attn = RMSNorm(s.hidden), Attention(s)
        self.norm2, self.mlp = RMSNorm(s.hidden), Mlp(s)

    def forward(self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None = None,
                start: int = 0) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cache, start)
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    def __init__(self, s: Shape) -> None:
        super().__init__()
        self.s = s
        self.embed = nn.Embedding(s.vocab, s.hidden)
        self.blocks = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.norm = RMSNorm(s.hidden)
        self.lm_head = nn.Linear(s.hidden, s.vocab, bias=False)
        if s.tied:
            self.lm_head.weight = self.embed.weight

    def forward(self, ids: torch.Tensor, checkpointing: bool = False,
                caches: list[tuple[torch.Tensor, torch.Tensor]] | None = None, start: int = 0,
                last_only: bool = False) -> torch.Tensor:
        x = self.embed(ids)
        for i, block in enumerate(self.blocks):
            # full recomputation keeps each block's input only; a KV cache is for serving, never recomputed
            x = checkpoint(block, x, use_reentrant=False) if checkpointing else block(x, caches[i] if caches else None, start)
        if last_only:  # serving needs the next token's logits only (engines and generate() keep the last)
            x = x[:, -1:]
        return self.lm_head(self.norm(x))

    def add_lora(self, rank: int) -> None:
        """Rank-r adapters on every linear layer of every block (PEFT's all-linear target)."""
        self.requires_grad_(False)
        for block in self.blocks:
            for parent in (block.attn, block.mlp):
                for name, child in list(parent.named_children()):
                    if isinstance(child, nn.Linear):
                        setattr(parent, name, LoraLinear(child, rank))


@dataclass
class Measured:
    peak_allocated: int | None = None  # bytes, torch.cuda.max_memory_allocated; None off CUDA
    peak_reserved: int | None = None   # bytes, torch.cuda.max_memory_reserved
    train_tokens_per_s: float | None = None
    prefill_tokens_per_s: float | None = None
    decode_tokens_per_s: float | None = None


def build(s: Shape, device: torch.device, dtype: torch.dtype) -> Decoder:
    """The module's weights made on the device, in their dtype, as a checkpoint loads them (torch_dtype=...):
    no fp32 copy on the host to move and no transient fp32 copy on the GPU to count in the peak."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with device:
            return Decoder(s)
    finally:
        torch.set_default_dtype(previous)


def saved_bytes_per_token(layer: Any, hidden: int, dtype: torch.dtype, tokens: int = 64,
                          device: torch.device | None = None) -> float:
    """Bytes `layer` saves for its gradient per token and hidden unit under bf16 autocast, counted by autograd's
    saved-tensor hooks (each storage once) at `tokens` and twice as many: the difference leaves out the
    weights' copies and keeps what grows with the tokens."""
    device = device or torch.device("cpu")

    def count(t: int) -> int:
        storages: dict[int, int] = {}

        def pack(x: torch.Tensor) -> torch.Tensor:
            storages[x.untyped_storage().data_ptr()] = x.untyped_storage().nbytes()
            return x

        x = torch.randn(1, t, hidden, dtype=dtype, device=device, requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda x: x), _autocast(device, True, force=True):
            layer(x)
        return sum(storages.values())

    return (count(2 * tokens) - count(tokens)) / (tokens * hidden)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _autocast(device: torch.device, enabled: bool, force: bool = False) -> Any:
    """bf16 autocast on CUDA; on the CPU only where forced (counting saved tensors), as CPU runs train in fp32."""
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=enabled and (force or device.type == "cuda"))


def train(s: Shape, device: torch.device, *, task: str, seq: int, micro_batch: int, checkpointing: bool,
          lora_rank: int, optimizer: str, master_weights: bool, steps: int, seed: int = 0) -> Measured:
    """A few optimizer steps on random tokens; tokens/s over the steps after the first (which builds the
    optimizer's states). Peak memory over the whole run, as a training job sees it."""
    torch.manual_seed(seed)
    cuda = device.type == "cuda"
    # a 16-bit frozen base for LoRA and for pure 16-bit training (on CUDA); fp32 master weights otherwise
    sixteen_bit = cuda and (task == "lora" or not master_weights)
    model = build(s, device, torch.bfloat16 if sixteen_bit else torch.float32)
    if task == "lora":  # fp32 adapters under autocast, as PEFT casts them over a 16-bit base
        model.add_lora(lora_rank)
    params = [p for p in model.parameters() if p.requires_grad]
    opt: torch.optim.Optimizer
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4)
    elif optimizer == "sgd_momentum":
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=1e-5, fused=cuda)
    ids = torch.randint(0, s.vocab, (micro_batch, seq + 1), device=device)
    inputs, labels = ids[:, :-1], ids[:, 1:]

    def loss() -> torch.Tensor:
        with _autocast(device, master_weights or task == "lora"):
            logits = model(inputs, checkpointing=checkpointing)
        # Transformers' upcast; the Trainer drops the model's outputs before backward, so only the loss's own
        # fp32 tensors stay
        return F.cross_entropy(logits.float().view(-1, s.vocab), labels.reshape(-1))

    return timed_training(loss, opt, device, seq * micro_batch, steps)


def timed_training(loss: Callable[[], torch.Tensor], opt: torch.optim.Optimizer, device: torch.device,
                   tokens: int, steps: int) -> Measured:
    """Optimizer steps of `loss` (a forward pass returning the loss of `tokens` tokens): tokens/s over the
    steps after the first, which builds the optimizer's states; peak memory from here on, the loaded
    weights plus what training adds."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(steps + 1):
        _sync(device)
        began = time.perf_counter()
        loss().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        _sync(device)
        times.append(time.perf_counter() - began)
    measured = Measured(train_tokens_per_s=tokens * steps / sum(times[1:]))
    if device.type == "cuda":
        measured.peak_allocated = torch.cuda.max_memory_allocated(device)
        measured.peak_reserved = torch.cuda.max_memory_reserved(device)
    return measured


@torch.no_grad()
def serve(s: Shape, device: torch.device, *, batch: int, prompt: int, output: int, steps: int,
          seed: int = 0) -> Measured:
    """A prefill of batch x prompt tokens into a preallocated KV cache, then decode steps one token at a
    time; both timed after a warm-up pass."""
    torch.manual_seed(seed)
    cuda = device.type == "cuda"
    dtype = torch.bfloat16 if cuda else torch.float32
    model = build(s, device, dtype).eval()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)
    context = prompt + output
    caches = [(torch.empty(batch, s.kv_heads, context, s.head_dim, device=device, dtype=dtype),
               torch.empty(batch, s.kv_heads, context, s.head_dim, device=device, dtype=dtype)) for _ in range(s.layers)]
    ids = torch.randint(0, s.vocab, (batch, prompt), device=device)
    decode_steps = max(1, min(output, steps * 8))
    prefill, decode = [], []
    for _ in range(2):  # the first pass warms up kernels and the allocator
        _sync(device)
        began = time.perf_counter()
        logits = model(ids, caches=caches, last_only=True)
        _sync(device)
        prefill.append(time.perf_counter() - began)
        token = logits[:, -1:].argmax(-1)
        began = time.perf_counter()
        for i in range(decode_steps):
            token = model(token, caches=caches, start=prompt + i)[:, -1:].argmax(-1)
        _sync(device)
        decode.append((time.perf_counter() - began) / decode_steps)
    measured = Measured(prefill_tokens_per_s=batch * prompt / prefill[-1], decode_tokens_per_s=batch / decode[-1])
    if cuda:
        measured.peak_allocated = torch.cuda.max_memory_allocated(device)
        measured.peak_reserved = torch.cuda.max_memory_reserved(device)
    return measured
