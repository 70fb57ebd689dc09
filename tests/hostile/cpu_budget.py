"""A bound on the CPU time a block may take, for tests that a hostile input cannot hang.

The bound catches work that never ends (a tower of powers, a billion laughs), so it sits orders of
magnitude above what the block needs. Two things that are not the block's work are kept out of the
count: the garbage collector (a full collection sweeps every object the worker's earlier tests left
behind) is paused, and only this thread's time counts, not pytest-xdist's I/O thread."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def within_cpu_seconds(limit: float, what: str = "the block") -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    started = time.thread_time()
    try:
        yield
    finally:
        seconds = time.thread_time() - started
        if collecting:
            gc.enable()
    assert seconds < limit, f"{what} took {seconds:.2f} s of CPU time (bound {limit} s)"
