"""The Chinese site reads as Chinese: no page leaves English sentences outside names, ids, units, cited titles and
the text it marks as quoted English; the glossary is found by the words readers search for; search results start
with what a page says, not with its table headers."""

from __future__ import annotations

import re
from pathlib import Path

import markdown
import pytest
from material.plugins.search.plugin import Parser

from gpukb.site import generate
from gpukb.site.english import english_passages, site_names
from gpukb.site.links import GLOSSARY, rule_page
from gpukb.site.search import without_table_headers

REPO = Path(__file__).resolve().parents[1]
SITE = REPO / "site"
# The decision tree's conditions name the fields and values the engine compares (`params ≥ 100e9`, `'lora'`) in
# the words of its expressions: what is left there is those identifiers, not sentences
IDENTIFIERS = {"decision-tree.md"}


@pytest.fixture(scope="module")
def zh_site():
    return generate(REPO, SITE / "scenarios.yaml", docs_dir=SITE / "docs", lang="zh")


def _english(site) -> list:
    names = site_names(site.kb)
    return [p for path, page in sorted(site.pages.items()) if path.endswith(".md")
            for p in english_passages(path, page, names)]


def test_no_chinese_page_leaves_english_sentences(zh_site):
    found = [p for p in _english(zh_site) if p.page not in IDENTIFIERS]
    assert not found, f"{len(found)} English passages on Chinese pages:\n" + "\n".join(map(str, found[:40]))


def test_the_decision_tree_reads_its_conditions_in_chinese(zh_site):
    tree = zh_site.pages["decision-tree.md"]
    assert "工作负载：task 为 'inference'" in tree and " is " not in tree and "workload:" not in tree
    rules = [r for r in zh_site.kb.rules.values() if r.stage == "recommendations"]
    # what the rules' own expressions and outputs spell: fields, values, fact kinds
    written = " ".join([*(p.if_ or "" for r in rules for p in r.when),
                        *(f"{o.kind} {' '.join(o.set)} {' '.join(map(str, o.set.values()))} {' '.join(o.compute)}"
                          for r in rules for o in r.then)])
    identifiers = set(re.findall(r"[a-z][a-z0-9_]*", written))
    for passage in english_passages("decision-tree.md", tree, site_names(zh_site.kb)):
        words = [w for w in re.findall(r"(?<![\w.])[a-z][a-z0-9_]*", passage.text) if len(w) > 1]
        assert set(words) <= identifiers, (passage, set(words) - identifiers)


@pytest.mark.parametrize(("text", "english"), [
    ("定位 datacenter", ["datacenter"]),
    ("假设：framework not given: hf (Hugging Face)", ["framework not given: hf ( )"]),  # the name is allowed
    ("显存 80 GB，带宽 3.35 TB/s，`h100-sxm-80gb`，rec.throughput@3，1,979 TFLOPS，tokens/s", []),
    ('原文：<span lang="en">“900 GB/s bidirectional”</span>', []),
    ("运行 gpukb validate，或加 --deadline-days", []),
    ('<div lang="en" markdown="1">\n\nThe changelog <div>nested</div> stays English.\n\n</div>\n之后 the end', ["the end"]),
])
def test_the_check_sees_sentences_not_names(text, english):
    assert [p.text for p in english_passages("x.md", text, {"Hugging Face"})] == english


def test_the_glossary_takes_the_words_readers_search_for(zh_site):
    page = zh_site.pages[GLOSSARY]
    sections = _indexed(page)
    found = {title: text for title, text in sections if "梯度检查点" in text or "gradient checkpointing" in text}
    assert list(found) == ["激活重计算"], found  # the synonym finds the concept, not a ban of it
    for concept in ("张量并行", "流水线并行", "数据并行", "专家并行", "ZeRO", "KV 缓存", "首 token 时延", "每 token 时延",
                    "模型算力利用率", "激活重计算", "卸载到 CPU 内存"):
        assert concept in dict(sections), concept
    aliases = dict(sections)
    assert "TTFT" in aliases["首 token 时延"] and "TPOT" in aliases["每 token 时延"] and "MFU" in aliases["模型算力利用率"]
    assert "不写" not in aliases["激活重计算"]  # the synonyms people type are not listed as words to avoid


def test_search_snippets_start_with_the_page_not_its_table_headers(zh_site):
    english = generate(REPO, SITE / "scenarios.yaml", docs_dir=SITE / "docs", lang="en")
    rule = next(iter(english.kb.rules))
    sections = _indexed(english.pages[rule_page(rule)])
    text = " ".join(t for _, t in sections)
    assert "Property" not in text and "Key" not in text.split() and "Stage" not in text.split()
    assert "When" in dict(sections) or any("fires once" in t for _, t in sections)


def _indexed(page_markdown: str) -> list[tuple[str, str]]:
    """(title, text) of each section Material's search indexes from the page as the site renders it."""
    html = markdown.markdown(page_markdown, extensions=["toc", "tables", "attr_list", "md_in_html"])
    parser = Parser()
    parser.feed(without_table_headers(html))
    parser.close()
    return [(re.sub(r"<[^>]+>", "", "".join(s.title)).strip(), re.sub(r"<[^>]+>", " ", "".join(s.text)))
            for s in parser.data if not s.is_excluded()]
