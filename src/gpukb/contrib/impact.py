"""`gpukb impact`: what a change to kb/ or rules/ does to the answers, as a pull-request comment.

Canonical scenarios (site/scenarios.yaml, the worked examples the documentation shows; a
scenarios.yaml at the repository root only where the site has none) are asked of the base
revision's knowledge base and of the working tree's. The Markdown report lists, per scenario whose answer
changed: the best option, GPU counts, GPU types that now fit or are now rejected, findings and
remedies added, removed or changed, and the rules responsible — the rule ids@versions whose trace
steps differ in the changed parts of the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ..answer.answer import Answer, Option
from ..core.errors import ASK_ERRORS, KBError
from ..core.fmt import gb
from ..core.ids import split_versioned
from ..knowledge.kb import KnowledgeBase
from ..knowledge.loader import read_checkout
from .gfm import code, text
from .scenarios import Scenario, ScenarioError
from .scenarios import load_scenarios as site_scenarios

SCENARIO_FILES = ("site/scenarios.yaml", "scenarios.yaml")
MAX_LINES = 6  # per list in one scenario; the rest is counted
MAX_MESSAGE = 160  # characters of a finding's sentence
RANKED = 5  # options shown when the ranking changes


class ImpactError(Exception):
    """Scenarios or the base revision cannot be read."""


# --- scenarios ----------------------------------------------------------------------------------


def scenario_file(root: Path, explicit: Path | None = None) -> Path:
    if explicit is not None:
        if not explicit.is_file():
            raise ImpactError(f"no scenarios file at {explicit}")
        return explicit
    for name in SCENARIO_FILES:
        if (root / name).is_file():
            return root / name
    raise ImpactError(f"no scenarios: give --scenarios FILE or create {' or '.join(SCENARIO_FILES)}")


def load_scenarios(path: Path) -> list[Scenario]:
    """The scenario file format of the site (gpukb.contrib.scenarios): a YAML list of
    {id, title, description?, workload}, one parser for every tool that reads it."""
    try:
        return site_scenarios(path)
    except (ScenarioError, yaml.YAMLError) as error:
        raise ImpactError(str(error)) from None


def _heading(scenario: Scenario) -> str:
    return f"{text(scenario.title)} ({code(scenario.id)})"


# --- comparing two answers ----------------------------------------------------------------------


def _ask(kb: KnowledgeBase, workload: dict[str, Any]) -> Answer | str:
    try:
        return kb.ask(workload)
    except ASK_ERRORS as error:
        return f"{type(error).__name__}: {error}"


def rule_id(key: str) -> str:
    return split_versioned(key)[0]


def _round(value: Any) -> Any:
    return float(f"{value:.6g}") if isinstance(value, float) else value


def _steps(trace: Iterable[Any]) -> dict[tuple[str, tuple[str, ...]], list[Any]]:
    """Trace steps by (rule id, input labels): what each computed and said."""
    out: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
    for step in trace:
        sig = (rule_id(step.rule), tuple(sorted(i["label"] for i in step.inputs)))
        out.setdefault(sig, []).append((step.rule, tuple((v["name"], _round(v["value"])) for v in step.values),
                                        step.sentence))
    for steps in out.values():
        steps.sort(key=repr)
    return out


def _placement(o: Option | None) -> str:
    return f"{o.count} × {text(o.gpu)}" if o else "none fits"


def _said(message: str, rule: str) -> str:
    """A finding's sentence and the rule that wrote it, as report text."""
    return f"{text(_short(message))} [{text(rule)}]"


def _reason(o: Option) -> str:
    worst = [f for f in o.findings if f.severity == "error"] or o.findings
    return _said(worst[0].message, worst[0].rule) if worst else "no finding recorded"


def _short(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE - 1].rstrip() + "…"


def _capped(title: str, items: list[str]) -> list[str]:
    if not items:
        return []
    shown = items[:MAX_LINES] + ([f"… and {len(items) - MAX_LINES} more"] if len(items) > MAX_LINES else [])
    return [f"{title}:", *(f"  - {item}" for item in shown)]


def _band_text(band: Any) -> str:
    if band is None:
        return "none"
    if band.low is None or band.high is None:
        return f"too few points ({band.points})"
    return f"{band.low:.3g}–{band.high:.3g} ({band.points} points)"


