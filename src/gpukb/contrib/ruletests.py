"""Run the examples in each rule's `tests` block: does the rule fire, with the expected values?"""

from __future__ import annotations

from ..core.errors import ASK_ERRORS, Problem
from ..knowledge.kb import KnowledgeBase

TOLERANCE = 0.005  # expected numbers match within 0.5%; expected strings exactly


def rule_test_cases(kb: KnowledgeBase) -> list[tuple[str, int]]:
    """(rule id, index of the test) for every test of every rule that can fire."""
    return [(rule_id, i) for rule_id, rule in sorted(kb.rules.items()) if rule.status != "deprecated"
            for i in range(len(rule.tests))]


def run_rule_test(kb: KnowledgeBase, rule_id: str, index: int) -> list[Problem]:
    """The problems of one test of one rule: none when it passes."""
    rule = kb.rules[rule_id]
    test = rule.tests[index]
    key = f"{rule.id}@{rule.version}"
    problems: list[Problem] = []

    def fail(message: str) -> None:
        problems.append(kb.problem("rules", rule_id, ("tests", index), "T001", f"rule test '{test.name}': {message}"))

    try:
        answer = kb.ask(test.workload)
    except ASK_ERRORS as err:
        fail(f"the workload fails: {err}")
        return problems
    steps = [s for s in answer.trace if s.rule == key]
    if bool(steps) != test.expect.fires:
        fail(f"expected the rule {'to fire' if test.expect.fires else 'not to fire'}, "
             f"but it fired {len(steps)} time(s)")
        return problems
    if not steps:
        return problems
    got = {v["name"]: v["value"] for v in steps[0].values}
    for name, expected in test.expect.values.items():
        value = got.get(name)
        if isinstance(expected, str):
            if value != expected:
                # YAML 1.1 reads 2e9 as a string: say so rather than leave a puzzling mismatch
                hint = " (a string: write numbers as 2000000000 or 2.0e+9)" if isinstance(value, int | float) else ""
                fail(f"{name} = {value!r}, expected {expected!r}{hint}")
        elif not isinstance(value, int | float) or isinstance(value, bool):
            fail(f"computed no number '{name}'")
        elif abs(value - expected) > TOLERANCE * max(abs(expected), 1e-12):
            fail(f"{name} = {value:,.6g}, expected {expected:,.6g} (±{TOLERANCE:.1%})")
    return problems


def run_rule_tests(kb: KnowledgeBase) -> list[Problem]:
    return [p for rule_id, index in rule_test_cases(kb) for p in run_rule_test(kb, rule_id, index)]
