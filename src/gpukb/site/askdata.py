"""The ask page's answers: every question of the grid asked of the real engine at build time, each kept
as the few things the page shows (the headline, the first options with their bands, the warnings), in
both languages, one file per model and task so a phone loads only the one asked about."""

from __future__ import annotations

import copy
import json
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from ..answer.answer import Answer, Finding, Option
from ..answer.bandtext import SHOWN, banded, shown
from ..contrib.scenarios import Run
from ..core.errors import ASK_ERRORS
from ..core.fmt import gb
from ..knowledge.kb import KnowledgeBase
from . import askgrid

FIRST_OPTIONS = 3  # options shown: the first, and two to weigh it against
WARNINGS = 4
# the figures of an option, in the order shown; each with its band where the answer has one
FIGURES = ("tokens_per_s", "ttft_s", "tpot_s", "time_to_train_s", "mfu", "usd_per_million_tokens", "cost_usd")


def _figures(o: Option, lang: str) -> list[list[str]]:
    zh = lang == "zh"
    out = []
    for name in FIGURES:
        value = getattr(o, name)
        if not value:
            continue
        band = o.bands.get(name)
        text = banded(name, value, band, lang) if band is not None else shown(name, value, lang)
        out.append([SHOWN[name][zh], text])
    if o.usd_per_hour:
        out.append(["每小时租金（云）" if zh else "$/hour (cloud)", f"${o.usd_per_hour:,.2f}"])
    return out


def _option(o: Option, lang: str) -> dict[str, Any]:
    zh = lang == "zh"
    used, usable = gb(o.per_gpu_bytes), gb(o.usable_bytes)
    # GPUs and systems by id: their names and pages are in the page's index, once
    return {"gpu": o.gpu, "count": o.count, **({"system": o.system} if o.system else {}),
            "plan": o.strategy.describe("zh" if zh else "en"),
            "memory": f"每卡占用 {used} / 可用 {usable}" if zh else f"{used} of {usable} per GPU",
            "figures": _figures(o, lang)}


def _warnings(a: Answer, lang: str) -> list[dict[str, str]]:
    """The first option's errors and warnings (the answer's, when nothing fits), one per rule and kind."""
    found = [f for f in (a.best.findings if a.best else a.findings) if f.severity in ("error", "warning")]
    groups: dict[tuple[str, str, str], list[Finding]] = defaultdict(list)
    for f in found:
        groups[(f.severity, f.kind, f.rule)].append(f)
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0] != "error", -len(kv[1]), kv[0][2]))
    out = []
    for (severity, _kind, rule), group in ordered[:WARNINGS]:
        rule_id = rule.rsplit("@", 1)[0]
        out.append({"severity": severity, "text": group[0].text(lang), "rule": rule_id})
    return out


def record(a: Answer, lang: str, scenario: str | None = None) -> dict[str, Any]:
    """What the page shows of one answer, in `lang`."""
    zh = lang == "zh"
    s = a.summary
    out: dict[str, Any] = {
        "headline": ((zh and s.headline_zh) or s.headline) if s else "",
        "options": [_option(o, lang) for o in a.options[:FIRST_OPTIONS]],
        "total": len(a.options), "rejected": len(a.rejected), "memory": gb(a.memory.total),
        "warnings": _warnings(a, lang),
    }
    if scenario:
        out["scenario"] = scenario  # its page, and its trace's, hold the whole reasoning
    return out


@dataclass(frozen=True)
class Asked:
    """One model and task's answers: the defaults its questions leave out, and a record per key and language."""

    model: str
    task: str
    defaults: dict[str, str]
    answers: dict[str, dict[str, dict[str, Any]]]  # key -> lang -> record

    def file(self, lang: str) -> str:
        """The file the page loads: a text that recurs (a plan, a figure, a warning) is written once, in
        `strings`, and where it recurs by its index there (the page's script reads it back)."""
        answers = copy.deepcopy({k: v[lang] for k, v in self.answers.items()})  # the records stay as they are
        counts = Counter(text for record in answers.values() for text in _texts(record))
        strings = sorted((t for t, n in counts.items() if n > 1 and len(t) > 6), key=lambda t: -counts[t])
        numbered = {t: i for i, t in enumerate(strings)}
        for record in answers.values():
            _intern(record, numbered)
        data = {"model": self.model, "task": self.task, "defaults": self.defaults, "strings": strings, "answers": answers}
        return json_text(data)


