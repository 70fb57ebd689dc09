"""The engine's guards: the firing bound, failing actions, and sessions left clean after a failure."""

import json
from pathlib import Path

import durable_rules_engine
import pytest
from hypothesis import given
from hypothesis import strategies as st

import gpukb
from gpukb.core.errors import EngineError, KBDefectError
from gpukb.engine import engine
from gpukb.engine.reachable import reachable_rules, text_gates
from gpukb.engine.trace import firing_limit
from gpukb.knowledge.rules import Rule, compile_rule

# remedies fire for the communication wall of PCIe-only cards at short sequences
WALLED = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["l40s-48gb"], "gpu_count": 8, "seq_len": 1024}
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
    limit = firing_limit(len(WALLED["gpus"]))
    with pytest.raises(EngineError, match=rf"more than {limit:,} rule firings in one ask \(1,000 \+ 50 per candidate "
                                          r"GPU type, 1 here\): rules chain without end \(last: remedy.echo@1\)"):
        kb.ask(WALLED)


def test_an_action_that_fails_is_reported_with_its_rule(checkout: Path):
    path = checkout / "rules/recommendations/rank-training.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("      score: \"tokens_per_s if w.tokens > 0 else tokens_per_s / p.count\"",
                                 "      score: tokens_per_s / (w.tokens - w.tokens)"), encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    with pytest.raises(EngineError, match=rf"rec.rank.training@{kb.rules['rec.rank.training'].version}: .*division by zero"):
        kb.ask({"model": "llama-2-7b", "task": "full_finetune"})


def test_one_finished_state_is_kept_until_the_next_ask_ends(kb):
    """A state is deleted when the next ask ends (so its heap pages go to that ask's successor rather
    than back to the system): never more than one is left in durable-rules."""
    workload = {"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]}
    kb.ask(workload)
    first = engine.ENGINE._finished
    kb.ask(workload)
    second = engine.ENGINE._finished
    assert first is not None and second is not None and first != second
    assert json.loads(_state(*second))["sid"] == second[1]
    with pytest.raises(Exception, match="Could not get state"):
        _state(*first)


def _state(name: str, sid: str) -> str:
    return durable_rules_engine.get_state(engine.ENGINE._rulesets[name].handle, sid)


def test_a_failed_ask_leaves_nothing_behind(checkout: Path, kb):
    (checkout / "rules/remedies/echo.yaml").write_text(ECHO_RULE, encoding="utf-8")
    broken = gpukb.load_kb(checkout)
    for _ in range(3):
        with pytest.raises(EngineError):
            broken.ask(WALLED)
    assert engine.ENGINE._collectors == {}
    # the next asks, in the same process and the same engine, are unaffected
    first = kb.ask({"model": "llama-2-7b", "task": "full_finetune"}).model_dump_json()
    assert kb.ask({"model": "llama-2-7b", "task": "full_finetune"}).model_dump_json() == first


# --- reading durable's messages ------------------------------------------------------------------

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=30),
                    st.sampled_from(['":{"fid":"f1"', '{"fid":"f9"}', '\\"', "}{", '"x":{"fid":"f2",']))
fields = st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True).filter(lambda k: k not in ("fid", "sid")),
                         scalars, max_size=6)


@given(st.dictionaries(st.from_regex(r"[a-z][a-z0-9_]{0,5}", fullmatch=True), fields, min_size=1, max_size=5),
       st.from_regex(r"[a-z][a-z0-9.-]{0,30}_v[0-9]{1,3}", fullmatch=True))
def test_matched_fids_are_read_exactly_whatever_the_facts_hold(facts, action):
    ruleset = engine._Ruleset(0, {"k": ()})
    texts, expected = [], {}
    for n, (alias, extra) in enumerate(facts.items(), start=1):
        ruleset.fields["k"] = ("kind", *extra)
        texts.append(f'"{alias}":' + ruleset.slim({"kind": "k", **extra, "fid": f"f{n}"}, "ask1"))
        expected[alias] = f"f{n}"
    message = "{" + f'"{action}":' + "{" + ",".join(texts) + "}}"  # durable's layout, with the texts verbatim
    assert json.loads(message) == {action: {a: json.loads(t.split(":", 1)[1]) for a, t in zip(facts, texts, strict=True)}}
    assert engine.read_message(message) == (action, expected)


def test_the_same_fact_twice_is_an_engine_error_not_a_silent_skip(kb):
    kb.ask({"model": "llama-2-7b", "task": "lora"})  # registers the ruleset
    name = engine.ENGINE._ruleset_for(kb, {"task": "lora", "training": True})
    ruleset = engine.ENGINE._rulesets[name]
    fact = {"kind": "policy", "fid": "f1", "scaling_efficiency_floor": 0.8}
    engine.ENGINE._open(name, "twice")  # as every session is: its state can then be deleted (test_engine_state)
    try:
        assert ruleset.put(fact, "twice") is not None
        with pytest.raises(EngineError, match="durable-rules saw the same policy fact twice"):
            ruleset.put(fact, "twice")
    finally:
        engine.ENGINE.delete_state(name, "twice")


