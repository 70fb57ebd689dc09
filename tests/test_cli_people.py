"""The command line for people: tables that fit 80 columns, explain that takes what a trace shows."""

from __future__ import annotations

import re

import pytest
import yaml
from rich.cells import cell_len
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app

runner = CliRunner()


def test_ask_fits_80_columns_and_never_cuts_an_id():
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    tables = result.output.split("Findings")[0]
    assert max(len(line) for line in tables.splitlines()) <= 80
    for gpu in gpukb.load_kb().gpus:
        if gpu in result.output:
            assert re.search(rf"^\s+{re.escape(gpu)}\s", tables, re.M), gpu
    assert "time to train" not in tables  # no token count: the column would be empty
    assert "pick" in tables and "the article's pick" in result.output


def test_time_to_train_shows_when_tokens_are_given():
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "pretrain", "--tokens", "1T",
                                 "--gpu", "h100-sxm-80gb"], env={"COLUMNS": "80"})
    assert result.exit_code == 0 and "time to train" in result.output and "days" in result.output


def test_explain_numbers_the_chain_without_gaps_and_says_why_lower_options_lose():
    answer = gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["rtx-4090-24gb", "h100-sxm-80gb"]})
    text = answer.explain()
    numbers = [int(n) for n in re.findall(r"^  \[(\d+)\]", text, re.M)]
    assert numbers == list(range(1, len(answer.best.trace) + 1))
    lower = text.split("Ranked lower:")[1]
    # the article's pick (rtx-4090-24gb) is marked, not ranked above the faster H100
    assert re.search(r"rtx-4090-24gb: 1,513 effective tokens/s against 15,621 on h100-sxm-80gb \[rec.rank.training@", lower)
    summary = text.split("Best option:")[0]
    assert "fastest, cheapest and fewest GPUs: 1 x h100-sxm-80gb" in summary and "article's pick: 1 x rtx-4090-24gb" in summary


def test_explain_takes_several_ids_and_id_at_version():
    kb = gpukb.load_kb()
    rule = kb.rules["req.kv-cache"]
    result = runner.invoke(app, ["explain", f"req.kv-cache@{rule.version}", "llama-2-7b"])
    assert result.exit_code == 0, result.output
    first, second = result.output.split("\n---\n")
    head, body = first.split("\n", 1)
    assert head.startswith(f"rule req.kv-cache v{rule.version} [stable]")
    data = yaml.safe_load(body)  # readable YAML, no Python reprs
    assert data["stage"] == "requirements" and data["tests"][0]["expect"]["fires"] is True
    assert "None" not in result.output and "{'" not in result.output
    assert second.startswith("model llama-2-7b v")
    old = runner.invoke(app, ["explain", "req.kv-cache@999"])
    assert old.exit_code == 0 and f"this knowledge base has v{rule.version}" in old.output


def test_explain_suggests_near_ids():
    result = runner.invoke(app, ["explain", "h100", "llama2-7b"])
    assert result.exit_code == 2
    assert "did you mean h100-" in result.output and "h100-sxm-80gb" in result.output
    assert "did you mean llama-2-7b" in result.output


WIDE_COMMANDS = [
    ["ask", "--model", "llama-2-7b", "--task", "full_finetune", "--gpu", "h100-sxm-80gb"],
    ["ask", "--model", "llama-2-7b", "--task", "full_finetune", "--gpu", "h100-sxm-80gb", "--lang", "zh"],
    ["ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "a10-24gb", "--explain"],
    ["ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "a10-24gb", "--explain", "--lang", "zh"],
    ["explain", "h100-sxm-80gb", "rec.rank.training"],
    ["validate"],
    ["lint"],
    ["ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "h100"],  # an error, on stderr
]


@pytest.mark.parametrize("args", WIDE_COMMANDS, ids=lambda a: " ".join(a[:2] + a[-2:]))
def test_every_line_a_command_prints_fits_80_columns(args):
    """Findings, remedies, bands, traces, entries, reports and errors wrap with their indent, CJK counted as two
    cells a character, and an id is never cut."""
    result = runner.invoke(app, args, env={"COLUMNS": "80"})
    text = result.stdout + result.stderr
    assert text.strip(), result
    widths = {line: cell_len(line) for line in text.splitlines()}
    assert max(widths.values()) <= 80, max(widths, key=widths.get)
    if args[0] == "ask" and "--explain" not in args and result.exit_code == 0:
        findings = text.split("\nFindings\n" if "zh" not in args else "\n发现\n")[1]
        continued = [line for line in findings.splitlines()[1:] if line.startswith("    ")]
        assert continued, "a finding that needs more than one line continues under its text"
    for rule in re.findall(r"\[([a-z0-9_.-]+@\d+)\]", " ".join(text.split())):
        assert rule in text  # never cut over two lines
