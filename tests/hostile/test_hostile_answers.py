"""The repros of the hardening issue that need the real knowledge base: workloads, the command
line, run-time expression bounds and the site generator."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from cpu_budget import within_cpu_seconds
from typer.testing import CliRunner

import gpukb
from gpukb import EngineError, WorkloadError
from gpukb.cli import app
from gpukb.knowledge.kinds import KINDS
from gpukb.site import build_site
from gpukb.site.text import href

REPO = Path(__file__).resolve().parents[2]
XSS_URL = "https://arxiv.org/abs/2211.05102)[CLICK](javascript:alert(document.domain)"
EVIL = '<script>alert("x")</script><img src=x onerror=alert(1)> [a](javascript:alert(2)) \x1b]0;t\x07'
runner = CliRunner()


@pytest.mark.parametrize(("workload", "field"), [
    ({"model": "llama-2-7b", "task": "pretrain", "tokens": "1e400"}, "tokens"),
    ({"params": "1e400", "layers": 2, "hidden_size": 8, "heads": 2, "vocab_size": 10, "task": "lora"}, "params"),
    ({"params": 10**5000, "layers": 2, "hidden_size": 8, "heads": 2, "vocab_size": 10, "task": "lora"}, "params"),
    ({"model": "llama-2-7b", "task": "pretrain", "tokens": float("inf")}, "tokens"),
    ({"model": "llama-2-7b", "task": "pretrain", "tokens": float("nan")}, "tokens"),
    ({"model": "llama-2-7b", "task": "lora", "seq_len": True}, "seq_len"),
    ({"model": "llama-2-7b", "task": "lora", "micro_batch_size": False}, "micro_batch_size"),
    ({"model": "llama-2-7b", "task": "lora", "lora_rank": 65536}, "lora_rank"),
    ({"params": "10T", "layers": 1, "hidden_size": 1, "heads": 1, "vocab_size": 10, "task": "inference"}, "params"),
    ({"params": "70B", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000, "task": "lora"}, "params"),
    ({"model": "x" * 1_000_000, "task": "lora"}, "model"),
])
def test_hostile_workloads_are_workload_errors(kb, workload, field):
    with within_cpu_seconds(5, field), pytest.raises(WorkloadError) as info:
        kb.ask(workload)
    assert info.value.field == field


def test_a_custom_model_matching_its_architecture_is_answered(kb):
    answer = kb.ask({"params": "6.7B", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000,
                     "intermediate_size": 11008, "task": "lora", "lora_rank": 64, "gpus": ["h100-sxm-80gb"]})
    assert answer.options


@pytest.mark.parametrize("tokens", ["1e400", "9" * 5000])
def test_cli_overflow_is_one_line_not_a_traceback(tokens):
    result = runner.invoke(app, ["ask", "--task", "pretrain", "--model", "llama-2-7b", "--tokens", tokens])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and result.output.startswith("error: tokens:")


def test_cli_strips_control_characters_it_would_print():
    result = runner.invoke(app, ["ask", "--task", "lora", "--model", "llama\x1b]0;pwned\x07-2-7b"])
    assert result.exit_code == 2 and "\x1b" not in result.output and "\x07" not in result.output
    assert "llama]0;pwned-2-7b" in result.output


def test_schema_outside_a_checkout_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["schema"])
    assert result.exit_code == 2 and "no knowledge base" in result.output
    assert list(tmp_path.iterdir()) == []


def test_answers_cannot_be_changed_through_their_lists(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "lora"})
    for sequence in (answer.options, answer.rejected, answer.findings, answer.remedies, answer.trace,
                     answer.workload.gpus, answer.options[0].findings, answer.options[0].trace):
        with pytest.raises(AttributeError):
            sequence.append(None)  # type: ignore[attr-defined]


def test_a_value_beyond_the_bound_at_run_time_names_the_rule(tmp_path):
    for top in ("kb", "rules"):
        shutil.copytree(REPO / top, tmp_path / top)
    path = tmp_path / "rules" / "requirements" / "kv-cache.yaml"
    text = path.read_text(encoding="utf-8")
    per_token = re.search(r"^(\s+per_token: )(.+)$", text, re.M)
    assert per_token
    path.write_text(text.replace(per_token[0], per_token[1] + "(w.params * w.params * w.params) ** 2"), encoding="utf-8")
    kb = gpukb.load_kb(tmp_path)
    with within_cpu_seconds(5, "the ask"), pytest.raises(EngineError, match=r"req\.[a-z.-]+@\d+: .*beyond 1e\+60"):
        kb.ask({"model": "llama-2-70b", "task": "inference"})


def test_hostile_text_and_links_in_every_field_stay_text_on_the_site(kb):
    """Every text and link field of a source, claim, GPU, model, policy, interconnect and rule holds
    markup; the generated pages, rendered as the site renders them, hold none of it."""
    markdown = pytest.importorskip("markdown")

    # fields that name other entries stay ids: the site asks the tampered KB for model pages
    references = {ref.field.split(".")[0] for kind in KINDS for ref in kind.refs}

    def hostile(entry, *, url=False):
        update = {name: EVIL for name, info in type(entry).model_fields.items()
                  if info.annotation in (str, "str") and name not in ("id", "path", *references)}
        if url:
            update["url"] = XSS_URL
        return entry.model_copy(update=update)

    def first(items):
        key = sorted(items)[0]
        return {**items, key: hostile(items[key])}

    sources = {k: hostile(s, url=s.url is not None) for k, s in kb.sources.items()}
    tampered = dataclasses.replace(kb, tables={
        **kb.tables, "sources": sources, "claims": first(kb.claims), "gpus": first(kb.gpus), "models": first(kb.models),
        "policies": first(kb.policies), "interconnects": first(kb.interconnects), "rules": first(kb.rules)})
    site = build_site(tampered, [], readme=None)
    md = markdown.Markdown(extensions=["tables", "attr_list", "admonition", "toc", "pymdownx.details",
                                       "pymdownx.superfences"])
    rendered = [md.reset().convert(page) for name, page in site.pages.items()
                if name.endswith(".md") and ("alert" in page or "javascript" in page)]
    assert rendered
    for html in rendered:
        assert not re.search(r"""href\s*=\s*["']?\s*javascript:""", html, re.I)
        assert not re.search(r"<(script|img)\b", html, re.I)
    assert href(XSS_URL) == "https://arxiv.org/abs/2211.05102%29%5BCLICK%5D%28javascript:alert%28document.domain%29"
    assert href("javascript:alert(1)") is None
