"""Byte-identity of answers: dump the JSON of a fixed set of workloads, or compare with a dump.

Run: python benchmarks/compare_json.py dump DIR    (before a change)
     python benchmarks/compare_json.py check DIR   (after it: exits 1 and names every answer that differs)

The workloads are every scenario in site/scenarios.yaml and tests/data/scenarios.yaml plus a
hand-picked set that reaches the other paths of the rules (adapters, batches, custom models,
several nodes, placement 'all', SLA targets, KV-cache precision, cost). Each file holds
`model_dump_json()` of the answer, or the error an ask raised, so failures must stay identical too.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import Any

import gpukb
from gpukb.contrib.scenarios import load_scenarios
from gpukb.core.errors import ASK_ERRORS
from gpukb.core.safewrite import write_file

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_FILES = (ROOT / "site" / "scenarios.yaml", ROOT / "tests" / "data" / "scenarios.yaml")

PICKED: dict[str, dict[str, Any]] = {
    "pick-7b-full": {"model": "llama-2-7b", "task": "full_finetune"},
    "pick-7b-one-gpu": {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]},
    "pick-8b-lora-seq": {"model": "llama-3-8b", "task": "lora", "seq_len": 8192, "lora_rank": 64},
    "pick-mixtral-qlora": {"model": "mixtral-8x7b", "task": "qlora"},
    "pick-70b-inference-batch": {"model": "llama-3-70b", "task": "inference", "batch_size": 8},
    "pick-70b-inference-sla": {"model": "llama-3-70b", "task": "inference", "batch_size": 16, "prompt_len": 2000,
                               "output_len": 500, "ttft_ms": 500, "tpot_ms": 40},
    "pick-8b-kv-fp8": {"model": "llama-3-8b", "task": "inference", "batch_size": 32, "kv_cache_precision": "fp8"},
    "pick-qwen-cost": {"model": "qwen2.5-14b", "task": "inference", "batch_size": 4, "objective": "cost"},
    "pick-custom-model": {"params": "3B", "layers": 26, "hidden_size": 3072, "heads": 24, "kv_heads": 8,
                          "vocab_size": 32000, "intermediate_size": 8192, "task": "full_finetune"},
    "pick-405b-multinode": {"model": "llama-3.1-405b", "task": "pretrain", "tokens": "15T"},
    "pick-70b-placement-all": {"model": "llama-2-70b", "task": "full_finetune", "gpu_count": 64, "placement": "all",
                               "gpus": ["h100-sxm-80gb", "a100-sxm-80gb"]},
    "pick-13b-zero-offload": {"model": "llama-2-13b", "task": "full_finetune", "zero_stage": 3,
                              "offload": "optimizer", "gpu_count": 4},
    "pick-7b-tp-pp": {"model": "mistral-7b", "task": "full_finetune", "tensor_parallel": 2, "pipeline_parallel": 2,
                      "gpu_count": 8, "global_batch_size": 256, "tokens": "50B"},
    "pick-32b-fp8-train": {"model": "qwen2.5-32b", "task": "full_finetune", "precision": "fp8",
                           "optimizer": "adamw_8bit", "activation_checkpointing": True},
    "pick-72b-int4-inference": {"model": "qwen2.5-72b", "task": "inference", "precision": "int4", "seq_len": 32768,
                                "batch_size": 2, "gpus": ["rtx-4090-24gb", "l40s-48gb", "h100-pcie-80gb"]},
    "pick-consumer-lora": {"model": "qwen2.5-7b", "task": "lora", "gpus": ["rtx-3090-24gb", "rtx-4090-24gb"],
                           "micro_batch_size": 4},
    "pick-7b-no-flash": {"model": "llama-2-7b", "task": "pretrain", "flash_attention": False, "tokens": "10B"},
    "pick-8b-serving-output": {"model": "llama-3.1-8b", "task": "inference", "batch_size": 16, "prompt_len": 1000,
                               "output_len": 200, "kv_cache_precision": "fp8"},
    "pick-unknown-gpu": {"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gbx"]},
}


def workloads() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in SCENARIO_FILES:
        for scenario in load_scenarios(path):
            found[f"{path.parent.name}-{scenario.id}"] = scenario.workload
    return found | PICKED


def answer_text(workload: dict[str, Any]) -> str:
    try:
        return gpukb.ask(workload).model_dump_json()
    except ASK_ERRORS as err:
        return f"error {type(err).__name__}: {err}"


def dump(folder: Path) -> None:
    for name, workload in workloads().items():  # a new dump replaces the last one's files, never a link's target
        write_file(folder, f"{name}.json", answer_text(workload), replace=True)
    print(f"wrote {len(workloads())} answers to {folder}")


def check(folder: Path) -> int:
    differ = 0
    for name, workload in workloads().items():
        expected = (folder / f"{name}.json").read_text(encoding="utf-8")
        got = answer_text(workload)
        if got != expected:
            differ += 1
            first = next(i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b) if got[:1] else 0
            print(f"DIFFERS {name}: first difference at character {first}")
            for line in list(difflib.unified_diff([expected[max(0, first - 200):first + 200]],
                                                  [got[max(0, first - 200):first + 200]], lineterm=""))[2:]:
                print(f"    {line}")
    print(f"{len(workloads()) - differ} of {len(workloads())} answers byte-identical")
    return 1 if differ else 0


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in ("dump", "check"):
        print(__doc__)
        return 2
    folder = Path(sys.argv[2])
    if sys.argv[1] == "dump":
        dump(folder)
        return 0
    return check(folder)


if __name__ == "__main__":
    sys.exit(main())
