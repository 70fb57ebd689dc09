"""Each rule's YAML `tests:` example is its own test case, named by the rule and the example."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.ruletests import rule_test_cases, run_rule_test
from kbfiles import edit_entry

KB = gpukb.load_kb()
CASES = rule_test_cases(KB)
# Rules whose examples only say that they fire: their throughput and communication figures are
# pinned together with the performance model that computes them.
VALUES_PENDING: set[str] = set()  # every rule's examples state the values it computes


@pytest.mark.parametrize(("rule_id", "index"), CASES,
                         ids=[f"{rule_id}: {KB.rules[rule_id].tests[i].name}" for rule_id, i in CASES])
def test_rule_example(rule_id: str, index: int):
    problems = run_rule_test(KB, rule_id, index)
    assert not problems, "\n".join(f"{p.file}:{p.line}: {p.message}" for p in problems)


def test_every_rule_has_examples_and_one_that_states_its_values():
    active = {rule_id for rule_id, rule in KB.rules.items() if rule.status != "deprecated"}
    assert {rule_id for rule_id, _ in CASES} == active
    without_values = {rule_id for rule_id in active
                      if not any(t.expect.fires and t.expect.values for t in KB.rules[rule_id].tests)}
    assert without_values == VALUES_PENDING


def test_a_wrong_expected_string_or_number_names_the_rule_and_the_value(checkout):
    def expect(values: dict[str, object]):
        return lambda rule: rule["tests"][0]["expect"].update(values=values)

    edit_entry(checkout, "rec.tree.mid-size-80gb", expect({"gpu": "l40s-48gb"}))
    edit_entry(checkout, "req.memory.full-training", expect({"overhead": "2e9", "total": 120e9}))
    kb = gpukb.load_kb(checkout)
    (wrong_gpu,) = run_rule_test(kb, "rec.tree.mid-size-80gb", 0)
    assert wrong_gpu.code == "T001" and wrong_gpu.file == "rules/recommendations/tree-mid-size.yaml"
    assert "gpu = 'a100-sxm-80gb', expected 'l40s-48gb'" in wrong_gpu.message
    string, number = run_rule_test(kb, "req.memory.full-training", 0)
    assert "expected '2e9' (a string: write numbers as 2000000000 or 2.0e+9)" in string.message
    assert "total = 1.41345e+11, expected 1.2e+11 (±0.5%)" in number.message
    lint = CliRunner().invoke(app, ["lint", str(checkout)])
    assert lint.exit_code == 1 and lint.output.count(" T001 ") == 3
