"""Run the examples in each rule's `tests` block: does the rule fire, with the expected values?"""

from __future__ import annotations

from .errors import EngineError, Problem, WorkloadError
from .ids import versioned
from .kb import KnowledgeBase

TOLERANCE = 0.005  # expected values match within 0.5%


def run_rule_tests(kb: KnowledgeBase) -> list[Problem]:
    problems: list[Problem] = []
    for rule_id, rule in sorted(kb.rules.items()):
        if rule.status == "deprecated":
            continue
        key = versioned(rule.id, rule.version)
        for i, test in enumerate(rule.tests):
            file, line, col = kb.locate("rules", rule_id, ("tests", i))

            def fail(message: str, file: str = file, line: int = line, col: int = col, name: str = test.name,
                     index: int = i) -> None:
                problems.append(Problem(file, line, col, "T001", f"rule test '{name}': {message}", f"tests.{index}"))

            try:
                answer = kb.ask(test.workload)
            except (WorkloadError, EngineError) as err:
                fail(f"the workload fails: {err}")
                continue
            steps = [s for s in answer.trace if s.rule == key]
            if bool(steps) != test.expect.fires:
                fail(f"expected the rule {'to fire' if test.expect.fires else 'not to fire'}, "
                     f"but it fired {len(steps)} time(s)")
                continue
            if not steps:
                continue
            got = {v["name"]: v["value"] for v in steps[0].values}
            for name, expected in test.expect.values.items():
                value = got.get(name)
                if not isinstance(value, int | float):
                    fail(f"computed no number '{name}'")
                elif abs(value - expected) > TOLERANCE * max(abs(expected), 1e-12):
                    fail(f"{name} = {value:,.6g}, expected {expected:,.6g} (±{TOLERANCE:.1%})")
    return problems