_MARKUP = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


def json_text(data: Any) -> str:
    """Compact JSON in which no text reads as markup, even to a browser that sniffs the file as HTML:
    `<`, `>` and `&` are written as JSON escapes (the page's script reads them back as the characters)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).translate(_MARKUP)


def _texts(record: dict[str, Any]) -> list[str]:
    """The texts of a record that may be written by index: headline, plans, memory, figures, warnings."""
    out = [record.get("headline", "")]
    for o in record.get("options", ()):
        out += [o["plan"], o["memory"], *(part for figure in o["figures"] for part in figure)]
    out += [w["text"] for w in record.get("warnings", ())]
    return out


def _intern(record: dict[str, Any], numbered: dict[str, int]) -> None:
    def at(text: str) -> str | int:
        return numbered.get(text, text)

    if "headline" in record:
        record["headline"] = at(record["headline"])
    for o in record.get("options", ()):
        o["plan"], o["memory"] = at(o["plan"]), at(o["memory"])
        o["figures"] = [[at(part) for part in figure] for figure in o["figures"]]
    for w in record.get("warnings", ()):
        w["text"] = at(w["text"])


def data_path(model: str, task: str) -> str:
    return f"ask/data/{model}/{task}.json"


def _defaults(a: Answer) -> dict[str, str]:
    """The values the engine fills in when a question leaves a field out: a question that gives one of
    them is the question that leaves it out (the page drops it before looking the answer up)."""
    w = a.workload
    return {name: askgrid.value_text(value) for name in ("seq_len", "micro_batch_size", "batch_size", "framework",
                                                         "objective") if (value := getattr(w, name, None))}


def _without(question: dict[str, Any], defaults: dict[str, str]) -> dict[str, Any]:
    """The question less the fields it gives at their default value (as the page looks it up)."""
    return {n: v for n, v in question.items() if askgrid.value_text(v) != defaults.get(n)}


def _both(kb: KnowledgeBase, question: dict[str, Any], scenario: str | None) -> tuple[dict[str, dict[str, Any]], Answer | None]:
    try:
        a = kb.ask(question)
    except ASK_ERRORS as error:  # the engine refuses the question: that refusal is its answer
        return {lang: {"error": error.text(lang) if hasattr(error, "text") else str(error)} for lang in ("en", "zh")}, None
    return {lang: record(a, lang, scenario) for lang in ("en", "zh")}, a


def answer_grid(kb: KnowledgeBase, runs: list[Run], models: list[str]) -> list[Asked]:
    """Every model x task x grid question, and each scenario made only of the form's fields (its record
    links to its trace), answered by kb.ask()."""
    scenarios: dict[tuple[str, str], list[tuple[dict[str, Any], str]]] = defaultdict(list)
    for run in runs:
        w = run.scenario.workload
        if askgrid.in_form(w) and w["model"] in models:
            rest = {k: v for k, v in w.items() if k not in ("model", "task")}
            scenarios[(w["model"], w["task"])].append((rest, run.scenario.id))
    out = []
    for model in models:
        for task in askgrid.TASKS:
            base = {"model": model, "task": task}
            answers: dict[str, dict[str, dict[str, Any]]] = {}
            answers[""], a = _both(kb, base, None)  # the defaults first: a question that restates one is this one
            defaults = _defaults(a) if a is not None else {}
            named: dict[str, str] = {}
            for question, sid in scenarios[(model, task)]:
                named[askgrid.key(_without(question, defaults))] = sid
            for record in answers[""].values() if "" in named else ():
                if "error" not in record:
                    record["scenario"] = named[""]
            questions = [*askgrid.grid(kb, task), *(q for q, _ in scenarios[(model, task)])]
            for question in (_without(q, defaults) for q in questions):
                k = askgrid.key(question)
                if k not in answers:
                    answers[k], _ = _both(kb, {**base, **question}, named.get(k))
            out.append(Asked(model, task, defaults, answers))
    return out
