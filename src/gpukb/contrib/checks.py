"""Checks `gpukb lint` runs on a loaded knowledge base, each a function returning Problems.

The loader already rejects what cannot be read (schema, references, unsafe expressions). These
checks find what loads but cannot be right: rules that can never fire, rules that chain in a
cycle, claims nothing cites, sources without an address or a date, and deprecations without a
successor. Codes, their severity and whether they may be allowed are in codes.CODES (and the
table in CONTRIBUTING.md); a warning is reported but does not fail lint (unless `--strict`).

Some findings may be deliberate. kb/lint.yaml allows one code for one entry with a written reason
(`allow: [{code, id, reason}]`); only codes marked allowable in codes.CODES can be allowed, and an allowance that
matches nothing is itself reported, so exceptions never go stale silently.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..answer.workload import EnergyScope, KvPrecision, Offload, OptimizerId, Precision, Task
from ..core.codes import CODES
from ..core.errors import Problem
from ..knowledge.kb import KnowledgeBase
from ..knowledge.rules import CompiledRule, Pattern
from ..knowledge.schema import Gpu, Slug
from ..knowledge.yamlpos import Loc, load_located
from ..language import expr as ex
from ..language.facts import ENGINE_KINDS, FINDING_KINDS, SEVERITIES
from ..language.template import TemplateError, placeholders
from . import figures

ALLOWANCES_FILE = "kb/lint.yaml"
ALLOWABLE = sorted(code for code, spec in CODES.items() if spec.allowable)


# --- allowances (kb/lint.yaml) ---------------------------------------------------------------


class Allowance(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    code: str
    id: Slug
    reason: str = Field(min_length=10, description="why the exception is right, in a sentence")


class AllowanceFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    allow: list[Allowance] = []


@dataclass
class Allowances:
    """Deliberate exceptions from kb/lint.yaml; records which were used."""

    items: dict[tuple[str, str], Allowance] = field(default_factory=dict)
    lines: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    used: set[tuple[str, str]] = field(default_factory=set)

    def allows(self, code: str, entry_id: str) -> bool:
        key = (code, entry_id)
        if key in self.items:
            self.used.add(key)
            return True
        return False

    def unused(self) -> list[Problem]:
        return [Problem(ALLOWANCES_FILE, *self.lines[key], "W102",
                        f"allowance {key[0]} for '{key[1]}' matches no problem: remove it", "allow")
                for key in sorted(set(self.items) - self.used)]

    def notes(self) -> list[str]:
        return [f"allowed {code} for '{entry_id}': {self.items[(code, entry_id)].reason}"
                for code, entry_id in sorted(self.used)]


def load_allowances(root: Path) -> tuple[Allowances, list[Problem]]:
    """Read kb/lint.yaml (optional). Problems: A101 for a file that does not validate."""
    path = Path(root) / ALLOWANCES_FILE
    allowances = Allowances()
    if not path.is_file():
        return allowances, []
    doc, problems = load_located(path, ALLOWANCES_FILE, Path(root))
    if doc is None or problems:
        return allowances, problems
    try:
        parsed = AllowanceFile.model_validate(doc.data or {})
    except ValidationError as err:
        out = []
        for item in err.errors():
            line, col = doc.where(tuple(item["loc"]))
            out.append(Problem(ALLOWANCES_FILE, line, col, "A101", item["msg"], ".".join(map(str, item["loc"]))))
        return allowances, out
    for i, allowance in enumerate(parsed.allow):
        line, col = doc.where(("allow", i))
        key = (allowance.code, allowance.id)
        if allowance.code not in ALLOWABLE:
            problems.append(Problem(ALLOWANCES_FILE, line, col, "A101",
                                    f"{allowance.code} cannot be allowed (only {', '.join(ALLOWABLE)}): fix it",
                                    f"allow.{i}.code"))
        elif key in allowances.items:
            problems.append(Problem(ALLOWANCES_FILE, line, col, "A101", f"{key[0]} for '{key[1]}' is allowed twice",
                                    f"allow.{i}"))
        else:
            allowances.items[key] = allowance
            allowances.lines[key] = (line, col)
    return allowances, problems


# --- what values a fact field can take ----------------------------------------------------------

ANY = None  # the domain of a field whose values cannot be enumerated (computed, numeric, free text)
Domain = frozenset[Any] | None


def _same(a: Any, b: Any) -> bool:
    """Equality as durable-rules sees it: booleans never equal numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, str) != isinstance(b, str):
        return False
    return bool(a == b)


