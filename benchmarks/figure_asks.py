"""What one claim figure costs: each figure of kb/claims is an ask that lint, `gpukb explain` and every site
build run again, so the policies claim-figures-per-file and claim-figures-total cap how many there may be.
Times the packaged figures, and the costliest kind of ask a figure can make (an RL step over the whole
catalog), in one process with the knowledge base loaded.

    python benchmarks/figure_asks.py
"""

from __future__ import annotations

import platform
import statistics
import time

import gpukb
from gpukb.contrib import figures
from gpukb.knowledge.schema import Figure

RL = {"model": "qwen3-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8, "response_len": 2048}


def main() -> None:
    kb = gpukb.load_kb()
    packaged = [f for claim in kb.claims.values() for f in claim.figures.values()]
    started = time.perf_counter()
    for figure in packaged:
        figures.values(kb, figure)
    spent = time.perf_counter() - started
    print(f"{len(packaged)} packaged figures: {spent:.2f} s ({spent / len(packaged) * 1e3:.0f} ms each)")
    times = []
    for i in range(20):  # a new prompt length each time: no answer is reused
        started = time.perf_counter()
        figures.values(kb, Figure(ask={**RL, "prompt_len": 512 + i}))
        times.append(time.perf_counter() - started)
    print(f"GRPO figures over the whole catalog: median {statistics.median(times) * 1e3:.0f} ms, "
          f"max {max(times) * 1e3:.0f} ms")
    print(f"{platform.machine()}, Python {platform.python_version()}, gpukb {gpukb.load_kb().version}")


if __name__ == "__main__":
    main()
