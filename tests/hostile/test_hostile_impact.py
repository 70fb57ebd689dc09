"""`gpukb impact` under attack: the report CI posts on a pull request copies scenario titles, messages and
ids from that pull request. Planted markup must come out as text: no HTML, link, image, autolink,
mention, cross-reference, table break or control character of the pull request's own."""

from __future__ import annotations

import html
import re

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt  # a CommonMark renderer (rich depends on it)

from gpukb.contrib import gfm
from gpukb.contrib.impact import compare, impact_report
from kbfiles import edit_entry, make_repo

TITLES = [
    "<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "[x](javascript:alert(1))", "[d](data:text/html,x)",
    "<javascript:alert(1)>", "[r][1] [1]: javascript:alert(1)", "&#106;avascript:alert(1) &lt;b&gt;",
    "![pixel](https://tracker.example/p.png)", "@octocat and @org/team please", "fixes #1 and GH-2",
    "| a | b |", "**bold** _em_ ~~struck~~ `code` $x^2$", "\u202eevil\u202c \u2066isolate\u2069 zero\u200bwidth",
    "\x1b[31mred\x1b[0m \x07bell", "www.evil.example and https://evil.example/x", "- a list", "# a heading",
    "1. numbered", "> quote", "<details><summary>x</summary>", "a\nnew line\n\n## and a heading",
]
# What the report itself writes that looks like markup: its folded list of unchanged scenarios.
OWN_HTML = re.compile(r"<details><summary>\d+ scenario\(s\) unchanged</summary>|</details>")
_render = MarkdownIt("commonmark").enable("table")


def _assert_inert(report: str) -> None:
    """Nothing in `report` but the report's own markup: no HTML, link, autolink, mention or control."""
    bare = OWN_HTML.sub("", report)
    assert "<" not in bare and "](" not in bare and "]:" not in bare, bare
    prose = re.sub(r"(`+)(.+?)\1", "", bare)  # GitHub links and mentions nothing inside a code span
    assert not re.search(r"@\w|(?<!&)#\d|://|www\.|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u200b]", prose)
    rendered = _render.render(bare)
    assert not re.search(r"<(a|img|script|em|del|h1|blockquote|ol)\b", rendered), rendered


def test_planted_scenario_titles_are_text_in_the_report(tmp_path):
    groups = [" ".join(TITLES[i::3]) for i in range(3)]  # three scenarios whose answers change
    scenarios = [{"id": f"s{i}", "title": title, "workload": {"model": "llama-2-7b", "task": "full_finetune",
                                                              "gpus": ["h100-sxm-80gb"]}}
                 for i, title in enumerate(groups)]
    scenarios.append({"id": "fails", "title": TITLES[0],
                      "workload": {"model": "<script>alert(2)</script>/`x`/config.json", "task": "lora"}})
    path = tmp_path / "scenarios.yaml"
    path.write_text(yaml.safe_dump(scenarios, allow_unicode=True), encoding="utf-8")
    repo = make_repo(tmp_path / "repo", scenarios=path)

    def triple(rule: dict) -> None:
        rule["then"][0]["compute"]["optimizer"] = f"({rule['then'][0]['compute']['optimizer']}) * 3"
        rule["version"] += 1

    edit_entry(repo, "req.memory.full-training", triple)
    report = impact_report(repo, "HEAD")
    assert f"**{len(groups)} of {len(scenarios)} scenarios change.**" in report  # every planted title is shown
    _assert_inert(report)
    shown = html.unescape(_render.render(OWN_HTML.sub("", report)))
    assert "<script>alert(1)</script>" in shown and "[x](javascript:alert(1))" in shown  # as text, legibly
    assert "U+202E" in shown and "U+001B" in shown


def test_failures_and_messages_are_text():
    lines = compare("WorkloadError: model: <img src=x onerror=alert(1)> @octocat", "EngineError: [x](javascript:y)").lines
    _assert_inert("\n".join(f"- {line}" for line in lines))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=80))
def test_any_text_renders_as_itself_and_nothing_else(value):
    rendered = _render.render(f"- {gfm.text(value)}\n\n| a |\n|---|\n| {gfm.text(value)} |\n")
    assert not re.search(r"<(?!/?(ul|li|table|thead|tbody|tr|th|td)\b)", rendered), rendered
    cells = re.findall(r"<(li|td)>(.*?)</\1>", rendered, re.S)
    assert len(cells) == 2
    expected = " ".join(value.split())
    for _, cell in cells:
        shown = html.unescape(cell).replace("\u2060", "")
        assert re.sub(r"U\+[0-9A-F]{4}", "", shown) == re.sub(r"[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f"
                                                               r"\u2028-\u202e\u2060-\u2069\ufeff]", "", expected)


def test_code_spans_hold_any_text():
    for value in ("a`b", "``", "`x`", "<script>", "x\u202ey"):
        rendered = _render.render(gfm.code(value))
        assert re.fullmatch(r"<p><code>.*</code></p>\n", rendered, re.S), rendered
    assert "U+202E" in gfm.code("x\u202ey")

