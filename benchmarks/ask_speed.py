"""Speed of gpukb.ask(): warm median over the full candidate set, where the time goes, and a cold start.

Run: python benchmarks/ask_speed.py   (figures vary by machine; this is not a test)

Three parts:
- warm asks of three workloads, each timed alone, with a fixed pure-Python reference loop timed
  between them: on a shared VM the CPU's speed drifts (the reference loop shows by how much), so
  compare asks with the reference of the same run, not with figures from another day;
- a breakdown of one workload's ask: time inside durable-rules' C calls, the planner, building the
  Answer, and the rest (gpukb's rule actions: expressions, trace steps, sentences). The timers add
  a little overhead of their own, so read the shares, not the sum;
- a cold `python -c "import gpukb; gpukb.ask(...)"`.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import gpukb
from gpukb.engine import engine
from gpukb.estimate import pipeline

WORKLOADS = [
    {"model": "llama-2-7b", "task": "full_finetune"},
    {"model": "llama-3-70b", "task": "inference", "batch_size": 8},
    {"model": "mixtral-8x7b", "task": "qlora"},
]
COLD = "import gpukb; gpukb.ask({'model': 'llama-2-7b', 'task': 'full_finetune'})"
WARM_ASKS = 300


def spread(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=10)
    return (f"median {statistics.median(samples):6.2f}  p10 {q[0]:6.2f}  p90 {q[-1]:6.2f}  "
            f"min {min(samples):6.2f}  max {max(samples):6.2f}")


def reference_loop() -> float:
    """Milliseconds for a fixed amount of pure-Python work: the machine's speed at this moment."""
    start = time.perf_counter()
    total = 0
    for i in range(50_000):
        total += i * i % 7
    return (time.perf_counter() - start) * 1e3


def warm(kb: gpukb.KnowledgeBase) -> None:
    for workload in WORKLOADS:
        for _ in range(20):
            kb.ask(workload)
        asks, reference = [], []
        for _ in range(WARM_ASKS):
            start = time.perf_counter()
            answer = kb.ask(workload)
            asks.append((time.perf_counter() - start) * 1e3)
            reference.append(reference_loop())
        print(f"warm ask {workload} ({len(answer.trace)} trace steps)")
        print(f"    ask ms        {spread(asks)}")
        print(f"    reference ms  {spread(reference)}")


class Timers:
    """Wraps module-level functions to add up the time spent in each group of them."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = {}
        self.undo: list[Callable[[], None]] = []

    def wrap(self, owner: Any, name: str, group: str) -> None:
        original = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.totals[group] = self.totals.get(group, 0.0) + time.perf_counter() - start

        setattr(owner, name, timed)
        self.undo.append(lambda: setattr(owner, name, original))

    def restore(self) -> None:
        for undo in reversed(self.undo):
            undo()


def breakdown(kb: gpukb.KnowledgeBase, workload: dict[str, Any], asks: int = 200) -> None:
    timers = Timers()
    for name in ("_c_assert_fact", "_c_start_action_for_state", "_c_complete_and_start_action", "_c_delete_state"):
        timers.wrap(engine, name, "durable-rules C calls (matching, agenda)")
    timers.wrap(engine, "_encode_fact", "facts encoded for durable, messages read")
    timers.wrap(engine, "read_message", "facts encoded for durable, messages read")
    timers.wrap(pipeline, "plan_gpu", "planner (fewest GPUs per type)")
    timers.wrap(pipeline, "build_answer", "building the Answer")
    try:
        for _ in range(20):
            kb.ask(workload)
        timers.totals.clear()
        start = time.perf_counter()
        for _ in range(asks):
            kb.ask(workload)
        total = (time.perf_counter() - start) / asks * 1e3
    finally:
        timers.restore()
    print(f"breakdown of {workload} (timed, {total:.2f} ms per ask):")
    rest = total
    for group, seconds in timers.totals.items():
        ms = seconds / asks * 1e3
        rest -= ms
        print(f"    {group:45s} {ms:6.2f} ms  {ms / total:4.0%}")
    print(f"    {'rule actions and the rest of ask()':45s} {rest:6.2f} ms  {rest / total:4.0%}")


def cold() -> None:
    samples = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", COLD], check=True)
        samples.append((time.perf_counter() - start) * 1e3)
    print(f"cold `python -c \"{COLD}\"` ms: {spread(samples)}")


def main() -> None:
    kb = gpukb.load_kb()
    print(f"candidates: {len(kb.gpus)} GPU types, {len(kb.active_rules)} rules")
    warm(kb)
    breakdown(kb, WORKLOADS[0])
    cold()


if __name__ == "__main__":
    main()
