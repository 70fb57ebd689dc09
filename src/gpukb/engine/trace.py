"""Trace steps: why each derived fact exists, recorded as rules fire.

The rules engine keeps no record of why it fired, so the generic action (and the planner)
record each step here: the rule, the facts it matched, the values it computed with the
expressions that computed them, the claims it rests on, and a rendered sentence.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field
from typing_extensions import TypedDict  # pydantic needs this TypedDict before Python 3.12

from ..core.errors import EngineError
from ..core.fmt import Lang
from ..knowledge.citations import CitedClaim
from ..knowledge.rules import CompiledOutput, CompiledRule
from ..language.expr import Expr, ExpressionError
from ..language.template import TemplateError, check_values, render

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

# The bound on an ask's rule firings, which grows with its candidate GPU types (most rules fire once per
# type): a healthy ask of the packaged KB records 6-10 steps per type and a hundred or so more for the
# workload (benchmarks/ask_speed.py's workloads, a sweep of tasks over the 28 types). Five times that,
# it catches rules that chain without end after a fraction of a second, and lets a catalog of 1,028
# types answer (the fixed 5,000 it replaces failed every ask of one).
FIRINGS_PER_ASK = 1000
FIRINGS_PER_GPU = 50


def firing_limit(candidates: int) -> int:
    """The most rule firings one ask over `candidates` GPU types may take."""
    return FIRINGS_PER_ASK + FIRINGS_PER_GPU * max(candidates, 1)


# Plain typed dicts, not models: an ask records hundreds of these and they only need serializing.
class FactRef(TypedDict):
    alias: str
    kind: str
    fid: str
    label: str


class Value(TypedDict):
    name: str
    value: float | int | str | bool
    expr: str | None


# A sentence as a step is given it: the text, a rule's (template, values), or a function that writes it
Text = str | tuple[str, dict[str, Any]] | Callable[[], str]


class _Deferred:
    """A step field written out the first time it is read, from what the step was given.

    Most of an ask's steps are never read as text (an option's trace is read when it is printed or
    serialized), and writing out every sentence, input, value and produced fact at every firing was
    over a fifth of an ask. A data descriptor, so a step reads and serializes (pydantic gets
    dataclass fields by attribute) exactly as a step holding the written value: the facts are never
    changed once made, so the same inputs give the same value whenever it is written.
    """

    def __init__(self, done: type, write: Callable[[Any], Any]) -> None:
        self.done = done  # the type of a written value; anything else is what it is written from
        self.write = write
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    def __get__(self, step: Any, owner: type | None = None) -> Any:
        if step is None:
            return self
        state = step.__dict__
        value = state[self.key]
        if type(value) is not self.done:  # not written yet; writing twice gives the same value
            value = state[self.key] = self.write(value)
        return value

    def __set__(self, step: Any, value: Any) -> None:
        step.__dict__[self.key] = value


def _sentence(lang: Lang) -> Callable[[Text], str]:
    """Writes a step's sentence in one language: from its rule's template and values, or its function."""
    def write(given: Text) -> str:
        if type(given) is tuple:
            template, env = given
            return render(template, env, lang) if template else ""
        return given()  # type: ignore[operator]

    return write


def label(fact: dict[str, Any]) -> str:
    kind = fact["kind"]
    for key in ("gpu", "finding", "remedy", "model", "part"):
        if fact.get(key):
            return f"{kind} {fact[key]}"
    return kind


def _fact_refs(inputs: dict[str, dict[str, Any]]) -> list[FactRef]:
    """The facts a step matched, by alias: kind, id and label of each."""
    return [{"alias": a, "kind": f["kind"], "fid": f["fid"], "label": label(f)} for a, f in inputs.items()]


def _produced(facts: tuple[dict[str, Any], ...]) -> list[str]:
    """The facts a step produced, as 'f12 finding memory_capacity'."""
    return [f"{f['fid']} {label(f)}" for f in facts]


# What a rule's step is given for its values: per output, its computed expressions and the scope that holds them
Computed = tuple[tuple[tuple[tuple[str, Expr], ...], dict[str, Any]], ...]


def _values(computed: Computed | Callable[[], list[Value]]) -> list[Value]:
    """Each value a rule computed, with the expression that computed it (or a step's own list of them)."""
    if callable(computed):
        return computed()
    return [{"name": name, "value": scope[name], "expr": expression.text}
            for expressions, scope in computed for name, expression in expressions]


# A frozen dataclass rather than a pydantic model: an ask records hundreds of steps, and this is
# four times cheaper to create. Pydantic still validates and serializes it inside the Answer.
@dataclass(frozen=True)
class TraceStep:
    step: int
    rule: str
    stage: str
    title: str
    inputs: list[FactRef]
    values: list[Value]  # inputs, values and produced: given as facts and scopes, read as lists (see _Deferred)
    claims: tuple[CitedClaim, ...]  # tuples: the same citations are shared by every firing of a rule
    sources: tuple[str, ...]
    sentence: str  # given as Text, read as str: see _Deferred
    produced: list[str]
    # Chinese renderings for `explain(lang="zh")`; kept out of the JSON, which stays English
    title_zh: Annotated[str, Field(exclude=True)] = ""
    sentence_zh: Annotated[str, Field(exclude=True)] = ""

    def __getstate__(self) -> dict[str, Any]:
        """Pickled and copied as written: what a step is given (a planner's sentence function, a rule's
        expressions) may not pickle, and the written fields are the same values."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


# Set after the dataclass is made, so that `dataclass` sees plain fields (a descriptor in the class
# body would become their default); its __init__ then stores what it is given through them.
for _name, _descriptor in (("sentence", _Deferred(str, _sentence("en"))), ("sentence_zh", _Deferred(str, _sentence("zh"))),
                           ("inputs", _Deferred(list, _fact_refs)), ("values", _Deferred(list, _values)),
                           ("produced", _Deferred(list, _produced))):
    setattr(TraceStep, _name, _descriptor)
    _descriptor.__set_name__(TraceStep, _name)


class Collector:
    """Everything one ask derives: facts by id, and the steps that produced them."""

    def __init__(self, kb: KnowledgeBase, candidates: int = 1):
        self.kb = kb  # the knowledge base asked: steps that are not rules cite its claims
        self.candidates = candidates  # GPU types asked about: the firing bound grows with them
        self.max_firings = firing_limit(candidates)
        self.facts: dict[str, dict[str, Any]] = {}
        self.steps: list[TraceStep] = []
        self.matched: list[dict[str, dict[str, Any]]] = []  # per step, the facts it matched by alias
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
               values: list[Value] | Computed | Callable[[], list[Value]], claims: tuple[CitedClaim, ...],
               sources: list[str] | tuple[str, ...],
               sentence: Text, outputs: list[tuple[str, dict[str, Any]]], title_zh: str = "",
               sentence_zh: Text = "") -> list[dict[str, Any]]:
        """Add a step and the facts it produced; returns the new facts (with fid and by)."""
        number = len(self.steps) + 1
        facts = [self.new_fact(kind, fields, number) for kind, fields in outputs]
        step = object.__new__(TraceStep)  # its __dict__ filled at once: a frozen dataclass's __init__ sets
        step.__dict__.update(  # field by field through object.__setattr__, a tenth of an ask
            step=number, rule=rule, stage=stage, title=title, inputs=inputs, values=values, claims=claims,
            sources=sources if type(sources) is tuple else tuple(sources), sentence=sentence, produced=tuple(facts),
            title_zh=title_zh, sentence_zh=sentence_zh)
        self.steps.append(step)
        self.matched.append(inputs)
        return facts

    def fire(self, compiled: CompiledRule, matched: dict[str, dict[str, Any]],
             explained: Callable[[Mapping[str, Any]], bool] | None = None) -> list[dict[str, Any]]:
        """The generic action: compute a rule's `then` facts from the matched facts and trace it. `explained`
        is the rule's template.value_test, made once where the rule is registered."""
        self.firings += 1
        if self.firings > self.max_firings:
            raise EngineError(f"more than {self.max_firings:,} rule firings in one ask ({FIRINGS_PER_ASK:,} + "
                              f"{FIRINGS_PER_GPU} per candidate GPU type, {self.candidates:,} here): rules chain "
                              f"without end (last: {compiled.key})")
        computed = []  # per output, its expressions and their scope: the step's values, written out when read
        outputs: list[tuple[str, dict[str, Any]]] = []
        for out in compiled.outputs:
            scope = {**matched, **out.literals}  # the output's own fields shadow aliases of the same name
            for name, expression in out.computed:
                try:  # run, not evaluate: one call less per expression on the path every firing takes
                    value = expression.run(scope)
                except (ExpressionError, ArithmeticError, TypeError, ValueError):
                    value = expression.evaluate(scope)  # raises the same error, naming the expression
                if value != value:  # NaN (the only value unequal to itself) never enters a fact
                    raise EngineError(f"{compiled.key}: '{name}' evaluated to NaN")
                scope[name] = value
            outputs.append((out.kind, {k: scope[k] for k in out.field_names}))
            computed.append((out.computed, scope))
        sentence_env = (computed[0][1] if len(computed) == 1
                        else _sentence_env(matched, compiled.outputs, [scope for _, scope in computed]))
        rule = compiled.rule
        if explained is None or not explained(sentence_env):
            try:  # the sentences are rendered when read; a value they lack fails the ask now, as rendering would
                check_values(compiled.explain_needs, sentence_env)
            except TemplateError as err:
                raise EngineError(f"{compiled.key}: explain: {err}") from None
        return self.record(rule=compiled.key, stage=rule.stage, title=rule.title, inputs=matched, values=tuple(computed),
                           claims=compiled.citations, sources=compiled.sources, sentence=(rule.explain, sentence_env),
                           outputs=outputs, title_zh=rule.title_zh, sentence_zh=(rule.explain_zh, sentence_env))

    def check(self) -> None:
        if self.errors:
            raise EngineError("; ".join(self.errors))


def _sentence_env(matched: dict[str, dict[str, Any]], outputs: tuple[CompiledOutput, ...],
                  scopes: list[dict[str, Any]]) -> dict[str, Any]:
    """What a rule's sentences read: the matched facts by alias, then each output's fields and `let`
    values, a later output's shadowing an earlier's. With one output, that is its scope itself."""
    env = dict(matched)
    for out, scope in zip(outputs, scopes, strict=True):
        env.update((name, scope[name]) for name in out.field_names)
        env.update((name, scope[name]) for name in out.local_names)
    return env
