"""Trace steps: why each derived fact exists, recorded as rules fire.

The rules engine keeps no record of why it fired, so the generic action (and the planner)
record each step here: the rule, the facts it matched, the values it computed with the
expressions that computed them, the claims it rests on, and a rendered sentence.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict  # pydantic needs this TypedDict before Python 3.12

from .errors import EngineError
from .kb import KnowledgeBase
from .rules import CompiledRule
from .template import TemplateError, render

MAX_FIRINGS = 5000  # a healthy ask fires a few hundred times; more means rules chain without end


# Plain typed dicts, not models: an ask records hundreds of these and they only need serializing.
class CitedClaim(TypedDict):
    id: str
    section: str
    quote_zh: str
    text_en: str
    verdict: str


class FactRef(TypedDict):
    alias: str
    kind: str
    fid: str
    label: str


class Value(TypedDict):
    name: str
    value: float | int | str | bool
    expr: str | None


class TraceStep(BaseModel):
    model_config = ConfigDict(frozen=True)
    step: int
    rule: str
    stage: str
    title: str
    inputs: list[FactRef]
    values: list[Value]
    claims: list[CitedClaim]
    sources: list[str]
    sentence: str
    produced: list[str]


def label(fact: dict[str, Any]) -> str:
    kind = fact["kind"]
    for key in ("gpu", "finding", "remedy", "model", "part"):
        if fact.get(key):
            return f"{kind} {fact[key]}"
    return kind


def cite(kb: KnowledgeBase, claim_ids: list[str]) -> list[CitedClaim]:
    key = tuple(claim_ids)
    if key not in kb.citations:  # the same rule cites the same claims on every firing
        kb.citations[key] = _cite(kb, claim_ids)
    return kb.citations[key]


def _cite(kb: KnowledgeBase, claim_ids: list[str]) -> list[CitedClaim]:
    return [CitedClaim(id=c, section=kb.claims[c].section, quote_zh=kb.claims[c].quote_zh,
                       text_en=kb.claims[c].text_en, verdict=kb.claims[c].verdict) for c in claim_ids]


class Collector:
    """Everything one ask derives: facts by id, and the steps that produced them."""

    def __init__(self, kb: KnowledgeBase):
        self.kb = kb
        self.facts: dict[str, dict[str, Any]] = {}
        self.steps: list[TraceStep] = []
        self.errors: list[str] = []
        self.firings = 0

    def new_fact(self, kind: str, fields: dict[str, Any], step: int) -> dict[str, Any]:
        fid = f"f{len(self.facts) + 1}"
        fact = {"kind": kind, **fields, "fid": fid, "by": step}
        self.facts[fid] = fact
        return fact

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [f for f in self.facts.values() if f["kind"] == kind]

    def step_of(self, fact: dict[str, Any]) -> TraceStep | None:
        by = fact.get("by", 0)
        return self.steps[by - 1] if by else None

    def record(self, *, rule: str, stage: str, title: str, inputs: dict[str, dict[str, Any]],
               values: list[Value], claims: list[str], sources: list[str], sentence: str,
               outputs: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Add a step and the facts it produced; returns the new facts (with fid and by)."""
        number = len(self.steps) + 1
        facts = [self.new_fact(kind, fields, number) for kind, fields in outputs]
        self.steps.append(TraceStep.model_construct(
            step=number, rule=rule, stage=stage, title=title,
            inputs=[FactRef(alias=a, kind=f["kind"], fid=f["fid"], label=label(f))
                    for a, f in inputs.items()],
            values=values, claims=cite(self.kb, claims), sources=sources, sentence=sentence,
            produced=[f"{f['fid']} {label(f)}" for f in facts]))
        return facts

    def fire(self, compiled: CompiledRule, matched: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """The generic action: compute a rule's `then` facts from the matched facts and trace it."""
        self.firings += 1
        if self.firings > MAX_FIRINGS:
            raise EngineError(f"more than {MAX_FIRINGS} rule firings in one ask: rules chain without end "
                              f"(last: {compiled.key})")
        rule = compiled.rule
        env: dict[str, Any] = {alias: matched[alias] for alias, _ in compiled.aliases}
        values: list[Value] = []
        outputs: list[tuple[str, dict[str, Any]]] = []
        computed_all: dict[str, Any] = {}
        for out in compiled.outputs:
            fields: dict[str, Any] = dict(out.literals)
            for name, expression in out.computed:
                value = expression.evaluate({**env, **fields})
                if isinstance(value, float) and value != value:  # NaN never enters a fact
                    raise EngineError(f"{compiled.key}: '{name}' evaluated to NaN")
                fields[name] = value
                values.append(Value(name=name, value=value, expr=expression.text))
            computed_all.update(fields)
            outputs.append((out.kind, {k: v for k, v in fields.items() if k not in out.local_names}))
        try:
            sentence = render(rule.explain, {**env, **computed_all})
        except TemplateError as err:
            raise EngineError(f"{compiled.key}: explain: {err}") from None
        return self.record(rule=compiled.key, stage=rule.stage, title=rule.title, inputs=env, values=values,
                           claims=list(rule.claims), sources=list(rule.sources), sentence=sentence, outputs=outputs)

    def check(self) -> None:
        if self.errors:
            raise EngineError("; ".join(self.errors))
