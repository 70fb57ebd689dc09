"""Sweeps: many workloads answered across processes, one compact record per answer, in input order.

Asks are stateless, so a sweep is a map of `ask` over its workloads: each worker process loads the
knowledge base once and answers a share of them. Records come back in the order of the workloads,
as soon as each is answered and every one before it has been; a workload whose ask fails becomes a
record holding the error, never the end of the sweep.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import Any

from ..core import jsontext, safepath
from ..language.expr import MAX_MAGNITUDE
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


MAX_FILE_BYTES = 1 << 30  # a million workloads of ~200 bytes each, with room to spare


class SweepFileError(ValueError):
    pass


# Bounds on a line of JSON Lines, as the YAML loader's (yamlpos): a workload nests two deep (a list
# of GPU ids in a mapping), and a number is checked before Python converts it (thousands of digits
# take long, and more than 4,300 are refused by int() itself).
MAX_NESTING = 32
MAX_DIGITS = 80


def read_workloads(path: str | Path) -> list[dict[str, Any]]:
    """The workloads of a file (each the dictionary ask() takes): a YAML or JSON list, or JSON Lines
    (`.jsonl` or a file starting with `{`: one workload a line, or a record `gpukb sweep` wrote). Read with the knowledge
    base's bounded YAML loader, or line by line within the same bounds; a problem is a SweepFileError
    naming the file and line (and the column or field where known)."""
    return read_located_workloads(path)[0]


def read_located_workloads(path: str | Path) -> tuple[list[dict[str, Any]], list[str]]:
    """read_workloads, and where each workload starts (`file:line`), for its error record to name."""
    path = Path(path)
    try:  # a regular file only (a FIFO or /dev/stdin would block or be read half), its name bounded
        data = safepath.read_bytes(path, MAX_FILE_BYTES)
    except safepath.RefusedPath as refused:
        raise SweepFileError(f"{path}: {refused}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SweepFileError(f"{path}: larger than {MAX_FILE_BYTES:,} bytes")
    starts_with_mapping = data[:4096].lstrip().startswith(b"{")  # a YAML or JSON list starts otherwise
    if path.suffix == ".jsonl" or starts_with_mapping:
        return _json_lines(path, data)
    from ..knowledge.yamlpos import load_located

    located, problems = load_located(path, str(path))
    if located is None or problems:
        first = problems[0]
        raise SweepFileError(f"{first.file}:{first.line}:{first.column}: {first.message}")
    if not isinstance(located.data, list):
        raise SweepFileError(f"{path}:1:1: expected a list of workloads (mappings such as {{model: llama-2-7b, task: lora}})")
    places = []
    for i, item in enumerate(located.data):
        line, column = located.where((i,))
        if not isinstance(item, dict):
            raise SweepFileError(f"{path}:{line}:{column}: workload {i + 1} is not a mapping such as "
                                 "{model: llama-2-7b, task: lora}")
        places.append(f"{path}:{line}")
    return located.data, places


def _json_lines(path: Path, data: bytes) -> tuple[list[dict[str, Any]], list[str]]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SweepFileError(f"{path}:{line}: not UTF-8 text (byte {error.start + 1} of the file)") from None
    workloads, places = [], []
    for number, line in enumerate(text.split("\n"), start=1):  # numbered as editors do: \n ends a line
        if not line.strip():
            continue
        item = _json_line(line, f"{path}:{number}")
        if not isinstance(item, dict):
            raise SweepFileError(f"{path}:{number}:1: a line must hold one workload, a JSON object such as "
                                 '{"model": "llama-2-7b", "task": "lora"}')
        # a line of `gpukb sweep` output holds its workload under "workload"
        workloads.append(item["workload"] if isinstance(item.get("workload"), dict) else item)
        places.append(f"{path}:{number}")
    return workloads, places


class _Refused:
    """A number a workload may not hold, left in its place so that its field can be named."""

    def __init__(self, why: str) -> None:
        self.why = why


def _json_line(line: str, where: str) -> Any:
    if line.count("[") + line.count("{") > MAX_NESTING:  # only then can it nest that deep
        _check_nesting(line, where)
    refused: list[_Refused] = []

    def refuse(why: str) -> _Refused:
        refused.append(_Refused(why))
        return refused[-1]

    def integer(digits: str) -> Any:
        if len(digits) > MAX_DIGITS:
            return refuse(f"an integer of {len(digits.lstrip('-')):,} digits")
        value = int(digits)
        return value if abs(value) <= MAX_MAGNITUDE else refuse(f"{digits} is larger than {MAX_MAGNITUDE:g}")

    def real(digits: str) -> Any:
        value = float(digits)
        return value if math.isfinite(value) and abs(value) <= MAX_MAGNITUDE else refuse(
            f"{digits[:40]}{'...' if len(digits) > 40 else ''} is not a finite number of at most {MAX_MAGNITUDE:g}")

    try:
        item = json.loads(line, parse_int=integer, parse_float=real,
                          parse_constant=lambda name: refuse(f"{name} is not a finite number"))
    except json.JSONDecodeError as error:
        raise SweepFileError(f"{where}:{error.colno}: not JSON: {error.msg}") from None
    except (ValueError, RecursionError) as error:  # not expected within the bounds above; still located
        raise SweepFileError(f"{where}: not JSON: {error}") from None
    if refused:
        field = _field_of(item, refused[0])
        raise SweepFileError(f"{where}: {field + ': ' if field else ''}{refused[0].why}")
    return item


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _check_nesting(line: str, where: str) -> None:
    """Refuses a line whose lists and objects nest deeper than MAX_NESTING, at the bracket that does
    so, naming the workload's field it is in (found without recursion)."""
    depth, field = 0, ""
    for token in _TOKENS.finditer(line):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise SweepFileError(f"{where}:{token.start() + 1}: {field + ': ' if field else ''}"
                                     f"nested more than {MAX_NESTING} levels deep")
        elif mark in "]}":
            depth -= 1
        elif depth == 1:  # a key or a value of the workload; the last before a bracket is its key
            with suppress(ValueError):
                field = json.loads(mark)


