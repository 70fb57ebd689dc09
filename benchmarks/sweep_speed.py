"""Throughput of gpukb.sweep with 1 and 2 (or more) worker processes, in asks per second.

Run: python benchmarks/sweep_speed.py [PROCESSES ...]   (default 1 2; figures, not a test)

The grid is every catalog model x every task x five sequence lengths, each asked of the whole catalog.
The time includes starting the workers and loading the knowledge base in each, as a user waits for it.
"""

from __future__ import annotations

import os
import sys
import time

import gpukb
from gpukb.estimate.sweeps import grid

TASKS = ["pretrain", "full_finetune", "lora", "qlora", "inference"]


def main() -> None:
    counts = [int(n) for n in sys.argv[1:]] or [1, 2]
    workloads = grid(sorted(gpukb.load_kb().models), TASKS, [1024, 2048, 4096, 8192, 16384])
    print(f"{len(workloads)} workloads, each over the whole catalog")
    for processes in counts:
        before, start = os.times(), time.perf_counter()
        errors = sum("error" in record for record in gpukb.sweep(workloads, processes=processes))
        seconds, after = time.perf_counter() - start, os.times()
        cpu = sum(getattr(after, f) - getattr(before, f) for f in ("user", "system", "children_user", "children_system"))
        print(f"processes {processes}: {seconds:6.2f} s, {len(workloads) / seconds:6.1f} asks/s ({errors} errors); "
              f"CPU time {cpu:.2f} s (other load on the machine shows as wall time well above CPU time / processes)")


if __name__ == "__main__":
    main()
