"""Rule joins are bounded when the knowledge base loads, and the firing bound grows with the catalog."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from cpu_budget import within_cpu_seconds

import gpukb
from gpukb import KBError
from gpukb.contrib.lint import lint
from gpukb.core.errors import EngineError
from gpukb.knowledge import joins

WORKLOAD = {"model": "llama-2-7b", "task": "full_finetune"}


def _join_rule(patterns: int, condition: str = "") -> str:
    when = "".join(f"  - as: g{i}\n    kind: gpu\n" + (f"    if: {condition.format(i=i - 1)}\n" if condition and i else "")
                   for i in range(patterns))
    return (f"id: bottleneck.join\nversion: 1\nstage: bottlenecks\ntitle: Joins GPUs\ntitle_zh: 连接 GPU\nwhen:\n{when}"
            "then:\n  - kind: finding\n    set: {finding: compute, severity: info, gpu: ''}\nexplain: x\nexplain_zh: x\n")


def _with_rule(checkout: Path, text: str) -> Path:
    path = checkout / "rules/bottlenecks/join.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _types(checkout) -> int:
    """The GPU types of the checkout's catalog (one file each)."""
    return len(list((checkout / "kb/gpus").glob("*.yaml")))


def test_five_unconstrained_gpu_patterns_are_a_located_lint_error_within_two_seconds(checkout):
    _with_rule(checkout, _join_rule(5))
    started = time.perf_counter()
    with within_cpu_seconds(2.0, "lint"):
        result = lint(checkout)
    assert time.perf_counter() - started < 10  # wall clock on a shared machine; the CPU bound is the test
    (problem,) = [p for p in result.problems if p.code == "R009"]
    # the 4th pattern (line 13) is where n^4 combinations (n GPU types; 34^4 = 1,336,336) pass the policy's 200,000
    assert (problem.file, problem.line) == ("rules/bottlenecks/join.yaml", 13)
    assert f"{_types(checkout) ** 4:,} combinations" in problem.message
    assert "rule-join-combinations allows 200,000" in problem.message


def test_a_rule_joining_more_patterns_than_the_policy_is_refused_at_the_first_one_beyond(checkout):
    _with_rule(checkout, _join_rule(9, "gpu == g{i}.gpu"))
    with pytest.raises(KBError) as caught:
        gpukb.load_kb(checkout)
    (problem,) = [p for p in caught.value.problems if p.code == "R009"]
    assert problem.line == 4 + 2 + 3 * 8  # the 9th pattern: `when` at line 6, three lines a joined pattern
    assert "joins 9 patterns; the policy rule-join-patterns allows 8" in problem.message


def test_patterns_joined_on_their_gpu_pass(checkout):
    _with_rule(checkout, _join_rule(6, "gpu == g{i}.gpu"))
    kb = gpukb.load_kb(checkout)
    rule = next(c for c in kb.compiled if c.rule.id == "bottleneck.join")
    assert joins.candidates(rule, joins.fact_counts(kb.compiled, len(kb.gpus)), len(kb.gpus)) == [len(kb.gpus), 1, 1, 1, 1, 1]


def test_the_join_policies_cannot_be_dropped_to_lift_the_bound(checkout, kb):
    assert {pid: kb.policies[pid].value for pid in joins.WITHOUT_POLICIES} == joins.WITHOUT_POLICIES
    path = checkout / "kb/policies/policies.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"- id: rule-join-(patterns|combinations)\n(?:  .*\n)+", "", text), encoding="utf-8")
    _with_rule(checkout, _join_rule(5))
    with pytest.raises(KBError, match=rf"R009 when\.3: patterns 1-4 can hold {_types(checkout) ** 4:,} combinations"):
        gpukb.load_kb(checkout)


def test_with_the_bound_lifted_the_firing_bound_still_stops_a_large_join_quickly(checkout):
    """Four gpu patterns over n types are n^4 firings (34: 1,336,336): the ask stops at the firing bound, and
    stops working there (the rest of the agenda is left undone), in a fraction of a second."""
    path = checkout / "kb/policies/policies.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("value: 200000", "value: 1000000000"), encoding="utf-8")
    _with_rule(checkout, _join_rule(4))
    kb = gpukb.load_kb(checkout)
    n = len(kb.gpus)
    with within_cpu_seconds(2.0, "the ask"), pytest.raises(EngineError, match=rf"more than {1000 + 50 * n:,} rule firings "
                                                                              r"in one ask \(1,000 \+ 50 per candidate "
                                                                              rf"GPU type, {n} here\)"):
        kb.ask(WORKLOAD)
    assert kb.ask({**WORKLOAD, "gpus": ["h100-sxm-80gb"]}).options  # the engine is sound after it


def test_a_catalog_of_1028_gpu_types_answers(checkout):
    """The firing bound grows with the candidate GPU types (a fixed 5,000 failed every ask of this catalog),
    and the packaged rules stay within the join bound over it."""
    folder = checkout / "kb/gpus"
    originals = sorted(folder.glob("*.yaml"))
    for n in range(1028 - len(originals)):
        source = originals[n % len(originals)]
        text = source.read_text(encoding="utf-8")
        gpu_id = re.search(r"^id: (\S+)$", text, re.MULTILINE)[1]  # type: ignore[index]
        (folder / f"{gpu_id}-copy{n}.yaml").write_text(text.replace(f"id: {gpu_id}\n", f"id: {gpu_id}-copy{n}\n", 1),
                                                       encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    assert len(kb.gpus) == 1028
    answer = kb.ask(WORKLOAD)
    assert len(answer.options) + len(answer.rejected) == 1028
    best = gpukb.load_kb().ask(WORKLOAD).options[0].gpu
    assert answer.options[0].gpu.split("-copy")[0] == best  # the packaged catalog's best, or a copy of it
