"""Speed of gpukb.ask(): warm median over the full candidate set, and a cold process start.

Run: python benchmarks/ask_speed.py   (figures vary by machine; this is not a test)
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

import gpukb

WORKLOADS = [
    {"model": "llama-2-7b", "task": "full_finetune"},
    {"model": "llama-3-70b", "task": "inference", "batch_size": 8},
    {"model": "mixtral-8x7b", "task": "qlora"},
]
COLD = "import gpukb; gpukb.ask({'model': 'llama-2-7b', 'task': 'full_finetune'})"


def spread(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=10)
    return (f"median {statistics.median(samples):.2f}  p10 {q[0]:.2f}  p90 {q[-1]:.2f}  "
            f"min {min(samples):.2f}  max {max(samples):.2f}")


def main() -> None:
    kb = gpukb.load_kb()
    print(f"candidates: {len(kb.gpus)} GPU types, {len(kb.active_rules)} rules")
    for workload in WORKLOADS:
        for _ in range(20):
            kb.ask(workload)
        samples = []
        for _ in range(300):
            start = time.perf_counter()
            kb.ask(workload)
            samples.append((time.perf_counter() - start) * 1e3)
        print(f"warm ask {workload}: {spread(samples)} ms")
    cold = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", COLD], check=True)
        cold.append((time.perf_counter() - start) * 1e3)
    print(f"cold `python -c \"{COLD}\"`: {spread(cold)} ms")


if __name__ == "__main__":
    main()
