"""The engine's guards: the firing bound, failing actions, and sessions left clean after a failure."""

from pathlib import Path

import pytest

import gpukb
from gpukb import engine
from gpukb.errors import EngineError
from gpukb.trace import MAX_FIRINGS

ECHO_RULE = """\
id: remedy.echo
version: 1
stage: remedies
title: Answers every remedy with another one
when:
  - as: r
    kind: remedy
then:
  - kind: remedy
    set: {remedy: echo, title: Echo}
explain: Another remedy.
"""


def test_rules_that_chain_without_end_stop_at_the_firing_bound(checkout: Path):
    (checkout / "rules/remedies/echo.yaml").write_text(ECHO_RULE, encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    with pytest.raises(EngineError, match=f"more than {MAX_FIRINGS} rule firings in one ask: rules chain "
                                          r"without end \(last: remedy.echo@1\)"):
        kb.ask({"model": "llama-2-7b", "task": "full_finetune"})


def test_an_action_that_fails_is_reported_with_its_rule(checkout: Path):
    path = checkout / "rules/recommendations/rank-training.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("score: tokens_per_s", "score: tokens_per_s / (w.tokens - w.tokens)"),
                    encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    with pytest.raises(EngineError, match=r"rec.rank.training@1: .*division by zero"):
        kb.ask({"model": "llama-2-7b", "task": "full_finetune"})


def test_a_failed_ask_leaves_nothing_behind(checkout: Path, kb):
    (checkout / "rules/remedies/echo.yaml").write_text(ECHO_RULE, encoding="utf-8")
    broken = gpukb.load_kb(checkout)
    for _ in range(3):
        with pytest.raises(EngineError):
            broken.ask({"model": "llama-2-7b", "task": "full_finetune"})
    assert engine.ENGINE._collectors == {}
    # the next asks, in the same process and the same engine, are unaffected
    first = kb.ask({"model": "llama-2-7b", "task": "full_finetune"}).model_dump_json()
    assert kb.ask({"model": "llama-2-7b", "task": "full_finetune"}).model_dump_json() == first
