"""The ask page's grid: the questions answered by ask() when the site is built, and their keys.

A question is a workload given by its field names (the names the page's query string uses). The
grid is a union of blocks per task, each a product of a few fields' values, with None for a field
left out (the engine's default); the catalog's models times every block. It is kept to what a
reader asks most (shapes, a handful of GPUs and systems, the frameworks, the objectives) so the
build stays within a couple of minutes on two cores; anything else, the page answers with the
command that asks it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator
from typing import Any

from ..knowledge.kb import KnowledgeBase

# The form's fields after model and task, in the order a key and a command list them.
FIELDS = ("gpus", "systems", "gpu_count", "seq_len", "micro_batch_size", "batch_size", "tokens", "deadline_days",
          "ttft_ms", "tpot_ms", "framework", "objective")
TASKS = ("pretrain", "full_finetune", "lora", "qlora", "inference")
LIST_FIELDS = ("gpus", "systems")  # lists in a workload, comma-separated in a query string
SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]{0,79}$")  # ids that may name a data file and go into a URL unescaped

# The GPUs and systems most asked about: a consumer card, a 48 GB workstation card, the A100, H100
# and China's H20; one rented card, one 8-GPU A100 node and one 8-GPU H100 node.
COMMON_GPUS = ("rtx-4090-24gb", "l40s-48gb", "a100-sxm-80gb", "h100-sxm-80gb", "h20-96gb")
COMMON_SYSTEMS = ("runpod-1x-rtx-4090", "lambda-8x-a100-sxm-80gb", "aws-p5-48xlarge")
OBJECTIVES = ("speed", "cost", "gpus")

Block = dict[str, tuple[Any, ...]]
_FINETUNE: tuple[Block, ...] = (
    {"seq_len": (None, 2048, 8192), "micro_batch_size": (None, 4), "objective": (None, "cost", "gpus")},
    {"gpus": COMMON_GPUS, "gpu_count": (None, 1, 8)},
    {"systems": COMMON_SYSTEMS},
    {"tokens": ("1B",), "deadline_days": (None, 1)},
)
BLOCKS: dict[str, tuple[Block, ...]] = {
    "pretrain": (
        {"tokens": (None, "100B", "1T"), "seq_len": (None, 2048, 8192), "objective": (None, "cost")},
        {"tokens": ("1T",), "deadline_days": (30, 90)},
        {"gpus": COMMON_GPUS, "tokens": (None, "1T")},
        {"systems": COMMON_SYSTEMS, "tokens": ("1T",)},
    ),
    "full_finetune": _FINETUNE,
    "lora": _FINETUNE,
    "qlora": _FINETUNE,
    "inference": (
        {"seq_len": (None, 2048, 32768), "batch_size": (None, 16, 64), "objective": (None, "cost", "gpus")},
        {"ttft_ms": (None, 200, 1000), "tpot_ms": (None, 20, 50)},
        {"gpus": COMMON_GPUS, "gpu_count": (None, 1, 8)},
        {"systems": COMMON_SYSTEMS},
    ),
}


def value_text(value: Any) -> str:
    """A field's value as the query string and the key write it: a list comma-separated, a whole number
    without a decimal point (as a browser's String(Number(...)) writes it)."""
    if isinstance(value, list | tuple):
        return ",".join(value_text(v) for v in value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def key(question: dict[str, Any]) -> str:
    """The lookup key of a question within its model and task: its given fields in FIELDS order."""
    return "&".join(f"{name}={value_text(question[name])}" for name in FIELDS if question.get(name) is not None)


def frameworks(kb: KnowledgeBase, task: str) -> list[str]:
    return sorted(f.id for f in kb.frameworks.values() if task in f.tasks and f.status != "deprecated")


def _blocks(kb: KnowledgeBase, task: str) -> Iterator[Block]:
    yield from BLOCKS[task]
    yield {"framework": tuple(frameworks(kb, task))}  # every stack that runs the task, at the default shape


def grid(kb: KnowledgeBase, task: str) -> list[dict[str, Any]]:
    """The questions of one task for any model (without model and task), each once, in block order;
    GPUs and systems the catalog lacks are left out."""
    seen: dict[str, dict[str, Any]] = {}
    for block in _blocks(kb, task):
        names = list(block)
        for values in itertools.product(*(block[n] for n in names)):
            question = {n: v for n, v in zip(names, values, strict=True) if v is not None}
            if question.get("gpus") and question["gpus"] not in kb.gpus:
                continue
            if question.get("systems") and question["systems"] not in kb.systems:
                continue
            question = {n: [v] if n in LIST_FIELDS else v for n, v in question.items()}
            seen.setdefault(key(question), question)
    return list(seen.values())


def models(kb: KnowledgeBase, only: Iterable[str] | None = None) -> list[str]:
    """The catalog models the page offers: current ones whose id can name a file."""
    chosen = set(only) if only is not None else None
    return [m for m in sorted(kb.models) if kb.models[m].status != "deprecated" and SLUG.match(m)
            and (chosen is None or m in chosen)]


def in_form(workload: dict[str, Any]) -> bool:
    """Whether a workload (a scenario's) is made only of the form's fields, so the page can be asked it."""
    return (set(workload) <= {"model", "task", *FIELDS} and workload.get("task") in TASKS
            and isinstance(workload.get("model"), str))