def _band_changes(a: Option, b: Option) -> list[str]:
    """The option's error bands that moved: a band is part of the answer (what a user may expect), so a new or
    a wrong measurement that widens or shifts it changes the answer even where no number it brackets moved."""
    before, after = a.bands, b.bands
    out = []
    for name in sorted(set(before) | set(after)):
        x, y = before.get(name), after.get(name)
        same = (x is None) == (y is None) and (x is None or y is None or (
            x.points == y.points and _round(x.low) == _round(y.low) and _round(x.high) == _round(y.high)))
        if not same:
            out.append(f"{code(name)}: {_band_text(x)} → {_band_text(y)}")
    return out


@dataclass
class Comparison:
    lines: list[str]
    rules: list[str]  # rule keys (id@version) responsible, from the changed parts' traces

    @property
    def changed(self) -> bool:
        return bool(self.lines)


def compare(base: Answer | str, head: Answer | str) -> Comparison:
    """What differs between two answers to the same workload, as Markdown bullet lines."""
    if isinstance(base, str) or isinstance(head, str):
        if isinstance(base, str) and isinstance(head, str):
            return Comparison([] if base == head else [f"Fails before: {text(base)}", f"Fails now: {text(head)}"], [])
        if isinstance(base, str):
            return Comparison([f"Failed before ({text(base)}); now answers: best option {_placement(head.best)}"], [])  # type: ignore[union-attr]
        return Comparison([f"Answered before (best option {_placement(base.best)}); now fails: {text(head)}"], [])
    lines: list[str] = []
    touched: set[str] = set()  # rule ids in the traces of changed parts
    b_best, h_best = base.best, head.best
    if _placement(b_best) != _placement(h_best):
        lines.append(f"**Best option:** {_placement(b_best)} → **{_placement(h_best)}**")
        for o in (b_best, h_best):
            touched |= {rule_id(s.rule) for s in (o.trace if o else [])}
    elif b_best and h_best and b_best.tokens_per_s and h_best.tokens_per_s and \
            abs(h_best.tokens_per_s / b_best.tokens_per_s - 1) > 0.005:
        lines.append(f"Best option {_placement(h_best)}: {b_best.tokens_per_s:,.0f} → {h_best.tokens_per_s:,.0f} tokens/s")
        touched |= {rule_id(s.rule) for s in b_best.trace + h_best.trace}
    if base.memory.total != head.memory.total:
        lines.append(f"Memory for one replica: {gb(base.memory.total)} → {gb(head.memory.total)}")
        touched |= {rule_id(s.rule) for s in head.trace if s.stage == "requirements"}

    b_fit = {o.gpu: o for o in base.options}
    h_fit = {o.gpu: o for o in head.options}
    b_all = {**b_fit, **{o.gpu: o for o in base.rejected}}
    h_all = {**h_fit, **{o.gpu: o for o in head.rejected}}
    counts, now_rejected, now_fits = [], [], []
    for gpu in sorted(set(b_fit) & set(h_fit)):
        a, b = b_fit[gpu], h_fit[gpu]
        if a.count != b.count:
            counts.append(f"{text(gpu)}: {a.count} → {b.count}")
        if (a.count, a.per_gpu_bytes, a.strategy, a.score, a.tier) != (b.count, b.per_gpu_bytes, b.strategy, b.score, b.tier):
            touched |= {rule_id(s.rule) for s in a.trace + b.trace}
    for gpu in sorted(set(b_fit) & (set(h_all) - set(h_fit))):
        now_rejected.append(f"{text(gpu)} — {_reason(h_all[gpu])}")
        touched |= {rule_id(s.rule) for s in b_fit[gpu].trace + h_all[gpu].trace}
    for gpu in sorted(set(h_fit) & (set(b_all) - set(b_fit))):
        now_fits.append(f"{text(gpu)} ({h_fit[gpu].count} GPU(s))")
        touched |= {rule_id(s.rule) for s in b_all[gpu].trace + h_fit[gpu].trace}
    new = [f"{text(g)}: " + (f"fits, {h_all[g].count} GPU(s)" if g in h_fit else "rejected")
           for g in sorted(set(h_all) - set(b_all))]
    gone = [text(g) for g in sorted(set(b_all) - set(h_all))]
    lines += _capped("GPU counts", counts) + _capped("Now rejected", now_rejected) + _capped("Now fits", now_fits)
    lines += _capped("Error bands", [f"{text(gpu)} {change}" for gpu in sorted(set(b_fit) & set(h_fit))
                                     for change in _band_changes(b_fit[gpu], h_fit[gpu])])
    lines += _capped("New candidates", new) + _capped("No longer candidates", gone)
    b_rank = [o.gpu for o in base.options[:RANKED]]
    h_rank = [o.gpu for o in head.options[:RANKED]]
    if b_rank != h_rank and b_rank[:1] == h_rank[:1]:
        lines.append(f"Ranking (top {RANKED}): {', '.join(map(text, b_rank))} → {', '.join(map(text, h_rank))}")

    def key(f: Any) -> tuple[str, str, str, str]:
        return (rule_id(f.rule), f.gpu or "", f.kind, f.severity)

    b_find, h_find = {key(f): f for f in base.findings}, {key(f): f for f in head.findings}
    added, removed, refigured = [], [], {}
    for k in sorted(set(b_find) | set(h_find)):
        a, b = b_find.get(k), h_find.get(k)
        if a and b and a.message == b.message:
            continue
        touched.add(k[0])
        if a is None:
            added.append(f"{text(b.severity)}: {_said(b.message, b.rule)}")  # type: ignore[union-attr]
        elif b is None:
            removed.append(f"{text(a.severity)}: {_said(a.message, a.rule)}")
        else:
            refigured[b.rule] = refigured.get(b.rule, 0) + 1
    lines += _capped("Findings added", added) + _capped("Findings removed", removed)
    if refigured:
        lines.append("Findings with new figures: " + ", ".join(f"{n} from {code(r)}" for r, n in sorted(refigured.items())))

    b_rem = {(r.id, r.gpu or ""): r for r in base.remedies}
    h_rem = {(r.id, r.gpu or ""): r for r in head.remedies}
    remedy_lines = []
    for k in sorted(set(b_rem) | set(h_rem)):
        a, b = b_rem.get(k), h_rem.get(k)
        if a and b and (a.effect, a.title) == (b.effect, b.title):
            continue
        touched.add(rule_id((b or a).rule))  # type: ignore[union-attr]
        where = f" on {text(k[1])}" if k[1] else ""
        if a is None:
            remedy_lines.append(f"added: {text(b.title)}{where}: {text(b.effect)} [{text(b.rule)}]")  # type: ignore[union-attr]
        elif b is None:
            remedy_lines.append(f"removed: {text(a.title)}{where} [{text(a.rule)}]")
        else:
            remedy_lines.append(f"{text(b.title)}{where}: {text(a.effect)} → {text(b.effect)} [{text(b.rule)}]")
    lines += _capped("Remedies", remedy_lines)

    if not lines:
        return Comparison([], [])
    b_steps, h_steps = _steps(base.trace), _steps(head.trace)
    responsible: set[str] = set()
    for sig in set(b_steps) | set(h_steps):
        if sig[0] in touched and b_steps.get(sig) != h_steps.get(sig):
            side = h_steps.get(sig) or b_steps.get(sig) or []
            responsible |= {step[0] for step in side}
    return Comparison(lines, sorted(responsible))