def test_a_message_that_does_not_name_the_rules_aliases_fails_the_ask(kb, monkeypatch):
    read = engine.read_message

    def lose_an_alias(message: str):
        name, fids = read(message)
        return name, dict(list(fids.items())[1:])

    monkeypatch.setattr(engine, "read_message", lose_an_alias)
    with pytest.raises(EngineError, match=r"durable matched \[.*\], the rule has \[.*\]"):
        kb.ask({"model": "llama-2-7b", "task": "lora"})
    monkeypatch.undo()
    assert engine.ENGINE._collectors == {}
    kb.ask({"model": "llama-2-7b", "task": "lora"})  # the engine is still usable


# --- rulesets of the rules a task can fire -------------------------------------------------------

def test_a_rule_the_task_rules_out_is_not_registered_and_one_that_reads_more_stays(kb):
    training = {r.key for r in reachable_rules(kb, {"task": "full_finetune", "training": True})}
    serving = {r.key for r in reachable_rules(kb, {"task": "inference", "training": False})}
    decode, train = kb.rules["rec.throughput.decode"], kb.rules["rec.throughput.training"]
    assert f"rec.throughput.decode@{decode.version}" in serving - training
    assert f"rec.throughput.training@{train.version}" in training - serving
    # bottleneck.capacity.no-fit matches plans whatever the task: both rulesets hold it
    no_fit = kb.rules["bottleneck.capacity.no-fit"]
    assert f"bottleneck.capacity.no-fit@{no_fit.version}" in training & serving


def test_a_rule_that_matches_a_kind_nothing_produces_is_left_out(kb):
    """kv_cache facts come only from inference rules: a rule that needs one cannot fire in a training ask."""
    training = reachable_rules(kb, {"task": "lora", "training": True})
    assert training and all(kind != "kv_cache" for rule in training for _alias, kind in rule.aliases)
    assert any(kind == "kv_cache" for rule in kb.active_rules for _alias, kind in rule.aliases)


@pytest.mark.parametrize("workload", [
    {"model": "llama-2-7b", "task": "full_finetune"},
    {"model": "llama-3-8b", "task": "qlora", "gpus": ["rtx-4090-24gb", "a100-sxm-80gb"]},
    {"model": "llama-3-70b", "task": "inference", "batch_size": 8, "ttft_ms": 400},
    {"model": "mixtral-8x7b", "task": "pretrain", "gpu_count": 64, "expert_parallel": 8},
])
def test_answers_from_the_task_s_rules_equal_answers_from_every_rule(kb, monkeypatch, workload):
    """Leaving out the rules a task cannot fire, and the facts no pattern accepts, changes no answer."""
    pruned = kb.ask(workload).model_dump_json()
    monkeypatch.setattr(engine, "reachable_rules", lambda kb, known: kb.active_rules)
    monkeypatch.setattr(engine, "text_gates", lambda rules: {})
    monkeypatch.setattr(engine.ENGINE, "_names", {})
    assert kb.ask(workload).model_dump_json() == pruned


def test_a_fact_whose_text_no_pattern_accepts_is_not_asserted():
    rule = compile_rule(Rule.model_validate({
        "id": "remedy.x", "version": 1, "stage": "remedies", "title": "x", "claims": [], "sources": [],
        "when": [{"as": "f", "kind": "finding",
                  "if": "finding in ['interconnect', 'memory_bandwidth'] and severity == 'warning'"},
                 {"as": "o", "kind": "finding", "if": "gpu == f.gpu and finding == 'memory_capacity'"}],
        "then": [{"kind": "remedy", "set": {"remedy": "x", "title": "x"}}], "explain": "x"}))[0]
    assert rule is not None
    gates = text_gates((rule,))
    assert gates == {"finding": ("finding", frozenset({"interconnect", "memory_bandwidth", "memory_capacity"}))}
    ruleset = engine._Ruleset(0, {"finding": ("finding", "kind")}, gates)
    assert ruleset.slim({"kind": "finding", "fid": "f1", "finding": "compute"}, "a") is None
    assert ruleset.slim({"kind": "finding", "fid": "f1", "finding": "interconnect"}, "a") is not None
    assert ruleset.slim({"kind": "finding", "fid": "f1"}, "a") is not None  # no text: durable decides


def test_a_kind_with_a_pattern_that_requires_no_text_has_no_gate(kb):
    gates = text_gates(reachable_rules(kb, {"task": "full_finetune", "training": True}))
    assert "plan" not in gates and "workload" not in gates


def test_a_task_that_no_rule_can_serve_is_a_kb_defect_naming_the_task(kb, monkeypatch):
    monkeypatch.setattr(engine, "reachable_rules", lambda kb, known: ())
    monkeypatch.setattr(engine.ENGINE, "_names", {})
    with pytest.raises(KBDefectError, match="no active rule that an ask with task 'lora', training True can fire"):
        kb.ask({"model": "llama-2-7b", "task": "lora"})