def _contains(domain: Iterable[Any], value: Any) -> bool:
    return any(_same(value, d) for d in domain)


BOOLEANS = frozenset({True, False})


def engine_domains(kb: KnowledgeBase) -> dict[tuple[str, str], frozenset[Any]]:
    """Known values of the engine's fact fields, from the Workload and catalog types.

    Must agree with resolve.workload_fact / gpu_fact and the planner (a test checks it)."""
    gpus = frozenset(kb.gpus)  # a deprecated GPU leaves the default catalog but can still be asked for by id
    live_models = frozenset(m for m, model in kb.models.items() if model.status != "deprecated") | {"custom"}
    gpu_literals = {name: frozenset(get_args(Gpu.model_fields[name].annotation))
                    for name in ("vendor", "form_factor", "segment")}
    domains: dict[tuple[str, str], frozenset[Any]] = {
        ("workload", "task"): frozenset(get_args(Task)),
        ("workload", "precision"): frozenset(get_args(Precision)),
        ("workload", "kv_cache_precision"): frozenset(get_args(KvPrecision)) | {""},  # "" when not given
        ("workload", "energy_scope"): frozenset(get_args(EnergyScope)),
        ("gpu", "architecture"): frozenset(g.architecture for g in kb.gpus.values()),
        ("workload", "optimizer"): frozenset(get_args(OptimizerId)) | {""},  # "" for inference
        ("workload", "activation_checkpointing"): frozenset({"auto", "on", "off"}),
        ("workload", "model"): live_models,
        ("workload", "training"): BOOLEANS,
        ("workload", "flash_attention"): BOOLEANS,
        ("workload", "flash_attention_version"): frozenset({1, 2}),
        ("gpu", "gpu"): gpus,
        ("gpu", "vendor"): gpu_literals["vendor"],
        ("gpu", "form_factor"): gpu_literals["form_factor"],
        ("gpu", "segment"): gpu_literals["segment"],
        ("plan", "gpu"): gpus,
        ("plan", "offload"): frozenset(get_args(Offload)),
        ("plan", "zero_stage"): frozenset({0, 1, 2, 3}),
        ("fleet", "largest_gpu"): gpus,
    }
    for kind, fields in (("gpu", ("has_bf16", "has_fp8", "kv_cache_supported", "liquid_only", "air_cooled", "consumer")),
                         ("plan", ("fits", "checkpointing", "tp_over_pcie"))):
        for name in fields:
            domains[(kind, name)] = BOOLEANS
    return domains


# Fields whose literal values are fixed whatever a rule computes.
FIXED_DOMAINS: dict[tuple[str, str], frozenset[Any]] = {
    ("finding", "finding"): frozenset(FINDING_KINDS),
    ("finding", "severity"): frozenset(SEVERITIES),
}


class Production:
    """Which fact kinds can exist, and the values each field can take, given a set of live rules."""

    def __init__(self, kb: KnowledgeBase, live: Iterable[CompiledRule]):
        self.engine = engine_domains(kb)
        self.producers: dict[str, list[tuple[str, dict[str, Any], frozenset[str]]]] = {}
        for compiled in live:
            for out in compiled.outputs:
                computed = frozenset(name for name, _ in out.computed if name not in out.local_names)
                self.producers.setdefault(out.kind, []).append((compiled.rule.id, out.literals, computed))

    def produced(self, kind: str) -> bool:
        return kind in ENGINE_KINDS or bool(self.producers.get(kind))

    def domain(self, kind: str, name: str) -> Domain:
        if kind in ENGINE_KINDS:
            return self.engine.get((kind, name), ANY)
        return union_domain(kind, name, [(lit, comp) for _, lit, comp in self.producers.get(kind, [])])


