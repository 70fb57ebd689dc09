"""Rules as data: the YAML model of a rule, its checks, and its compiled form.

A rule matches facts (`when`), asserts new facts whose fields are literals (`set`) or
whitelisted expressions over the matched facts (`compute`), and explains itself with a
restricted template. Nothing in a rule is ever executed as Python.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, WithJsonSchema

from ..core.ids import versioned
from ..language import expr as ex
from ..language.facts import ALL_KINDS, FINDING_KINDS, RULE_KINDS, SEVERITIES, fields_of
from ..language.template import TemplateError, needs, placeholders
from .citations import CitedClaim
from .schema import Entry, Float, Name, Slug, Strict

Stage = Literal["requirements", "bottlenecks", "remedies", "recommendations"]
STAGES: tuple[str, ...] = ("requirements", "bottlenecks", "remedies", "recommendations")
Loc = tuple[str | int, ...]


class Pattern(Strict):
    alias: str = Field(alias="as", pattern=r"^[a-z][a-z0-9_]*$", max_length=20)
    kind: Literal[ALL_KINDS]  # type: ignore[valid-type]
    if_: ExprText | None = Field(default=None, alias="if")


# A number where an expression is expected is the constant expression of that number.
ExprText = Annotated[
    str,
    BeforeValidator(lambda v: repr(v) if isinstance(v, int | float) and not isinstance(v, bool) else v),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "number"}],
                    "description": "an expression in gpukb's whitelisted language, or a number"}),
]


class Output(Strict):
    kind: Literal[tuple(RULE_KINDS)]  # type: ignore[valid-type]
    set: dict[str, str | int | float | bool] = {}
    let: dict[str, ExprText] = Field(default={}, description="intermediate values: traced, not asserted")
    compute: dict[str, ExprText] = {}


class Expect(Strict):
    fires: bool
    values: dict[str, Float | str] = Field(
        default={}, description="computed values of the first firing: numbers within ±0.5%, strings exactly")


class RuleTest(Strict):
    name: str
    workload: dict[str, Any]
    expect: Expect


class Rule(Entry):
    stage: Stage
    title: Name
    title_zh: Name = Field(default="", description="the title in Chinese (lint requires it: L101)")
    claims: list[Slug] = []
    sources: list[Slug] = []
    when: list[Pattern] = Field(min_length=1)
    then: list[Output] = Field(min_length=1)
    explain: str
    explain_zh: str = Field(default="", description="the explain sentence in Chinese, with the same placeholders "
                                                    "(lint requires it: L101)")
    tests: list[RuleTest] = []


@dataclass(frozen=True)
class CompiledOutput:
    kind: str
    literals: dict[str, Any]
    computed: tuple[tuple[str, ex.Expr], ...]  # `let` entries first, then `compute`
    local_names: frozenset[str]  # the `let` names, which stay out of the asserted fact

    @cached_property
    def field_names(self) -> tuple[str, ...]:
        """The asserted fact's fields in order: `set` literals, then `compute` (`let` stays local)."""
        names = [*self.literals, *(name for name, _ in self.computed if name not in self.local_names)]
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class CompiledRule:
    rule: Rule
    aliases: tuple[tuple[str, str], ...]  # (alias, kind) in pattern order
    conditions: tuple[ex.Expr | None, ...]
    outputs: tuple[CompiledOutput, ...]
    citations: tuple[CitedClaim, ...] = ()  # the cited claims, filled by the loader once the claims are known

    @cached_property
    def key(self) -> str:
        return versioned(self.rule.id, self.rule.version)

    @cached_property
    def explain_needs(self) -> tuple[tuple[str, str], ...]:
        """The placeholders of both explain sentences, checked at every firing (template.check_values)."""
        return needs(self.rule.explain, self.rule.explain_zh)

    @cached_property
    def sources(self) -> tuple[str, ...]:
        """The rule's sources as every trace step of it holds them."""
        return tuple(self.rule.sources)

    def durable_definition(self) -> dict[str, Any]:
        """durable-rules JSON: one `all` pattern per alias, each `kind == K and <if>`."""
        patterns = []
        earlier: set[str] = set()
        for (alias, kind), cond in zip(self.aliases, self.conditions, strict=True):
            parts: list[dict[str, Any]] = [{"kind": kind}]
            if cond is not None:
                parts.append(ex.to_condition(cond, earlier))
            patterns.append({alias: parts[0] if len(parts) == 1 else {"$and": parts}})
            earlier.add(alias)
        return {"all": patterns}