# --- the report ---------------------------------------------------------------------------------


def _rules_line(keys: list[str], base_kb: KnowledgeBase, head_kb: KnowledgeBase) -> str:
    """Rules whose definition changed first (with the version they had), then those recomputed."""
    from ..knowledge.versions import content

    changed, recomputed = [], []
    for key in keys:
        rid = rule_id(key)
        old, new = base_kb.rules.get(rid), head_kb.rules.get(rid)
        if old is not None and new is None:
            changed.append(f"{code(key)} (removed)")
        elif new is not None and old is None:
            changed.append(f"{code(key)} (new rule)")
        elif old is not None and new is not None and (content(old) != content(new) or old.version != new.version):
            changed.append(f"{code(key)} (**changed here**, was v{old.version})")
        else:
            recomputed.append(code(key))
    parts = changed + ([f"recomputed from changed inputs: {', '.join(recomputed)}"] if recomputed else [])
    return "Rules responsible: " + "; ".join(parts)


def _entries_in_play(changes: list[Any], answer: Answer | str, kb: KnowledgeBase) -> list[str]:
    """Changed non-rule entries this answer reads: policies, its GPUs and their links, its model,
    precision and optimizer (claims and sources change wording only)."""
    if isinstance(answer, str):
        return []
    w = answer.workload
    gpus = {o.gpu for o in answer.options + answer.rejected}
    links = {link for g in gpus if g in kb.gpus for link in (kb.gpus[g].scale_up, kb.gpus[g].pcie) if link}
    used = {"policies": None, "gpus": gpus, "interconnects": links, "models": {w.model},
            "dtypes": {w.precision, "nf4"}, "optimizers": {w.optimizer}}
    out = []
    for c in changes:
        if c.kind in used and (used[c.kind] is None or c.id in used[c.kind]):  # type: ignore[operator]
            out.append(code(f"{c.kind}:{c.id}"))
    return out


