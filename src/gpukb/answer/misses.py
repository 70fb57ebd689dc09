"""When nothing fits: per GPU type, the nearest miss and the smallest change to the workload that makes it fit.

The changes are tried in order, least change to the user's question first: more GPUs than gpu_count, then a
leaner number format (lower precision, an 8-bit optimizer, an FP8 KV cache), then CPU offload and
recomputation, then smaller shapes (a shorter sequence, fewer sequences at once). Each is one more ask over
the GPU types still unfixed, so a failing ask costs a handful of asks, and an ask that fits costs none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ..core.errors import ASK_ERRORS
from .summary import Miss

if TYPE_CHECKING:
    from .answer import Answer, Option
    from .workload import Workload

Ask = Callable[[dict[str, Any]], "Answer"]
LOWER = {"fp32": "bf16", "bf16": "int8", "fp16": "int8", "fp8": "int8", "int8": "int4"}  # inference weights
SHORTEST = 256  # tokens: shorter sequences are no longer the workload asked about


def _changes(w: Workload, answered: str | None = None) -> Iterator[tuple[dict[str, Any], str, str]]:
    """(fields to change, in words, in Chinese), least change first; `answered`: the weights' precision the answer
    sized (a checkpoint's own where its config.json declares one)."""
    inference = w.task == "inference"
    if w.gpu_count is not None:
        yield {"gpu_count": None}, "more GPUs than gpu_count {gpu_count}", "超出 gpu_count {gpu_count} 的上限"
    if inference:
        precision = answered or w.precision
        while precision in LOWER:
            precision = LOWER[precision]
            yield {"precision": precision}, f"weights in {precision}", f"权重使用 {precision}"
        if w.kv_cache_precision not in ("fp8", "int8"):
            yield {"kv_cache_precision": "fp8"}, "an FP8 KV cache", "FP8 KV 缓存"
    else:
        if w.task == "lora":
            yield {"task": "qlora"}, "QLoRA (a 4-bit base) instead of LoRA", "用 QLoRA（4 位基座）代替 LoRA"
        if (w.optimizer or "adamw") == "adamw":
            yield {"optimizer": "adamw_8bit"}, "an 8-bit AdamW", "8 位 AdamW"
        if w.activation_checkpointing is False:
            yield {"activation_checkpointing": True}, "activation checkpointing", "激活重计算"
        if w.offload == "none":
            yield {"offload": None}, "CPU offload", "卸载到 CPU 内存"
        if w.micro_batch_size > 1:
            yield {"micro_batch_size": 1}, "micro_batch_size 1", "micro_batch_size 1"
    for seq in (w.seq_len // 2, w.seq_len // 4, w.seq_len // 8):  # inference: below prompt + output is refused
        if seq >= SHORTEST:
            yield {"seq_len": seq}, f"seq_len {seq}", f"seq_len {seq}"
    if inference and w.batch_size > 1:
        yield {"batch_size": 1}, "batch_size 1", "batch_size 1"


def nearest_misses(w: Workload, answer: Answer, ask: Ask) -> list[Miss]:
    """Each rejected GPU type's closest plan, nearest first, with the first change of `_changes` that fits it."""
    given = w.model_dump(exclude_unset=True)
    open_gpus = {o.gpu: o for o in answer.rejected}
    found: dict[str, tuple[dict[str, Any], str, str]] = {}
    rank: dict[str, tuple[int, int]] = {}  # the change's place in the order, then the GPUs it then needs
    for order, (change, words, words_zh) in enumerate(_changes(w, answer.workload.precision)):
        if len(found) == len(open_gpus):
            break
        todo = [g for g in open_gpus if g not in found]
        fields = {k: v for k, v in {**given, **change, "gpus": todo}.items() if v is not None}
        try:
            tried = ask(fields)
        except ASK_ERRORS:
            continue  # this change does not apply to this workload (e.g. a precision the task refuses)
        for option in tried.options:
            # a pin dropped (None) is shown as what the engine then chose
            chosen = {"gpu_count": option.count, "offload": option.strategy.offload,
                      "activation_checkpointing": option.strategy.activation_checkpointing}
            moved = {k: chosen[k] if v is None else v for k, v in change.items()}
            rank[option.gpu] = (order, option.count)
            if "gpu_count" in change:
                found[option.gpu] = (moved, f"gpu_count {option.count} ({words.format(gpu_count=w.gpu_count)})",
                                     f"gpu_count 改为 {option.count}（{words_zh.format(gpu_count=w.gpu_count)}）")
            else:
                found[option.gpu] = (moved, f"{words}: fits on {option.count} GPU(s)",
                                     f"{words_zh}：{option.count} 块 GPU 即可放下")
    misses = []
    for gpu, option in open_gpus.items():
        change, fix, fix_zh = found.get(gpu, ({}, "no single change tried fits it (more GPUs, lower precision, "
                                                   "offload, shorter sequences)",
                                                   "尝试过的单项改动（更多 GPU、更低精度、卸载到 CPU 内存、缩短序列）都放不下"))
        reason = option.deciding_finding
        misses.append(Miss(gpu=gpu, count=option.count, per_gpu_bytes=option.per_gpu_bytes,
                           usable_bytes=option.usable_bytes, rule=reason.rule if reason else "",
                           change=change, fix=fix, fix_zh=fix_zh))
    # the smallest change first: earliest in the order, then the fewest GPUs it needs, then the nearest plan
    misses.sort(key=lambda m: (*rank.get(m.gpu, (len(rank) + 99, 0)), _fill(open_gpus[m.gpu]), m.gpu))
    return misses


def _fill(o: Option) -> float:
    """How far over its usable memory the closest plan is: 1.0 just fits."""
    return o.per_gpu_bytes / o.usable_bytes if o.usable_bytes else float("inf")
