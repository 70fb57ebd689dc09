"""Worked scenarios: canonical workloads, kept in one data file (site/scenarios.yaml) for every tool
that wants them, and run through ask() when the site is built."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..answer.answer import Answer
from ..core import safepath
from ..core.errors import ASK_ERRORS
from ..knowledge.kb import KnowledgeBase
from ..knowledge.schema import Slug


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: Slug
    title: str = Field(min_length=1)
    description: str = ""
    title_zh: str = ""  # the Chinese site's title and description (the English ones where empty)
    description_zh: str = ""
    workload: dict[str, Any] = Field(min_length=1, description="a workload exactly as ask() takes it")


MAX_BYTES = 1 << 20  # the site's scenarios file is ~10 kB


class ScenarioError(ValueError):
    pass


def load_scenarios(path: str | Path) -> list[Scenario]:
    """Read and check a scenario file: a YAML list of {id, title, description?, workload}."""
    path = Path(path)
    try:
        text = safepath.read_text(path, MAX_BYTES)
    except safepath.RefusedPath as refused:
        raise ScenarioError(f"{path}: {refused}") from None
    data = yaml.safe_load(text)
    if not isinstance(data, list):
        raise ScenarioError(f"{path}: expected a list of scenarios")
    scenarios, seen = [], set()
    for i, item in enumerate(data):
        try:
            scenario = Scenario.model_validate(item)
        except ValidationError as err:
            raise ScenarioError(f"{path}: scenario {i + 1}: {err}") from None
        if scenario.id in seen:
            raise ScenarioError(f"{path}: scenario id '{scenario.id}' is used twice")
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
