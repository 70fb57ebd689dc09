"""Run a hostile case in a child process with a time limit, so a crash, a hang or a planted import
cannot take the test process with it; the child's CPU time is bounded too."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

WALL_SECONDS = 60  # a hang, not a slow machine: the CPU bound judges speed


def run_child(args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None,
              cpu_seconds: float = 2.0) -> subprocess.CompletedProcess[str]:
    """`python ARGS` in `cwd` with `env` (default: this environment less gpukb's variables; a
    PYTHONPATH stays, so the child imports the gpukb under test, as tools/mutations.py needs);
    asserts it ended and took under `cpu_seconds` of CPU time, its children included."""
    if env is None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GPUKB_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=dict(env), capture_output=True, text=True,
                          timeout=WALL_SECONDS, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    assert seconds < cpu_seconds, f"{args} took {seconds:.2f} s of CPU time (bound {cpu_seconds} s)"
    return done
