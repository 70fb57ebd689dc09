"""Worked scenarios: canonical workloads, kept in one data file (site/scenarios.yaml) for every tool
that wants them, and run through ask() when the site is built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..answer.answer import Answer
from ..core.errors import ASK_ERRORS
from ..knowledge.kb import KnowledgeBase
from ..knowledge.schema import Slug
from ..knowledge.yamlpos import load_located


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Slug
    title: str = Field(min_length=1)
    description: str = ""
    title_zh: str = ""  # the Chinese site's title and description (the English ones where empty)
    description_zh: str = ""
    workload: dict[str, Any] = Field(min_length=1, description="a workload exactly as ask() takes it")


class ScenarioError(ValueError):
    pass


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read and check a scenario file: a YAML list of {id, title, description?, workload}."""
    path = Path(path)
    # the knowledge base's own loader: bounded in size and values, no anchors or aliases (a billion laughs
    # is refused at its first anchor), regular files only; a problem is an error naming file and line
    doc, problems = load_located(path, str(path))
    # control characters in a title (E014) stay: the report and the site show them as U+XXXX, never raw
    problems = [p for p in problems if p.code != "E014"]
    if problems or doc is None:
        raise ScenarioError("\n".join(str(p) for p in problems))
    data = doc.data
    if not isinstance(data, list):
        raise ScenarioError(f"{path}: expected a list of scenarios")
    scenarios, seen = [], set()
    for i, item in enumerate(data):
        line, _ = doc.where((i,))
        try:
            scenario = Scenario.model_validate(item)
        except ValidationError as err:
            raise ScenarioError(f"{path}:{line}: scenario {i + 1}: {err}") from None
        if scenario.id in seen:
            raise ScenarioError(f"{path}:{line}: scenario id '{scenario.id}' is used twice")
        seen.add(scenario.id)
        scenarios.append(scenario)
    return scenarios


@dataclass(frozen=True)
class Run:
    scenario: Scenario
    answer: Answer


def run_scenarios(kb: KnowledgeBase, scenarios: list[Scenario]) -> list[Run]:
    """Answer every scenario; a workload the engine refuses fails the build with the scenario's id."""
    runs = []
    for scenario in scenarios:
        try:
            answer = kb.ask(scenario.workload)
        except ASK_ERRORS as err:  # the message names the field or the rule
            raise ScenarioError(f"scenario '{scenario.id}': {err}") from err
        runs.append(Run(scenario, answer))
    return runs
