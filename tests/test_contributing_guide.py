"""CONTRIBUTING.md stays true: its worked examples load and pass lint, and its tables list every
lint code, expression function and template format the code knows."""

import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.lint import lint
from gpukb.core.codes import CODES
from gpukb.language.expr import FUNCTIONS
from gpukb.language.facts import ENGINE_KINDS, RULE_KINDS
from gpukb.language.template import FORMATS
from kbfiles import REPO, entry_file, remove_entry

GUIDE = REPO / "CONTRIBUTING.md"
BLOCK = re.compile(r"```yaml\n# file: (?P<path>\S+)\n(?P<body>.*?)```", re.DOTALL)


def _examples() -> list[tuple[str, str]]:
    return [(m["path"], m["body"]) for m in BLOCK.finditer(GUIDE.read_text(encoding="utf-8"))]


def test_the_guide_has_a_worked_example_of_every_entry_kind():
    paths = [path for path, _ in _examples()]
    for folder in ("kb/sources/", "kb/gpus/", "kb/systems/", "kb/models/", "rules/"):
        assert any(p.startswith(folder) for p in paths), folder
    rule = next(body for path, body in _examples() if path.startswith("rules/"))
    for key in ("when:", "then:", "let:", "compute:", "explain:", "tests:", "set:"):
        assert key in rule


def test_the_worked_examples_load_and_pass_lint(checkout: Path):
    written = []
    for path, body in _examples():
        target = checkout / path
        for item in (lambda d: d if isinstance(d, list) else [d])(yaml.safe_load(body)):
            try:
                entry_file(checkout, item["id"])
            except LookupError:
                continue
            remove_entry(checkout, item["id"])  # the knowledge base may have gained the entry since
        if target.exists():
            target.write_text(target.read_text(encoding="utf-8").rstrip("\n") + "\n" + body, encoding="utf-8")
        else:
            target.write_text(body, encoding="utf-8")
        written.append(path)
    kb = gpukb.load_kb(checkout)
    assert kb.gpus["rtx-a5000-24gb"].memory_bytes == 24e9
    assert kb.models["llama-3.2-1b"].params == 1_235_814_400
    result = lint(checkout)
    mine = [p for p in result.problems if p.file in written and p.code not in ("W101",)]
    assert mine == [], mine
    answer = kb.ask({"model": "llama-3.2-1b", "task": "full_finetune", "seq_len": 65536, "gpus": ["rtx-a5000-24gb"]})
    assert any(s.rule == "bottleneck.capacity.activations-exceed-gpu@1" for s in answer.trace)
    shown = CliRunner().invoke(app, ["explain", "bottleneck.capacity.activations-exceed-gpu", "--root", str(checkout)])
    assert shown.exit_code == 0 and "[draft]" in shown.output


def test_the_guide_lists_the_table_of_lint_codes():
    """CONTRIBUTING.md's table is gpukb.core.codes.CODES, row for row."""
    text = GUIDE.read_text(encoding="utf-8")
    listed = {code: (summary, where) for code, summary, where in
              re.findall(r"^\| ([A-Z]\d{3}) \| (.*?) \| (.*?) \|$", text, re.MULTILINE)}
    assert listed == {code: (c.summary, c.where) for code, c in CODES.items()}


def test_every_code_the_source_names_is_in_the_table_and_every_row_is_used():
    named: set[str] = set()
    for path in (REPO / "src" / "gpukb").rglob("*.py"):
        if path.name != "codes.py":
            named |= set(re.findall(r'"([A-Z]\d{3})"', path.read_text(encoding="utf-8")))
    assert named - set(CODES) == set(), "codes reported but missing from gpukb.core.codes.CODES"
    assert set(CODES) - named == set(), "codes in gpukb.core.codes.CODES that nothing reports"


def test_a_problem_with_a_code_outside_the_table_cannot_be_built():
    with pytest.raises(ValueError, match="Z999"):
        gpukb.Problem("kb/x.yaml", 1, 1, "Z999", "made up")
    assert gpukb.Problem("kb/x.yaml", 1, 1, "W101", "m").severity == "warning"
    assert gpukb.Problem("kb/x.yaml", 1, 1, "E001", "m").severity == "error"


def test_the_languages_are_documented_completely():
    text = GUIDE.read_text(encoding="utf-8")
    for name in FUNCTIONS:
        assert f"`{name}`" in text, name
    for name in FORMATS:
        assert f"`{name}`" in text, name
    for kind in [*ENGINE_KINDS, *RULE_KINDS]:
        assert f"`{kind}`" in text, kind
