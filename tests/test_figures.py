"""Claims quote gpukb's own figures as templates over named asks, so the quoted numbers are today's answers."""

from __future__ import annotations

import re

import pytest

import gpukb
from gpukb.contrib import figures
from gpukb.contrib.checks import check_figures
from kbfiles import edit_entry

TEMPLATE = re.compile(r"\{[a-z]")


def test_every_claim_that_quotes_gpukb_renders_todays_figures(kb):
    quoting = [c for c in kb.claims.values() if "gpukb" in c.reason and re.search(r"\d", c.reason)]
    assert len(quoting) >= 10
    for claim in quoting:
        for lang in ("en", "zh"):
            text = figures.reason(kb, claim, lang)
            assert not TEMPLATE.search(text), (claim.id, lang, text)
    assert check_figures(kb) == []


def test_a_quoted_figure_is_the_answer_of_its_ask(kb):
    claim = kb.claims["art.capacity.13b-30b-80gb"]
    answer = gpukb.ask(claim.figures["lora13"].ask)
    best = answer.options[0]
    for lang in ("en", "zh"):
        text = figures.reason(kb, claim, lang)
        assert f"{best.tokens_per_s:,.0f} tokens/s" in text
        assert f"{best.per_gpu_bytes / 1e9:,.1f} GB" in text


def test_a_rule_lends_its_step_values(kb):
    claim = kb.claims["art.intro.bandwidth-engine"]
    values = figures.values(kb, claim.figures["roof13"])
    assert values["value"] > values["limit"] > 200  # the layer GEMMs sit above the H100's ridge point
    assert f"{values['value']:,.1f}" in figures.reason(kb, claim)


@pytest.mark.parametrize(("change", "says"), [
    (lambda e: e["figures"]["lora13"].update(gpu="t4-16gb"), "no option on t4-16gb"),
    (lambda e: e["figures"]["lora13"]["ask"].update(model="no-such-model"), "its ask fails"),
    (lambda e: e["figures"]["lora13"].update(rule="bottleneck.sla.ttft"), "did not fire"),
    (lambda e: e.update(reason=e["reason"] + " {lora13.no_such_field|int}"), "no value for {lora13.no_such_field}"),
    (lambda e: e.update(reason_zh=e["reason_zh"].replace("{lora13.tokens_per_s|int}", "8,628")), "differ in lora13.tokens_per_s"),
])
def test_a_broken_figure_is_a_located_lint_error(checkout, change, says):
    edit_entry(checkout, "art.capacity.13b-30b-80gb", change)
    problems = [p for p in check_figures(gpukb.load_kb(checkout)) if p.code == "F101"]
    assert any(says in p.message for p in problems), problems
    assert all(p.file.endswith("kb/claims/article.yaml") and p.line > 1 for p in problems)


def test_a_reason_without_figures_holds_no_placeholder(checkout):
    edit_entry(checkout, "art.bandwidth.hbm3-mainstream", lambda e: e.update(reason=e["reason"] + " {x.y}"))
    problems = check_figures(gpukb.load_kb(checkout))
    assert [p.code for p in problems] == ["F101"] and "no figures" in problems[0].message


def test_a_page_shows_the_reason_as_written_when_its_figures_cannot_be_computed(checkout):
    edit_entry(checkout, "art.capacity.13b-30b-80gb", lambda e: e["figures"]["lora13"].update(gpu="t4-16gb"))
    kb = gpukb.load_kb(checkout)
    claim = kb.claims["art.capacity.13b-30b-80gb"]
    with pytest.raises(figures.FigureError):
        figures.reason(kb, claim)
    assert figures.shown(kb, claim) == claim.reason and figures.shown(kb, claim, "zh") == claim.reason_zh