def compile_rule(rule: Rule) -> tuple[CompiledRule | None, list[tuple[Loc, str, str]]]:
    """Check a validated rule's expressions, fields and template; compile it if all is well.

    Returns (compiled or None, problems as (location, code, message)).
    """
    problems: list[tuple[Loc, str, str]] = []
    aliases: dict[str, str] = {}
    conditions: list[ex.Expr | None] = []
    for i, pattern in enumerate(rule.when):
        if pattern.alias in aliases:
            problems.append((("when", i, "as"), "R001", f"alias '{pattern.alias}' is used twice"))
        cond = None
        if pattern.if_ is not None:
            try:
                cond = ex.parse(pattern.if_)
                ex.to_condition(cond, set(aliases))
            except ex.ExpressionError as err:
                problems.append((("when", i, "if"), "R002", f"unsafe or invalid condition: {err}"))
                cond = None
            else:
                problems += _check_names(cond, aliases, ("when", i, "if"), own_kind=pattern.kind)
        aliases[pattern.alias] = pattern.kind
        conditions.append(cond)

    outputs: list[CompiledOutput] = []
    available: set[str] = {f"{a}.{f}" for a, k in aliases.items() for f in fields_of(k)}
    for j, out in enumerate(rule.then):
        required, allowed = RULE_KINDS[out.kind]
        given = set(out.set) | set(out.compute)
        for name in sorted(given - allowed):
            problems.append((("then", j, "compute" if name in out.compute else "set", name), "R003",
                             f"'{out.kind}' facts have no field '{name}' (fields: {', '.join(sorted(allowed))})"))
        for name in sorted(set(out.set) & set(out.compute)):
            problems.append((("then", j, "set", name), "R003", f"'{name}' is both set and computed"))
        for name in sorted(required - given):
            problems.append((("then", j), "R004", f"a '{out.kind}' fact needs '{name}'"))
        for name in sorted(set(out.let) & (given | set(aliases))):
            problems.append((("then", j, "let", name), "R003", f"'{name}' is already a field or an alias"))
        problems += _check_literals(out, ("then", j, "set"))
        computed: list[tuple[str, ex.Expr]] = []
        local: set[str] = set(out.set)
        blocks = [("let", name, text) for name, text in out.let.items()]
        blocks += [("compute", name, text) for name, text in out.compute.items()]
        for block, name, text in blocks:
            try:
                parsed = ex.parse(text)
            except ex.ExpressionError as err:
                problems.append((("then", j, block, name), "R002", f"unsafe or invalid expression: {err}"))
                local.add(name)  # reported once here, not again by everything that uses it
                continue
            problems += _check_names(parsed, aliases, ("then", j, block, name), local=local)
            computed.append((name, parsed))
            local.add(name)
        available |= local
        outputs.append(CompiledOutput(out.kind, dict(out.set), tuple(computed), frozenset(out.let)))

    for field, template in (("explain", rule.explain), ("explain_zh", rule.explain_zh)):
        try:
            for name, _fmt in placeholders(template):
                if name not in available and name not in aliases:
                    problems.append(((field,), "R005", f"template names '{{{name}}}', which this rule does not have"))
        except TemplateError as err:
            problems.append(((field,), "R005", str(err)))

    if problems:
        return None, problems
    return CompiledRule(rule, tuple(aliases.items()), tuple(conditions), tuple(outputs)), []


def _check_names(parsed: ex.Expr, aliases: dict[str, str], loc: Loc, *, own_kind: str | None = None,
                 local: set[str] | None = None) -> list[tuple[Loc, str, str]]:
    problems = []
    for name in sorted(parsed.names):
        head, _, tail = name.partition(".")
        if tail:
            if head not in aliases:
                problems.append((loc, "R006", f"'{head}' in '{name}' is not an earlier alias of this rule"))
            elif tail not in fields_of(aliases[head]):
                problems.append((loc, "R003", f"'{aliases[head]}' facts have no field '{tail}'"))
        elif own_kind is not None:
            if name not in fields_of(own_kind):
                problems.append((loc, "R003", f"'{own_kind}' facts have no field '{name}'"))
        elif local is None or name not in local:
            problems.append((loc, "R006", f"'{name}' is neither alias.field nor a field computed above"))
    return problems


def _check_literals(out: Output, loc: Loc) -> list[tuple[Loc, str, str]]:
    problems = []
    if out.kind == "finding":
        if "finding" in out.set and out.set["finding"] not in FINDING_KINDS:
            problems.append((loc + ("finding",), "R007", f"finding must be one of {', '.join(FINDING_KINDS)}"))
        if "severity" in out.set and out.set["severity"] not in SEVERITIES:
            problems.append((loc + ("severity",), "R007", f"severity must be one of {', '.join(SEVERITIES)}"))
    return problems
