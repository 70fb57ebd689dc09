"""Sweeps: many workloads answered across processes, one compact record per answer, in input order.

Asks are stateless, so a sweep is a map of `ask` over its workloads: each worker process loads the
knowledge base once and answers a share of them. Records come back in the order of the workloads,
as soon as each is answered and every one before it has been; a workload whose ask fails becomes a
record holding the error, never the end of the sweep.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

GridValues = Iterable[str | int]


def grid(models: GridValues, tasks: GridValues, seq_lens: GridValues = (), gpus: GridValues = ()) -> list[dict[str, Any]]:
    """Every combination, models outermost: with `gpus`, each workload is asked of one GPU type;
    without, of the whole catalog (and without `seq_lens`, at the default sequence length)."""
    workloads = []
    for model, task, seq_len, gpu in itertools.product(models, tasks, list(seq_lens) or [None], list(gpus) or [None]):
        workload: dict[str, Any] = {"model": model, "task": task}
        if seq_len is not None:
            workload["seq_len"] = seq_len
        if gpu is not None:
            workload["gpus"] = [gpu]
        workloads.append(workload)
    return workloads


class SweepFileError(ValueError):
    pass


def read_workloads(path: str | Path) -> list[dict[str, Any]]:
    """A YAML or JSON file holding a list of workloads (each the dictionary ask() takes)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        data = json.loads(text)
    else:
        import yaml

        data = yaml.safe_load(text)
    if not isinstance(data, list) or not all(isinstance(item, dict) for item in data):
        raise SweepFileError(f"{path}: expected a list of workloads (mappings such as {{model: llama-2-7b, task: lora}})")
    return data


def record(index: int, workload: dict[str, Any], answer: Any) -> dict[str, Any]:
    """The compact record of one answer: the best option, whether each GPU type fits, key figures."""
    best = answer.best
    out: dict[str, Any] = {"index": index, "workload": workload}
    if best is None:
        out["best"] = None
    else:
        s = best.strategy
        out["best"] = {
            "gpu": best.gpu, "count": best.count,
            "strategy": {"dp": s.data_parallel, "tp": s.tensor_parallel, "pp": s.pipeline_parallel, "zero": s.zero_stage,
                         "checkpointing": s.activation_checkpointing, "offload": s.offload, "nodes": s.nodes},
            "per_gpu_bytes": best.per_gpu_bytes, "tokens_per_s": best.tokens_per_s,
            **{name: value for name in ("time_to_train_s", "ttft_s", "tpot_s", "usd_per_hour", "cost_usd",
                                        "usd_per_million_tokens", "max_concurrency")
               if (value := getattr(best, name)) is not None},
        }
    out["fits"] = {o.gpu: o.fits for o in sorted((*answer.options, *answer.rejected), key=lambda o: o.gpu)}
    out["memory_bytes"] = answer.memory.total
    out["findings"] = sorted({f.kind for f in answer.findings if f.severity != "info"})
    return out


def error_record(index: int, workload: Any, error: BaseException) -> dict[str, Any]:
    return {"index": index, "workload": workload, "error": f"{type(error).__name__}: {error}"}


_kb: Any = None  # the worker's knowledge base, loaded once by _start_worker


def _start_worker(root: str | None) -> None:
    global _kb
    import gpukb

    _kb = gpukb.load_kb(root)


def _answer(item: tuple[int, Any]) -> dict[str, Any]:
    index, workload = item
    try:
        return record(index, workload, _kb.ask(workload))
    except Exception as err:  # any failure is this workload's record; the sweep goes on
        return error_record(index, workload, err)


def sweep(workloads: Iterable[dict[str, Any]], processes: int = 1, root: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Answer `workloads` (the packaged knowledge base, or kb/ and rules/ under `root`) with
    `processes` worker processes; yields one record per workload, in input order, as they are ready.

    Workers are started fresh ("spawn"), not forked: durable-rules keeps process-global state in C.
    """
    if processes < 1:
        raise ValueError("processes must be at least 1")
    items = list(enumerate(workloads))
    where = str(Path(root).resolve()) if root is not None else None
    if processes == 1 or len(items) <= 1:
        _start_worker(where)
        yield from map(_answer, items)
        return
    processes = min(processes, len(items))
    chunk = max(1, min(32, len(items) // (processes * 8)))  # big enough to amortise the pipe, small enough to balance
    context = multiprocessing.get_context("spawn")
    with context.Pool(processes, initializer=_start_worker, initargs=(where,)) as pool:
        yield from pool.imap(_answer, items, chunksize=chunk)