def _field_of(item: Any, target: object, prefix: str = "") -> str | None:
    """Where `target` sits in `item`: `seq_len`, `gpus[1]`, `workload.tokens`."""
    pairs = item.items() if isinstance(item, dict) else enumerate(item) if isinstance(item, list) else ()
    for key, value in pairs:
        here = f"{prefix}[{key}]" if isinstance(key, int) else f"{prefix}.{key}" if prefix else str(key)
        if value is target:
            return here
        if (found := _field_of(value, target, here)) is not None:
            return found
    return None


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
                                        "usd_per_million_tokens", "max_concurrency", "energy_kwh", "co2_kg")
               if (value := getattr(best, name)) is not None},
            # RL runs: the step time, where it goes and the placement (gpukb.estimate.rl)
            **({"rl": best.rl.model_dump()} if best.rl is not None else {}),
            # under load (request_rate): the percentiles at the rate, max_rate and utilisation (gpukb.estimate.load)
            **({"load": best.load.model_dump()} if best.load is not None else {}),
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


def cpus() -> int:
    """The CPUs this process may run on (its affinity mask, where the system has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def sweep(workloads: Iterable[Any], processes: int = 1, root: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Answer `workloads` (the packaged knowledge base, or kb/ and rules/ under `root`) with up to
    `processes` worker processes (never more than the CPUs this process may use, nor than the
    workloads); yields one record per workload, in input order, as they are ready."""
    if processes < 1:
        raise ValueError("processes must be at least 1")
    items = [_plain(w) for w in workloads]
    where = str(Path(root).resolve()) if root is not None else None
    processes = min(processes, cpus(), len(items))
    if processes <= 1:
        _start_worker(where)
        for index, workload in enumerate(items):
            yield _answer(index, workload)
        return
    yield from _across(items, processes, where)


# The workers are gpukb's own processes, so they may tune glibc's allocator (read at start-up; other C
# libraries ignore these variables): each ask's durable-rules session allocates and frees ~2 MB of
# tables, which glibc would hand back to the system and then page-fault in again for the next ask
# (~550 minor faults and ~10% of the CPU time of a full-catalog ask). A library must not set this in
# its caller's process; these processes run nothing else.
_WORKER_ALLOCATOR = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(32 << 20)}

# A worker starts isolated (-I: no working folder on sys.path, no PYTHON* variables, no user site),
# then takes the caller's import path less the working folder and the folder of the caller's script:
# so it runs the caller's gpukb (a wheel, an editable install, a user install, a PYTHONPATH) and
# nothing from the folder the sweep was started in, such as a json.py there.
_BOOT = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
         "from gpukb.estimate.sweeps import _worker_main; _worker_main(sys.argv[2:])")
_READY = "ready\n"


def _import_path() -> list[str]:
    main = getattr(sys.modules.get("__main__"), "__file__", None)
    dropped = {os.getcwd(), *([os.path.dirname(os.path.abspath(main))] if main else [])}
    return [p for p in sys.path if p and os.path.abspath(p) not in dropped]