def _best_cell(answer: Answer | str) -> str:
    if isinstance(answer, str):
        return "fails"
    return _placement(answer.best)


def render(base_kb: KnowledgeBase, head_kb: KnowledgeBase, rev: str, scenarios: list[Scenario],
           source: str) -> str:
    from ..knowledge.versions import diff

    # every title, message and id below comes from the pull request: copied through gfm.text or gfm.code,
    # never raw (versions are checked semver by the manifest's schema)
    d = diff(base_kb, head_kb)
    out = ["## gpukb impact report", "",
           f"Knowledge base **{base_kb.version}** at {code(rev)} (`{base_kb.content_hash[:12]}`) → "
           f"**{head_kb.version}** in this change (`{head_kb.content_hash[:12]}`); scenarios from {code(source)}.", ""]
    if d.changed:
        out.append(f"**What changed** (calls for a **{d.level}** bump of the KB version):")
        items = [text(c.describe()) for c in d.changes] + [text(what) for what, _ in d.other]
        out += [f"- {item}" for item in items[:20]]
        if len(items) > 20:
            out.append(f"- … and {len(items) - 20} more")
    else:
        out.append("kb/ and rules/ are unchanged.")
    out.append("")
    results = []
    for scenario in scenarios:
        before, after = _ask(base_kb, scenario.workload), _ask(head_kb, scenario.workload)
        results.append((scenario, before, after, compare(before, after)))
    changed = [r for r in results if r[3].changed]
    unchanged = [r[0] for r in results if not r[3].changed]
    if not changed:
        out += [f"**No answer changes** in {len(scenarios)} scenarios.", ""]
    else:
        out += [f"**{len(changed)} of {len(scenarios)} scenarios change.**", "",
                "| Scenario | Best option before | Best option now | Memory, one replica |", "|---|---|---|---|"]
        for scenario, before, after, _ in changed:
            memory = "—"
            if not isinstance(before, str) and not isinstance(after, str):
                memory = gb(after.memory.total) if before.memory.total == after.memory.total else \
                    f"{gb(before.memory.total)} → {gb(after.memory.total)}"
            out.append(f"| {text(scenario.title)} | {_best_cell(before)} | {_best_cell(after)} | {memory} |")
        out.append("")
    for scenario, before, after, comparison in changed:
        out += [f"### {_heading(scenario)}", "",
                f"Workload: {code(json.dumps(scenario.workload, ensure_ascii=False, sort_keys=True))}", ""]
        for line in comparison.lines:
            out.append(line if line.startswith("  - ") else f"- {line}")
        if comparison.rules:
            out.append(f"- {_rules_line(comparison.rules, base_kb, head_kb)}")
        inputs = _entries_in_play(d.changes, after if not isinstance(after, str) else before, head_kb)
        if inputs:
            out.append(f"- Changed entries it reads: {', '.join(inputs)}")
        out.append("")
    if unchanged:
        out += [f"<details><summary>{len(unchanged)} scenario(s) unchanged</summary>", ""]
        out += [f"- {_heading(s)}" for s in unchanged]
        out += ["", "</details>", ""]
    return "\n".join(out)


def impact_report(root: Path, rev: str, scenarios_path: Path | None = None) -> str:
    """The Markdown report comparing `rev`'s kb/ and rules/ with the working tree's under `root`."""
    from ..knowledge.versions import BaseRevisionError, revision_tree

    root = Path(root)
    path = scenario_file(root, scenarios_path)
    scenarios = load_scenarios(path)
    head_kb = read_checkout(root)
    try:
        with revision_tree(root, rev) as base_root:
            if base_root is None:
                raise ImpactError(f"{rev} has no kb/ to compare with")
            try:
                base_kb = read_checkout(base_root)
            except KBError as error:
                raise ImpactError(f"the knowledge base at {rev} does not load:\n{error}") from None
            try:
                source = path.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                source = str(path)
            return render(base_kb, head_kb, rev, scenarios, source)
    except BaseRevisionError as error:
        raise ImpactError(str(error)) from None
