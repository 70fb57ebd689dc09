"""Refit the serving engines' decode terms in kb/frameworks from their published measurements.

For each engine with published decode cells in kb/measurements (quantities decode_tokens_per_s and
decode_tokens_per_s_total; batch 1, or every batch with --all), the share of the datasheet bandwidth a decode step
achieves (`decode_bandwidth_utilisation`) is the one that minimises the squared log error of gpukb's own prediction
over the cells, read through rec.throughput.decode as `gpukb validate` reads it; with --launch, jointly with the
per-layer fixed time (`layer_launch_s`). Each cell's implied share (the fit over its ratio) gives the spread the
entry's reason reports. No network; a few hundred asks.

    python tools/fit_decode_terms.py lmdeploy mlc-llm exllamav2
    python tools/fit_decode_terms.py tensorrt-llm --all
    python tools/fit_decode_terms.py llama.cpp --launch
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Iterable

import gpukb
from gpukb.estimate.validation import check_point
from gpukb.knowledge.schema import FrameworkTerm, Measurement

QUANTITIES = ("decode_tokens_per_s", "decode_tokens_per_s_total")
SHARES = [i / 100 for i in range(40, 96)]
LAUNCHES = [i * 1e-5 for i in range(0, 41)]


def cells(kb: gpukb.KnowledgeBase, framework: str, every_batch: bool = False) -> list[Measurement]:
    """The engine's validated decode cells (batch 1 unless every_batch); the 2-GPU row splits are deprecated."""
    return [m for _, m in sorted(kb.measurements.items())
            if m.status != "deprecated" and m.workload.get("framework") == framework and m.quantity in QUANTITIES
            and (every_batch or m.workload.get("batch_size", 1) == 1)]


def _term(value: float) -> FrameworkTerm:
    return FrameworkTerm(value=value, reason="a candidate value of the fit", sources=["gpt-fast-readme"])


def log_errors(kb: gpukb.KnowledgeBase, framework: str, points: Iterable[Measurement], share: float,
               launch: float | None = None) -> list[float]:
    """ln(predicted / measured) of each cell gpukb answers, with the engine's terms set to the candidates."""
    original = kb.frameworks[framework]
    update: dict[str, FrameworkTerm | None] = {"decode_bandwidth_utilisation": _term(share)}
    if launch is not None:
        update["layer_launch_s"] = _term(launch) if launch > 0 else None
    kb.frameworks[framework] = original.model_copy(update=update)
    try:
        ratios = [check_point(kb, m).ratio for m in points]
    finally:
        kb.frameworks[framework] = original
    return [math.log(r) for r in ratios if r]


def squared(errors: list[float]) -> float:
    return sum(e * e for e in errors)


def fit(kb: gpukb.KnowledgeBase, framework: str, every_batch: bool = False,
        with_launch: bool = False) -> tuple[float, float | None, list[float]]:
    """The least-squares share (and per-layer launch time), and each cell's implied share at that fit."""
    points = cells(kb, framework, every_batch)
    launches: list[float | None] = list(LAUNCHES) if with_launch else [None]
    best = min(((squared(log_errors(kb, framework, points, f, c)), f, c) for f in SHARES for c in launches),
               key=lambda t: t[0])
    _, share, launch = best
    implied = [share / math.exp(e) for e in log_errors(kb, framework, points, share, launch)]
    return share, launch, implied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("frameworks", nargs="+")
    parser.add_argument("--all", action="store_true", help="every batch size, not batch 1 alone")
    parser.add_argument("--launch", action="store_true", help="fit layer_launch_s jointly")
    args = parser.parse_args()
    kb = gpukb.load_kb()
    for framework in args.frameworks:
        share, launch, implied = fit(kb, framework, args.all, args.launch)
        stated = kb.frameworks[framework].decode_bandwidth_utilisation
        print(f"{framework}: share {share:.2f} (kb/frameworks: {stated.value if stated else 'unset'})"
              + (f", launch {launch * 1e3:.2f} ms a layer" if launch is not None else "")
              + f"; {len(implied)} cells, implied {min(implied):.2f} to {max(implied):.2f}")


if __name__ == "__main__":
    main()