class _Worker:
    """A worker process, the workloads it was given (fed by a thread: a full pipe must not stall the
    others) and whether it has loaded the knowledge base."""

    def __init__(self, command: list[str], env: dict[str, str], lines: list[str]) -> None:
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        encoding="utf-8", env=env)
        self.ready = False
        self.failure = ""  # why it did not start, as it said
        self.code: int | None = None  # its exit status, once ended
        threading.Thread(target=_feed, args=(self.process, lines), daemon=True).start()

    def next(self) -> str:
        """Its next record as a line, or "" when it is gone (a line cut short by its death included)."""
        if self.code is not None or self.process.stdout is None:
            return ""
        if not self.ready:
            first = self.process.stdout.readline()
            self.ready, self.failure = first == _READY, first.strip()
            if not self.ready:
                return ""
        line = self.process.stdout.readline()
        return line if line.endswith("\n") else ""

    def end(self) -> int:
        if self.code is None:
            if self.process.poll() is None:
                self.process.kill()
            self.code = self.process.wait()
            if self.process.stdout:
                self.process.stdout.close()
        return self.code


def _across(items: list[Any], processes: int, root: str | None) -> Iterator[dict[str, Any]]:
    """Workers are isolated Python processes fed JSON Lines on stdin, not multiprocessing's: they
    depend on nothing in the caller's __main__ (which a spawned process imports again, and cannot
    from a REPL or a pipe) and fork nothing (durable-rules keeps process-global state in C).

    Chunks of consecutive workloads go to the workers in turn, so record i is the next line of its
    worker's output: reading the workers in input order needs no buffering here. A worker that dies
    after loading the knowledge base (a crash in C) dies answering the workload it was on: that one
    gets an error record, and a new worker answers the rest of its share."""
    chunk = max(1, min(32, len(items) // (processes * 8)))  # big enough to amortise the pipes, small enough to balance
    lines: list[str | None] = []
    for workload in items:
        try:
            lines.append(json.dumps(workload))
        except (TypeError, ValueError):
            lines.append(None)  # not JSON data: answered here, as an error record
    worker_of = [(i // chunk) % processes for i in range(len(items))]
    command = [sys.executable, "-I", "-c", _BOOT, json.dumps(_import_path()), *([root] if root else [])]
    env = {**_WORKER_ALLOCATOR, **os.environ}  # a value the caller set wins

    def share(n: int, after: int) -> list[str]:
        return [f"{i}\t{line}\n" for i, line in enumerate(lines) if i > after and line is not None and worker_of[i] == n]

    workers = [_Worker(command, env, share(n, -1)) for n in range(processes)]
    try:
        for index, (workload, line) in enumerate(zip(items, lines, strict=True)):
            if line is None:
                yield error_record(index, workload, TypeError("the workload is not JSON data"))
                continue
            n = worker_of[index]
            answer = workers[n].next()
            if answer:
                yield json.loads(answer)
                continue
            was_ready, code = workers[n].ready, workers[n].end()
            if was_ready:
                yield error_record(index, workload, RuntimeError(f"the worker process died answering it ({_ending(code)})"))
                if rest := share(n, index):
                    workers[n] = _Worker(command, env, rest)
            else:  # it could not load the knowledge base: a new one would fail too
                why = workers[n].failure or _ending(code)
                yield error_record(index, workload, RuntimeError(f"the worker process did not start ({why})"))
    finally:
        for worker in workers:
            worker.end()


def _ending(code: int) -> str:
    if code < 0:
        with suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit code {code}"


def _feed(worker: subprocess.Popen[str], lines: list[str]) -> None:
    """Write a worker's workloads and close its input."""
    try:
        assert worker.stdin is not None
        with worker.stdin:
            worker.stdin.writelines(lines)
    except (BrokenPipeError, OSError):  # the worker died; the reader turns its workloads into error records
        pass


def _worker_main(argv: list[str]) -> None:
    """A worker (`python -I -c _BOOT PATH [ROOT]`): reads every "index<TAB>workload JSON" line on
    stdin before answering any, then answers them in order, a record per line on stdout.

    Reading them all first, then pointing stdin at /dev/null, keeps a workload that names /dev/stdin
    as its model from reading the others; records go out through a private copy of stdout, and
    stdout itself goes to stderr, so nothing an ask prints can be taken for a record."""
    todo = sys.stdin.readlines()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    try:
        _start_worker(argv[0] if argv else None)
    except Exception as error:  # a knowledge base that does not load: said once, in place of "ready"
        out.write(" ".join(f"{type(error).__name__}: {error}".split()) + "\n")
        return
    out.write(_READY)
    out.flush()
    for line in todo:
        index, _, text = line.partition("\t")
        result = _answer(int(index), json.loads(text))
        try:
            reply = jsontext.dumps(result)
        except (TypeError, ValueError) as error:
            reply = jsontext.dumps(error_record(int(index), result["workload"], error))
        out.write(reply + "\n")
        out.flush()

