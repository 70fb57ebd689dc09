"""gpukb: which GPUs an LLM workload needs, what will hold it back, and what to do — with a trace.

    import gpukb
    answer = gpukb.ask({"model": "llama-2-7b", "task": "full_finetune"})
    print(answer.explain())
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .answer.answer import Answer, Finding, Memory, Option, Remedy, Strategy
from .answer.workload import ResolvedWorkload, Workload
from .core.errors import EngineError, GpukbError, KBDefectError, KBError, Problem, WorkloadError
from .core.fmt import Lang
from .engine.trace import TraceStep
from .estimate.packaged import load_kb, packaged_root
from .knowledge.kb import KnowledgeBase

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from .estimate.validation import Validation

__all__ = [
    "Answer", "EngineError", "Finding", "GpukbError", "KBDefectError", "KBError", "KnowledgeBase", "Memory", "Option",
    "Problem", "Remedy", "ResolvedWorkload", "Strategy", "TraceStep", "Workload", "WorkloadError", "ask", "load_kb",
    "packaged_root", "sweep", "validate",
]
__version__ = "0.1.0"


def _ask(kb: KnowledgeBase, workload: Workload | dict[str, Any], bands: bool = True) -> Answer:
    from .estimate.pipeline import ask as run  # the engine and durable-rules load with the first ask, not with gpukb

    return run(kb, workload, bands)


def _render(answer: Answer, lang: Lang) -> str:
    from .answer.answer_text import render_answer

    return render_answer(answer, lang)


# The data types never import what reads them: the pipeline reads a KnowledgeBase and the text
# renderer an Answer, so both sit above those modules. The package, above everything, plugs them in
# here, once: Python imports gpukb before any of its modules, so kb.ask() and answer.explain() work
# however the types were reached.
KnowledgeBase.asker = _ask
Answer.renderer = _render


def ask(workload: Workload | dict[str, Any]) -> Answer:
    """Answer a workload with the packaged knowledge base."""
    return _ask(load_kb(), workload)


def sweep(workloads: Iterable[dict[str, Any]], processes: int = 1,
          root: str | Path | None = None) -> Iterator[dict[str, Any]]:
    """Answer many workloads across `processes` worker processes (each loads the knowledge base once):
    yields one compact JSON-ready record per workload, in input order (workload, best option, fits
    per GPU type, key figures; or the error of an ask that failed). `gpukb.estimate.sweeps.grid` builds a grid."""
    from .estimate.sweeps import sweep as run

    return run(workloads, processes, root)


def validate(kb: KnowledgeBase | None = None) -> Validation:
    """Predict every published measurement in kb/measurements/ (the packaged KB's by default) and
    compare: `.points` (measured, predicted, ratio, rules), `.overall.median_error` (the performance
    points), `.footprints` (a run's energy and CO₂, gated on their own), `.bands`, `.passed`;
    `.to_json()` is what `gpukb validate --format json` prints."""
    from .estimate.validation import validate as run

    return run(kb or load_kb())
