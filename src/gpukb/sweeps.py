"""Sweeps: many workloads answered across processes, one compact record per answer, in input order.

Asks are stateless, so a sweep is a map of `ask` over its workloads: each worker process loads the
knowledge base once and answers a share of them. Records come back in the order of the workloads,
as soon as each is answered and every one before it has been; a workload whose ask fails becomes a
record holding the error, never the end of the sweep.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from .packaged import load_kb

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
    """The workloads of a file (each the dictionary ask() takes): a YAML or JSON list, or JSON Lines
    (`.jsonl` or a file starting with `{`: one workload a line, or a record `gpukb sweep` wrote). Read with the knowledge
    base's bounded YAML loader; a problem is a SweepFileError naming the file, line and column."""
    path = Path(path)
    if not path.is_file():
        raise SweepFileError(f"{path}: no such file")
    with path.open(encoding="utf-8") as handle:
        starts_with_mapping = handle.read(4096).lstrip().startswith("{")  # a YAML or JSON list starts otherwise
    if path.suffix == ".jsonl" or starts_with_mapping:
        return _json_lines(path)
    from .yamlpos import load_located

    located, problems = load_located(path, str(path))
    if located is None or problems:
        first = problems[0]
        raise SweepFileError(f"{first.file}:{first.line}:{first.column}: {first.message}")
    if not isinstance(located.data, list):
        raise SweepFileError(f"{path}:1:1: expected a list of workloads (mappings such as {{model: llama-2-7b, task: lora}})")
    for i, item in enumerate(located.data):
        if not isinstance(item, dict):
            line, column = located.where((i,))
            raise SweepFileError(f"{path}:{line}:{column}: workload {i + 1} is not a mapping such as "
                                 "{model: llama-2-7b, task: lora}")
    return located.data


def _json_lines(path: Path) -> list[dict[str, Any]]:
    workloads = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as error:
            raise SweepFileError(f"{path}:{number}:{error.colno}: not JSON: {error.msg}") from None
        if not isinstance(item, dict):
            raise SweepFileError(f"{path}:{number}:1: a line must hold one workload, a JSON object such as "
                                 '{"model": "llama-2-7b", "task": "lora"}')
        # a line of `gpukb sweep` output holds its workload under "workload"
        workloads.append(item["workload"] if isinstance(item.get("workload"), dict) else item)
    return workloads


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
                         "checkpointing": s.activation_checkpointing, "offload": s.offload, "nodes": s.nodes,
                         **({"ep": s.expert_parallel} if s.expert_parallel > 1 else {}),
                         **({"cp": s.context_parallel} if s.context_parallel > 1 else {})},
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


_kb: Any = None  # this process's knowledge base, loaded once by _start_worker


def _start_worker(root: str | None) -> None:
    global _kb
    _kb = load_kb(root)


def _answer(index: int, workload: Any) -> dict[str, Any]:
    try:
        return record(index, workload, _kb.ask(workload))
    except Exception as err:  # any failure is this workload's record; the sweep goes on
        return error_record(index, workload, err)


def _plain(workload: Any) -> Any:
    """A workload as JSON data: a Workload model as the fields it was given."""
    dump = getattr(workload, "model_dump", None)
    return dump(mode="json", exclude_unset=True) if callable(dump) else workload


def sweep(workloads: Iterable[Any], processes: int = 1, root: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Answer `workloads` (the packaged knowledge base, or kb/ and rules/ under `root`) with
    `processes` worker processes; yields one record per workload, in input order, as they are ready."""
    if processes < 1:
        raise ValueError("processes must be at least 1")
    items = [_plain(w) for w in workloads]
    where = str(Path(root).resolve()) if root is not None else None
    if processes == 1 or len(items) <= 1:
        _start_worker(where)
        for index, workload in enumerate(items):
            yield _answer(index, workload)
        return
    yield from _across(items, min(processes, len(items)), where)


# The workers are gpukb's own processes, so they may tune glibc's allocator (read at start-up; other C
# libraries ignore these variables): each ask's durable-rules session allocates and frees ~2 MB of
# tables, which glibc would hand back to the system and then page-fault in again for the next ask
# (~550 minor faults and ~10% of the CPU time of a full-catalog ask). A library must not set this in
# its caller's process; these processes run nothing else.
_WORKER_ALLOCATOR = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}


def _across(items: list[Any], processes: int, root: str | None) -> Iterator[dict[str, Any]]:
    """Workers are `python -m gpukb.sweeps` processes fed JSON Lines on stdin, not multiprocessing's:
    they depend on nothing in the caller's __main__ (which a spawned process imports again, and
    cannot from a REPL or a pipe) and fork nothing (durable-rules keeps process-global state in C).

    Chunks of consecutive workloads go to the workers in turn, so record i is the next line of its
    worker's output: reading the workers in input order needs no buffering here."""
    chunk = max(1, min(32, len(items) // (processes * 8)))  # big enough to amortise the pipes, small enough to balance
    lines: list[str | None] = []
    for workload in items:
        try:
            lines.append(json.dumps(workload))
        except (TypeError, ValueError):
            lines.append(None)  # not JSON data: answered here, as an error record
    worker_of = [(i // chunk) % processes for i in range(len(items))]
    command = [sys.executable, "-m", "gpukb.sweeps", *([root] if root else [])]
    env = {**_WORKER_ALLOCATOR, **os.environ}  # a value the caller set wins
    workers = [subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8",
                                env=env)
               for _ in range(processes)]
    feeders = [threading.Thread(target=_feed, args=(worker, [f"{i}\t{line}\n" for i, line in enumerate(lines)
                                                          if line is not None and worker_of[i] == n]), daemon=True)
               for n, worker in enumerate(workers)]
    try:
        for feeder in feeders:
            feeder.start()
        for index, (workload, line) in enumerate(zip(items, lines, strict=True)):
            if line is None:
                yield error_record(index, workload, TypeError("the workload is not JSON data"))
                continue
            worker = workers[worker_of[index]]
            answer = worker.stdout.readline() if worker.stdout else ""
            if answer:
                yield json.loads(answer)
            else:  # the worker is gone (a crash in C?): its workloads get error records
                yield error_record(index, workload, RuntimeError(f"the worker process exited with code {worker.wait()}"))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
            worker.wait()
            if worker.stdout:
                worker.stdout.close()


def _feed(worker: subprocess.Popen[str], lines: list[str]) -> None:
    """Write a worker's workloads and close its input (a thread each: a full pipe must not stall the others)."""
    try:
        assert worker.stdin is not None
        with worker.stdin:
            worker.stdin.writelines(lines)
    except (BrokenPipeError, OSError):  # the worker died; the reader turns its workloads into error records
        pass


def _worker_main(argv: list[str]) -> None:
    """`python -m gpukb.sweeps [ROOT]`: answer "index<TAB>workload JSON" lines on stdin, a record per line."""
    _start_worker(argv[0] if argv else None)
    for line in sys.stdin:
        index, _, workload = line.partition("\t")
        sys.stdout.write(json.dumps(_answer(int(index), json.loads(workload))) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    _worker_main(sys.argv[1:])
