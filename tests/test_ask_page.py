"""The ask page's grid and data (gpukb.site.askgrid, askdata, pages.ask), without MkDocs: each record is what
ask() answers, a question that restates a default is the same question, the files stay small enough for a
phone, and the script inserts no markup. The page in a real browser is tested in test_site.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gpukb
from gpukb.site import askgrid, build_site, load_scenarios
from gpukb.site import pages as P
from gpukb.site.askdata import answer_grid, data_path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "site" / "docs" / "javascripts" / "ask.js"
MODEL = "llama-3.1-8b"


@pytest.fixture(scope="module")
def asked(kb):
    return {(a.model, a.task): a for a in answer_grid(kb, [], [MODEL])}


def test_keys_list_the_given_fields_in_form_order():
    assert askgrid.key({}) == ""
    assert askgrid.key({"objective": "cost", "seq_len": 8192, "gpus": ["rtx-4090-24gb"]}) == \
        "gpus=rtx-4090-24gb&seq_len=8192&objective=cost"
    assert askgrid.value_text(30.0) == "30" and askgrid.value_text(["a", "b"]) == "a,b"


def test_the_grid_asks_each_question_once_and_only_of_the_form_s_fields(kb):
    for task in askgrid.TASKS:
        questions = askgrid.grid(kb, task)
        assert questions[0] == {}  # the defaults first
        keys = [askgrid.key(q) for q in questions]
        assert len(keys) == len(set(keys))
        assert all(set(q) <= set(askgrid.FIELDS) for q in questions)
        assert {"framework": askgrid.frameworks(kb, task)[-1]} in questions
    # a few hundred questions per model in all: the build's budget (about a minute on one core)
    assert sum(len(askgrid.grid(kb, t)) for t in askgrid.TASKS) <= 260


@pytest.mark.parametrize("task", askgrid.TASKS)
def test_every_record_is_what_ask_answers(kb, asked, task):
    entry = asked[(MODEL, task)]
    for question in askgrid.grid(kb, task):
        # a question that restates a default is kept as the default question (the page looks it up so)
        record = entry.answers[askgrid.key({n: v for n, v in question.items()
                                            if askgrid.value_text(v) != entry.defaults.get(n)})]
        try:
            a = kb.ask({"model": MODEL, "task": task, **question})
        except gpukb.WorkloadError as error:
            assert record["en"] == {"error": error.text("en")} and record["zh"]["error"] == error.text("zh")
            continue
        for lang, headline in (("en", a.summary.headline), ("zh", a.summary.headline_zh)):
            shown = record[lang]
            assert shown["headline"] == headline
            assert [(o["gpu"], o["count"]) for o in shown["options"]] == [(o.gpu, o.count) for o in a.options[:3]]
            assert shown["total"] == len(a.options) and shown["rejected"] == len(a.rejected)


def test_a_question_that_restates_a_default_is_the_default_question(kb, asked):
    """The page drops a field equal to the default before it looks the answer up: that must be the same answer."""
    for task in askgrid.TASKS:
        entry = asked[(MODEL, task)]
        assert {"seq_len", "framework", "objective"} <= set(entry.defaults)
        plain = kb.ask({"model": MODEL, "task": task})
        for name, value in entry.defaults.items():
            restated = kb.ask({"model": MODEL, "task": task, name: int(value) if value.isdigit() else value})
            assert restated.summary.headline == plain.summary.headline, (task, name)
            assert [(o.gpu, o.count) for o in restated.options] == [(o.gpu, o.count) for o in plain.options], (task, name)


def test_a_refused_question_keeps_the_engine_s_words_in_both_languages(asked):
    record = asked[(MODEL, "inference")].answers["seq_len=32768"]
    assert "error" not in record["en"]  # llama-3.1-8b reads 128k
    small = answer_grid(gpukb.load_kb(), [], ["llama-2-7b"])
    refused = next(a for a in small if a.task == "inference").answers["seq_len=32768"]
    assert "4,096" in refused["en"]["error"] and "seq_len" in refused["en"]["error"]
    assert re.search("[\u4e00-\u9fff]", refused["zh"]["error"])


def test_scenarios_made_of_the_form_s_fields_link_their_trace(kb):
    scenarios = load_scenarios(REPO / "site" / "scenarios.yaml")
    run = next(r for r in gpukb.site.run_scenarios(kb, scenarios) if r.scenario.id == "inference-8b-128k")
    (entry,) = [a for a in answer_grid(kb, [run], [MODEL]) if a.task == "inference"]
    record = entry.answers[askgrid.key({k: v for k, v in run.scenario.workload.items() if k not in ("model", "task")})]
    assert record["en"]["scenario"] == "inference-8b-128k"
    assert record["en"]["headline"] == run.answer.summary.headline


def test_the_files_are_small_enough_for_a_phone(kb, asked):
    site = build_site(kb, [], readme=None, lang="zh", ask_models=[MODEL])
    for task in askgrid.TASKS:
        data = site.pages[data_path(MODEL, task)]
        assert len(data.encode()) < 70_000, (task, len(data.encode()))  # under 8 KB gzipped
        parsed = json.loads(data)
        headline = parsed["answers"][""]["headline"]  # a text that recurs is written once, by index elsewhere
        headline = parsed["strings"][headline] if isinstance(headline, int) else headline
        assert parsed["model"] == MODEL and headline == asked[(MODEL, task)].answers[""]["zh"]["headline"]
        assert headline.startswith("首选方案")
    index = json.loads(site.pages["ask/data/index.json"])
    assert len(site.pages["ask/data/index.json"].encode()) < 40_000
    assert index["lang"] == "zh" and index["ui"]["ask"] == "回答" and [MODEL, kb.models[MODEL].name] in index["models"]
    assert index["order"] == list(askgrid.FIELDS) and "params" in index["workload"]


def test_the_page_and_the_home_link_in_both_languages(kb):
    for lang, words in (("en", "Ask your own question"), ("zh", "提出你自己的问题")):
        site = build_site(kb, [], readme=None, lang=lang, ask_models=[MODEL])
        page = site.pages[P.ASK]
        assert page.startswith("---\ngpukb_ask: true\n---") and 'id="gpukb-ask"' in page
        home = site.pages[P.HOME]
        first_link = re.search(r"\]\(([^)]+)\)", home)
        assert first_link and first_link[1] == "ask/index.md" and words in home
        assert home.index(words) < home.index("###")  # before the goals
        assert list(site.nav[1].values()) == [P.ASK]


def test_the_script_inserts_only_text():
    script = SCRIPT.read_text(encoding="utf-8")
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", ".html("):
        assert sink not in script, sink
    assert "textContent" in script or "createTextNode" in script


def test_the_font_stack_names_chinese_fallbacks_and_headers_keep_words():
    css = (REPO / "site" / "docs" / "stylesheets" / "gpukb.css").read_text(encoding="utf-8")
    stack = re.search(r"--md-text-font-family:([^;]+);", css)
    assert stack and all(f in stack[1] for f in ('"PingFang SC"', '"Microsoft YaHei"', '"Noto Sans CJK SC"'))
    assert stack[1].strip().endswith("sans-serif")
    assert re.search(r"th:lang\(zh\)[^{]*\{[^}]*word-break: keep-all", css)


HF = REPO / "tests" / "fixtures" / "hf"
_ROW = re.compile(r"^\| `([^`]+)` \| https://huggingface\.co/([^/\s]+/[^/\s]+)/blob/main/config\.json \|$", re.M)


def _matching(index: dict, config: dict) -> str | None:
    """What the page's script (fromConfig in ask.js) finds for a pasted config.json, from the index it reads."""
    merged = {**config, **(config.get("text_config") or {})}
    found = [next((merged[k] for k in keys if isinstance(merged.get(k), int)), None) for keys in index["config_keys"]]
    found[3] = found[2] if found[3] is None else found[3]
    found[5] = 1 if found[5] is None else found[5]
    same = [m for m, a in index["architectures"].items() if a[:6] == found[:6]]
    exact = [m for m in same if index["architectures"][m][6] == found[6]]
    return (exact or same or [None])[0]


def test_a_pasted_config_json_finds_the_catalog_model_it_was_published_with(kb):
    """Each Hub config.json of the fixtures finds the catalog model whose hf_repo it was published under (Llama
    3.1 8B's, not Llama 3 8B's: the context length tells them apart); one of a model the catalog lacks finds none."""
    from gpukb.site.askdata import Asked
    from gpukb.site.links import Context

    every = [Asked(m, "lora", {}, {}) for m in askgrid.models(kb)]
    for lang in ("en", "zh"):
        index = json.loads(P.ask.index(Context.build(kb, [], lang), every))
        assert index["ui"]["unmatched"] and index["ui"]["matched"].count("{model}") == 1
        by_repo = {m.hf_repo: m.id for m in kb.models.values() if m.hf_repo}
        published = dict(_ROW.findall((HF / "README.md").read_text(encoding="utf-8")))
        assert sum(repo in by_repo for repo in published.values()) >= 8
        for folder, repo in published.items():
            config = json.loads((HF / folder / "config.json").read_text(encoding="utf-8"))
            assert _matching(index, config) == by_repo.get(repo), folder
