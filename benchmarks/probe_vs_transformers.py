"""How closely `gpukb probe`'s self-contained module stands for the Transformers + PEFT stack (framework `hf`).

Runs the same training configurations twice on one CUDA GPU, with random weights built from the catalog's
architecture: once through gpukb.probe.model (what `gpukb probe` measures) and once through Transformers'
LlamaForCausalLM (with PEFT's LoRA on all linear layers where the task is lora), and prints each one's peak
allocated memory and tokens/s as JSON Lines. Needs transformers and peft besides the `probe` extra; nothing
is downloaded. `--tiny` runs two-layer shapes on the CPU (a dry run: no memory counters there).

    python benchmarks/probe_vs_transformers.py > probe-vs-transformers.jsonl
"""

from __future__ import annotations

import argparse
import gc
import json
from typing import Any

import torch

import gpukb
from gpukb.answer.workload import parse_workload
from gpukb.estimate.resolve import resolve
from gpukb.probe.model import Measured, Shape, timed_training, train

# model, task, sequence, micro-batch, activation checkpointing
CASES = (("llama-3.1-8b", "lora", 2048, 4, True), ("llama-3.1-8b", "lora", 1024, 8, False),
         ("mistral-7b", "lora", 2048, 8, True), ("llama-3.2-1b", "full_finetune", 2048, 4, False))
TINY = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "head_dim": 16, "intermediate": 128, "vocab": 512}


def _hf(s: Shape, device: torch.device, task: str, seq: int, micro_batch: int, checkpointing: bool,
        steps: int) -> Measured:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=s.vocab, hidden_size=s.hidden, intermediate_size=s.intermediate,
                         num_hidden_layers=s.layers, num_attention_heads=s.heads, num_key_value_heads=s.kv_heads,
                         head_dim=s.head_dim, tie_word_embeddings=False, attn_implementation="sdpa")
    cuda = device.type == "cuda"
    torch.set_default_dtype(torch.bfloat16 if task == "lora" and cuda else torch.float32)
    try:
        with device:
            model: Any = LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(torch.float32)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if task == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules="all-linear"))
    model.train()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=cuda)
    ids = torch.randint(0, s.vocab, (micro_batch, seq), device=device)

    def loss() -> torch.Tensor:
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=cuda):
            return model(input_ids=ids, labels=ids).loss

    return timed_training(loss, opt, device, seq * micro_batch, steps)


def _free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiny", action="store_true", help="two-layer shapes on the CPU (a dry run)")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    device = torch.device("cpu" if args.tiny or not torch.cuda.is_available() else "cuda")
    kb = gpukb.load_kb()
    for model, task, seq, micro_batch, checkpointing in CASES:
        s = Shape.of(resolve(kb, parse_workload({"model": model, "task": task}))[0])
        if args.tiny:
            s, seq, micro_batch = Shape(**TINY, gated=True), 32, 2
        row: dict[str, Any] = {"model": model, "task": task, "seq_len": seq, "micro_batch_size": micro_batch,
                               "activation_checkpointing": checkpointing}
        for stack in ("probe", "transformers"):
            try:
                if stack == "probe":
                    m = train(s, device, task=task, seq=seq, micro_batch=micro_batch, checkpointing=checkpointing,
                              lora_rank=16, optimizer="adamw", master_weights=True, steps=args.steps)
                else:
                    m = _hf(s, device, task, seq, micro_batch, checkpointing, args.steps)
                row[stack] = m.__dict__
            except torch.cuda.OutOfMemoryError as error:
                row[stack] = {"error": f"out of memory: {str(error)[:200]}"}
            _free(device)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