def union_domain(kind: str, name: str, outputs: list[tuple[dict[str, Any], frozenset[str]]]) -> Domain:
    """Values `name` can take over facts of `kind` asserted by these outputs (literals, computed names)."""
    values: set[Any] = set()
    for literals, computed in outputs:
        if name in computed:
            return FIXED_DOMAINS.get((kind, name), ANY)
        if name in literals:
            values.add(literals[name])
        # a field an output neither sets nor computes is absent: it equals nothing
    return frozenset(values)


def _show(value: Any) -> str:
    """A value as a rule author writes it: 'text', 12, true."""
    return str(value).lower() if isinstance(value, bool) else repr(value)


def _describe(domain: frozenset[Any]) -> str:
    if not domain:
        return "it is never set"
    shown = sorted(_show(v) for v in domain)
    more = f", … ({len(shown)} values)" if len(shown) > 12 else ""
    return "it is one of " + ", ".join(shown[:12]) + more


def unsatisfiable(node: ast.AST, kind: str, domain_of: Any) -> str | None:
    """Why a condition over one fact of `kind` can never hold, or None if it might.

    Only equality and membership tests of the fact's own fields against constants are judged;
    anything else is assumed satisfiable."""
    if isinstance(node, ast.Expression):
        return unsatisfiable(node.body, kind, domain_of)
    if isinstance(node, ast.BoolOp):
        reasons = [unsatisfiable(v, kind, domain_of) for v in node.values]
        if isinstance(node.op, ast.And):
            return next((r for r in reasons if r), None)
        return "; ".join(r for r in reasons if r) if all(reasons) else None
    bare = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not) else node
    if isinstance(bare, ast.Name):  # `field` tests field == true, `not field` field == false
        wanted = bare is node
        domain = domain_of(bare.id)
        if domain is not ANY and not _contains(domain, wanted):
            return f"{kind}.{bare.id} is never {_show(wanted)} ({_describe(domain)})"
        return None
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(op, ast.Eq) and isinstance(right, ast.Name) and isinstance(left, ast.Constant):
            left, right = right, left
        if not isinstance(left, ast.Name):
            return None
        domain = domain_of(left.id)
        if domain is ANY:
            return None
        if isinstance(op, ast.Eq) and isinstance(right, ast.Constant):
            if not _contains(domain, right.value):
                return f"{kind}.{left.id} is never {_show(right.value)} ({_describe(domain)})"
        elif isinstance(op, ast.In) and isinstance(right, ast.List | ast.Tuple):
            wanted = [item.value for item in right.elts if isinstance(item, ast.Constant)]
            if not any(_contains(domain, w) for w in wanted):
                return f"{kind}.{left.id} is never any of {', '.join(map(_show, wanted))} ({_describe(domain)})"
    return None


def _pattern_reason(pattern: Pattern, cond: ex.Expr | None, production: Production,
                    all_producers: dict[str, list[str]]) -> str | None:
    kind = pattern.kind
    if not production.produced(kind):
        makers = all_producers.get(kind, [])
        if makers:
            return f"'{kind}' facts come only from rules that can never fire ({', '.join(sorted(makers))})"
        return f"no active rule asserts '{kind}' facts and the engine does not either"
    if cond is None:
        return None
    return unsatisfiable(cond.tree, kind, lambda name: production.domain(kind, name))


# --- R101 / R102: dead rules --------------------------------------------------------------------


