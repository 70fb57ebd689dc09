"""gpukb: which GPUs an LLM workload needs, what will hold it back, and what to do — with a trace.

    import gpukb
    answer = gpukb.ask({"model": "llama-2-7b", "task": "full_finetune"})
    print(answer.explain())
"""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .answer import Answer, Finding, Memory, Option, Remedy, Strategy
from .errors import EngineError, GpukbError, KBDefectError, KBError, Problem, WorkloadError
from .kb import KnowledgeBase
from .trace import TraceStep
from .workload import ResolvedWorkload, Workload

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from .validation import Validation

__all__ = [
    "Answer", "EngineError", "Finding", "GpukbError", "KBDefectError", "KBError", "KnowledgeBase", "Memory", "Option",
    "Problem", "Remedy", "ResolvedWorkload", "Strategy", "TraceStep", "Workload", "WorkloadError", "ask", "load_kb",
    "packaged_root", "sweep", "validate",
]
__version__ = "0.1.0"

# The packaged knowledge base once loaded (one per process: its root never changes). Returned as is
# afterwards: finding its files again (resolving this module's path, two stats) took ~50 µs, a
# twentieth of a single-GPU `gpukb.ask()`.
_packaged: KnowledgeBase | None = None
_packaged_lock = threading.Lock()


def packaged_root() -> Path:
    """Where the bundled kb/ and rules/ live: inside the wheel, or the source checkout."""
    here = Path(__file__).resolve().parent
    bundled = here / "_data"
    if (bundled / "kb" / "manifest.yaml").is_file():
        return bundled
    checkout = here.parent.parent
    if (checkout / "kb" / "manifest.yaml").is_file():
        return checkout
    raise KBError([Problem(str(bundled), 1, 1, "E004", "the packaged knowledge base is missing (kb/manifest.yaml)")])


def load_kb(path: str | Path | None = None) -> KnowledgeBase:
    """Load and validate a knowledge base: the packaged one, or kb/ and rules/ under `path`.

    Raises KBError listing every problem as file:line:column.
    """
    if path is not None:
        from .loader import read_checkout

        return read_checkout(Path(path).resolve())
    global _packaged
    if _packaged is None:
        with _packaged_lock:
            if _packaged is None:
                kb = _load_packaged(packaged_root())
                # Kept for the life of the process, so Python's full collections need never walk it again:
                # they took ~30 ms each, one in ~150 asks. (gc.freeze() moves every object tracked now to
                # the permanent generation, the application's too; gc.unfreeze() undoes it.)
                gc.freeze()
                _packaged = kb
    return _packaged


def _load_packaged(root: Path) -> KnowledgeBase:
    """The packaged knowledge base, from this user's private on-disk copy when it is current (kbcache)."""
    from . import kbcache

    kb, fresh = kbcache.read(root)
    if kb is None:
        from .loader import read_checkout  # with the YAML parser: only when there is no current copy

        kb = read_checkout(root)
        if fresh is not None:
            kbcache.write(fresh, kb)
    return kb


def ask(workload: Workload | dict[str, Any]) -> Answer:
    """Answer a workload with the packaged knowledge base."""
    return load_kb().ask(workload)


def sweep(workloads: Iterable[dict[str, Any]], processes: int = 1,
          root: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Answer many workloads across `processes` worker processes (each loads the knowledge base once):
    yields one compact JSON-ready record per workload, in input order (workload, best option, fits
    per GPU type, key figures; or the error of an ask that failed). `gpukb.sweeps.grid` builds a grid."""
    from .sweeps import sweep as run

    return run(workloads, processes, root)


def validate(kb: KnowledgeBase | None = None) -> Validation:
    """Predict every published measurement in kb/measurements/ (the packaged KB's by default) and
    compare: `.points` (measured, predicted, ratio, rules), `.overall.median_error`, `.passed`;
    `.to_json()` is what `gpukb validate --format json` prints."""
    from .validation import validate as run

    return run(kb or load_kb())