def check_dead_rules(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """Rules whose `when` no fact can ever satisfy.

    Liveness is a least fixpoint: start from the engine's facts, add every rule whose patterns
    the facts produced so far can satisfy (kinds that exist, literal values a field can take),
    repeat. What is left never fires: R101 when a pattern's kind is never produced, R102 when a
    condition compares a field with a value it never takes."""
    active = list(kb.active_rules)
    all_producers: dict[str, list[str]] = {}
    for compiled in active:
        for out in compiled.outputs:
            all_producers.setdefault(out.kind, []).append(compiled.rule.id)
    live: dict[str, CompiledRule] = {}
    changed = True
    while changed:
        changed = False
        production = Production(kb, live.values())
        for compiled in active:
            if compiled.rule.id in live:
                continue
            if all(_pattern_reason(p, c, production, all_producers) is None
                   for p, c in zip(compiled.rule.when, compiled.conditions, strict=True)):
                live[compiled.rule.id] = compiled
                changed = True
    production = Production(kb, live.values())
    problems = []
    for compiled in active:
        if compiled.rule.id in live:
            continue
        for i, (pattern, cond) in enumerate(zip(compiled.rule.when, compiled.conditions, strict=True)):
            reason = _pattern_reason(pattern, cond, production, all_producers)
            if reason is None:
                continue
            code, loc = ("R101", ("when", i, "kind")) if not production.produced(pattern.kind) else ("R102", ("when", i, "if"))
            problems.append(kb.problem("rules", compiled.rule.id, loc, code, f"dead rule: it can never fire, {reason}"))
            break
    return problems


# --- R103: cycles -------------------------------------------------------------------------------


def chaining_graph(kb: KnowledgeBase) -> dict[str, dict[str, str]]:
    """rule id -> {rule id it can trigger: the fact kind that links them}.

    A links to B when one of A's `then` facts could satisfy one of B's patterns on its own
    (kind, and the literal values A sets against B's condition on that fact)."""
    active = kb.active_rules
    engine = Production(kb, [])
    graph: dict[str, dict[str, str]] = {c.rule.id: {} for c in active}
    for a in active:
        for out in a.outputs:
            computed = frozenset(name for name, _ in out.computed if name not in out.local_names)
            for b in active:
                for pattern, cond in zip(b.rule.when, b.conditions, strict=True):
                    if pattern.kind != out.kind:
                        continue
                    if cond is not None and unsatisfiable(
                            cond.tree, out.kind, lambda name, k=out.kind, lit=out.literals, comp=computed:
                            union_domain(k, name, [(lit, comp)]) if k not in ENGINE_KINDS else engine.domain(k, name)):
                        continue
                    graph[a.rule.id].setdefault(b.rule.id, out.kind)
    return graph


def _strongly_connected(graph: dict[str, dict[str, str]]) -> list[list[str]]:
    """Tarjan's algorithm; components in a deterministic order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(out)


def _cycle_path(graph: dict[str, dict[str, str]], members: list[str]) -> list[str]:
    """One cycle through the first member, inside the component: [a, b, ..., a]."""
    start, inside = members[0], set(members)
    paths = {start: [start]}
    todo = [start]
    while todo:
        node = todo.pop(0)
        for nxt in sorted(graph[node]):
            if nxt == start:
                return [*paths[node], start]
            if nxt in inside and nxt not in paths:
                paths[nxt] = [*paths[node], nxt]
                todo.append(nxt)
    return [start, start]  # unreachable for a real component


def check_cycles(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """R103: rules that can trigger each other in a loop (A asserts what B matches and B, possibly
    through others, asserts what A matches). Each cycle is reported once, naming its rules."""
    graph = chaining_graph(kb)
    problems = []
    for members in _strongly_connected(graph):
        if len(members) == 1 and members[0] not in graph[members[0]]:
            continue
        path = _cycle_path(graph, members)
        links = " → ".join(f"{a} ({graph[a][b]})" for a, b in itertools.pairwise(path)) + f" → {path[-1]}"
        others = f"; the cycle's component also holds {', '.join(m for m in members if m not in path)}" \
            if len(set(path)) < len(members) else ""
        problems.append(kb.problem("rules", members[0], ("then",), "R103",
                               f"rules chain in a cycle: {links}{others}"))
    return problems


# --- W101: claims nothing cites -----------------------------------------------------------------


def check_uncited_claims(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """W101 (warning): a claim no rule and no policy cites does not take part in any answer."""
    cited = {c for rule in kb.rules.values() for c in rule.claims}
    cited |= {c for policy in kb.policies.values() for c in policy.claims}
    return [kb.problem("claims", claim_id, ("id",), "W101",
                   f"claim '{claim_id}' is cited by no rule and no policy: no answer rests on it")
            for claim_id in sorted(kb.claims)
            if claim_id not in cited and not (allow and allow.allows("W101", claim_id))]


# --- S101 / S102: sources -----------------------------------------------------------------------


def check_sources(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """S101: a source needs an address (url, or path for a local document; the loader enforces
    it too). S102: a source needs a date (as_of) unless kb/lint.yaml allows it with a reason."""
    problems = []
    for source_id, source in sorted(kb.sources.items()):
        if source.url is None and not source.path:
            problems.append(kb.problem("sources", source_id, ("url",), "S101",
                                   f"source '{source_id}' has no address: give a url (or a path for a local document)"))
        if source.as_of is None and not (allow and allow.allows("S102", source_id)):
            problems.append(kb.problem("sources", source_id, ("as_of",), "S102",
                                   f"source '{source_id}' has no date: give as_of (when it was published or read), "
                                   f"or allow it in {ALLOWANCES_FILE} with a reason"))
    return problems


# --- D101 / D102 / D103: deprecation ------------------------------------------------------------


def check_deprecations(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """D101: superseded_by names a deprecated entry (or itself). D102: a deprecated entry names no
    successor and kb/lint.yaml gives no reason. D103: superseded_by on an entry still in use.
    (That the successor exists and is of the same kind is checked when the KB loads, E030.)"""
    problems = []
    for kind_spec, entry_id, entry in kb.entries():
        kind = kind_spec.name
        successor = entry.superseded_by
        table: dict[str, Any] = kb.tables[kind]
        if successor is not None:
            if entry.status != "deprecated":
                problems.append(kb.problem(kind, entry_id, ("superseded_by",), "D103",
                                       f"'{entry_id}' names a successor but its status is {entry.status}: "
                                       "set status: deprecated, or remove superseded_by"))
            target = table.get(successor)
            if successor == entry_id:
                problems.append(kb.problem(kind, entry_id, ("superseded_by",), "D101",
                                       f"'{entry_id}' is superseded by itself"))
            elif target is not None and target.status == "deprecated":
                hint = f" (it is superseded by '{target.superseded_by}')" if target.superseded_by else ""
                problems.append(kb.problem(kind, entry_id, ("superseded_by",), "D101",
                                       f"successor '{successor}' is itself deprecated{hint}: point to an entry in use"))
        elif entry.status == "deprecated" and not (allow and allow.allows("D102", entry_id)):
            problems.append(kb.problem(kind, entry_id, ("status",), "D102",
                                   f"deprecated '{entry_id}' names no successor: set superseded_by, or give the reason "
                                   f"in {ALLOWANCES_FILE}"))
    return problems


# --- L101: both languages ----------------------------------------------------------------------

_HAN = re.compile(r"[\u4e00-\u9fff]")


def _names(template: str) -> set[str]:
    try:
        return {name for name, _ in placeholders(template)}
    except TemplateError:  # reported as R005 when the rule loads
        return set()


def _missing(text: str, chinese: bool) -> bool:
    return not text.strip() or (chinese and not _HAN.search(text))


def check_languages(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """L101: every claim has a title in English and Chinese and its reason in Chinese; every rule its title
    and explanation in Chinese (with the same placeholders as the English one); every remedy a Chinese title."""
    problems = []
    for claim_id, claim in sorted(kb.claims.items()):
        for name, near, chinese in (("title", "text_en", False), ("title_zh", "text_en", True),
                                    ("reason_zh", "reason", True)):
            if _missing(getattr(claim, name), chinese):
                problems.append(kb.problem("claims", claim_id, (near,), "L101",
                                       f"claim '{claim_id}' needs {name}" + (" in Chinese" if chinese else "")))
    for rule_id, rule in sorted(kb.rules.items()):
        for name, near in (("title_zh", "title"), ("explain_zh", "explain")):
            if _missing(getattr(rule, name), True):
                problems.append(kb.problem("rules", rule_id, (near,), "L101", f"rule '{rule_id}' needs {name} in Chinese"))
        # a fact's Chinese text (w.x_zh) shows the same value as its English one (w.x)
        chinese = {name.removesuffix("_zh") for name in _names(rule.explain_zh)} if rule.explain_zh else set()
        if rule.explain_zh and chinese != _names(rule.explain):
            differ = sorted(_names(rule.explain) ^ chinese)
            problems.append(kb.problem("rules", rule_id, ("explain",), "L101",
                                   f"explain and explain_zh must show the same values; they differ in {', '.join(differ)}"))
        for j, out in enumerate(rule.then):
            if out.kind == "remedy" and _missing(str(out.set.get("title_zh", "")), True):
                problems.append(kb.problem("rules", rule_id, ("then", j, "set"), "L101",
                                       f"rule '{rule_id}': a remedy needs title_zh, its title in Chinese"))
    return problems


# --- M001 / M002 / M003: measurements ---------------------------------------------------------


def check_measurements(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """M001: a measurement's setup must be a workload gpukb can ask (fields, catalog ids, fit of the
    fields together); M002: the workload names its framework, and what its quantity needs (one GPU type;
    tokens for GPU-hours); M003: the source's FLOP formula reads only workload fields; M004: the value is one a run
    can have (its quantity's plausible range, its GPU's physics). A point that is askable but does not fit is a
    miss in `gpukb validate`, not a lint error."""
    from ..answer.workload import RL_TASKS, parse_workload
    from ..core.errors import WorkloadError
    from ..estimate.resolve import resolve
    from ..estimate.rl import check_rl
    from ..estimate.validation import unphysical, workload_of
    from ..language import expr
    from ..language.facts import ENGINE_KINDS

    problems = []
    for mid, m in sorted(kb.measurements.items()):
        gpus = m.workload.get("gpus")
        if not isinstance(gpus, list) or len(gpus) != 1:
            problems.append(kb.problem("measurements", mid, ("workload",), "M002",
                                   "a measurement's workload names exactly one GPU type: gpus: [<id>]"))
        if not isinstance(m.workload.get("framework"), str):  # a lint error, not a schema one: older KBs still load
            problems.append(kb.problem("measurements", mid, ("workload",), "M002",
                                       "a measurement's workload names its framework (an id of kb/frameworks: hf, "
                                       "megatron, fsdp, vllm, ...): stacks hold different memory, and validate "
                                       "reports accuracy per framework"))
        if m.quantity == "gpu_hours" and not m.workload.get("tokens"):
            problems.append(kb.problem("measurements", mid, ("workload",), "M002",
                                   "GPU-hours are predicted for a number of training tokens: give workload.tokens"))
        if (wrong := m.implausible()) is not None:
            problems.append(kb.problem("measurements", mid, (wrong[0],), "M004", wrong[1]))
        try:
            w = parse_workload(workload_of(m, kb))
            if w.task in RL_TASKS:
                check_rl(kb, w)
            elif wrong is None and (impossible := unphysical(kb, m, resolve(kb, w)[0])) is not None:
                problems.append(kb.problem("measurements", mid, ("value",), "M004", impossible))
        except WorkloadError as error:
            field = error.field.split(".")[0]
            loc: Loc = ("workload", field) if field in m.workload else ("workload",)
            problems.append(kb.problem("measurements", mid, loc, "M001", f"not a workload gpukb can ask: {error}"))
        unknown = sorted(expr.parse(m.flop_per_token).names - ENGINE_KINDS["workload"]) if m.flop_per_token else []
        if unknown:
            problems.append(kb.problem("measurements", mid, ("flop_per_token",), "M003",
                                       f"flop_per_token reads {', '.join(unknown)}, not workload fields "
                                       "(params, layers, hidden_size, seq_len, vocab_size, ...)"))
    return problems


def check_figures(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """F101: every figure a claim quotes is computed from today's answers, its reason in both languages
    names only values its figures give (the same ones), and a reason without figures holds no placeholder.
    F102: a figure past the caps on figures per claims file and per knowledge base (never asked)."""
    problems = []
    for claim_id, claim in sorted(kb.claims.items()):
        en, zh = _names(claim.reason), _names(claim.reason_zh)
        if not claim.figures:
            if en or zh:
                problems.append(kb.problem("claims", claim_id, ("reason",), "F101",
                                           f"the reason names {', '.join(sorted(en | zh))} but the claim has no figures"))
            continue
        if claim.reason_zh and en != zh:
            problems.append(kb.problem("claims", claim_id, ("reason_zh",), "F101",
                                       f"reason and reason_zh must quote the same values; they differ in "
                                       f"{', '.join(sorted(en ^ zh))}"))
        try:
            figures.reason(kb, claim, "en")
            figures.reason(kb, claim, "zh")
        except figures.FigureError as error:
            name = next((n for n in claim.figures if f"figure {n}:" in str(error)), None)
            code = "F102" if isinstance(error, figures.FigureCapError) else "F101"
            problems.append(kb.problem("claims", claim_id, ("figures", name) if name else ("reason",), code, str(error)))
    return problems


# --- Y101 / Y102: systems -------------------------------------------------------------------------


def check_systems(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """Y101: every GPU in use is held by a system (plans are laid out on systems). Y102: a system's fabric is a
    link inside a node, and each price's quote holds the number it states (as written or to the cent)."""
    problems = []
    held = {s.gpu for s in kb.systems.values() if s.status != "deprecated"}
    for gpu_id, gpu in sorted(kb.gpus.items()):
        if gpu.status != "deprecated" and gpu_id not in held and not (allow and allow.allows("Y101", gpu_id)):
            problems.append(kb.problem("gpus", gpu_id, (), "Y101",
                                       f"no system in kb/systems holds '{gpu_id}': add the machines it comes in, or "
                                       f"allow it in {ALLOWANCES_FILE} with a reason"))
    for system_id, system in sorted(kb.systems.items()):
        fabric = kb.interconnects.get(system.fabric) if system.fabric else None
        if fabric is not None and fabric.kind == "scale_out":
            problems.append(kb.problem("systems", system_id, ("fabric",), "Y102",
                                       f"fabric '{system.fabric}' is a network between nodes, not a link inside one"))
        for i, price in enumerate(system.prices):
            shown = {repr(price.usd_per_node_hour), f"{price.usd_per_node_hour:g}", f"{price.usd_per_node_hour:.2f}",
                     f"{price.usd_per_node_hour:,.2f}"}
            if not price.derived and not any(s in price.quote for s in shown):
                problems.append(kb.problem("systems", system_id, ("prices", i, "quote"), "Y102",
                                           f"the quote does not hold {price.usd_per_node_hour:g}: quote the price, or say "
                                           "in `derived` how it follows from the quote"))
    return problems


# Every static check, one signature each: (kb, allowances) -> problems.
CHECKS = (check_dead_rules, check_cycles, check_uncited_claims, check_sources, check_deprecations, check_measurements,
          check_languages, check_figures, check_systems)


def check_all(kb: KnowledgeBase, allow: Allowances | None = None) -> list[Problem]:
    """Every static check (not the rule tests, the quotes or the version checks)."""
    return [problem for check in CHECKS for problem in check(kb, allow)]
