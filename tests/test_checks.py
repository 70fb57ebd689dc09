"""Each lint check of gpukb.contrib.checks, on a copy of kb/ and rules/ broken the way a contributor might."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.answer.workload import Workload
from gpukb.cli import app
from gpukb.contrib import checks
from gpukb.contrib.lint import lint
from gpukb.core.errors import KBError
from gpukb.estimate.resolve import gpu_fact, resolve
from kbfiles import edit_entry

runner = CliRunner()


def _messages(problems) -> list[str]:
    return [str(p) for p in problems]


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"fixture text not found in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_the_repository_passes_every_check(kb):
    problems = checks.check_all(kb, checks.load_allowances(kb.root)[0])
    assert [p for p in problems if not p.is_warning] == []


# --- R101 / R102: dead rules ---------------------------------------------------------------------


def test_R101_a_pattern_on_a_kind_nothing_produces(checkout):
    edit_entry(checkout, "req.adapters", lambda r: r.update(status="deprecated"))  # the only producer of adapters
    problems = checks.check_dead_rules(gpukb.load_kb(checkout))
    (problem,) = [p for p in problems if "req.memory.adapters" in p.file or p.code == "R101"]
    assert problem.code == "R101" and problem.file == "rules/requirements/memory-adapters.yaml"
    assert problem.field.startswith("when.") and problem.field.endswith(".kind")
    assert "dead rule: it can never fire, no active rule asserts 'adapters' facts" in problem.message


def test_R102_equality_with_a_value_the_engine_never_gives(checkout):
    _replace(checkout / "rules/remedies/lora.yaml", "task == 'full_finetune'", "task == 'finetune'")
    (problem,) = checks.check_dead_rules(gpukb.load_kb(checkout))
    assert str(problem).startswith("rules/remedies/lora.yaml:")
    assert problem.code == "R102" and problem.field.endswith(".if")
    assert "dead rule: it can never fire, workload.task is never 'finetune' (it is one of " in str(problem)
    assert "'full_finetune'," in str(problem)


def test_R102_finding_literal_outside_the_finding_kinds(checkout):
    _replace(checkout / "rules/remedies/kv-cache.yaml", "finding == 'memory_capacity'", "finding == 'memory'")
    (problem,) = checks.check_dead_rules(gpukb.load_kb(checkout))
    assert problem.file == "rules/remedies/kv-cache.yaml" and problem.code == "R102"
    assert "finding.finding is never 'memory' (it is one of 'compute', 'interconnect'," in problem.message


def test_R102_a_value_no_producer_sets(checkout):
    # only bottleneck.capacity.no-fit sets `rejects` on a finding, and always to true
    (checkout / "rules/remedies/never.yaml").write_text("""\
id: remedy.never
version: 1
stage: remedies
title: Matches a finding that says it does not reject
when:
  - as: f
    kind: finding
    if: finding == 'memory_capacity' and rejects == false
then:
  - kind: remedy
    set: {remedy: never, title: Never}
    compute:
      effect_bytes: f.value
explain: Never fires.
""", encoding="utf-8")
    (problem,) = checks.check_dead_rules(gpukb.load_kb(checkout))
    assert problem.file == "rules/remedies/never.yaml" and problem.line == 8
    assert problem.message == "dead rule: it can never fire, finding.rejects is never false (it is one of true)"


def test_R102_dead_rules_make_their_consumers_dead(checkout):
    _replace(checkout / "rules/requirements/kv-cache.yaml", "task == 'inference'", "task == 'infer'")
    problems = {p.file: p for p in checks.check_dead_rules(gpukb.load_kb(checkout))}
    assert "workload.task is never 'infer'" in problems["rules/requirements/kv-cache.yaml"].message
    consumer = problems["rules/requirements/memory-inference.yaml"]
    assert consumer.code == "R101"
    assert "'kv_cache' facts come only from rules that can never fire (req.kv-cache)" in consumer.message


def test_unsatisfiable_only_judges_what_it_can_know():
    domains = {"task": frozenset({"lora", "qlora"}), "flag": frozenset({True})}

    def reason(text):
        return checks.unsatisfiable(gpukb.language.expr.parse(text).tree, "workload", domains.get)

    assert reason("task == 'lora' or task == 'x'") is None
    assert reason("task == 'x' or task == 'y'") is not None
    assert reason("task in ['x', 'lora']") is None
    assert "never any of 'x', 'y'" in reason("task in ['x', 'y']")
    assert reason("not flag") == "workload.flag is never false (it is one of true)"
    assert reason("params > 1e9 and other == 'anything'") is None  # unknown domains are satisfiable
    assert reason("task != 'lora'") is None


# --- R103: cycles --------------------------------------------------------------------------------

CYCLE_RULE = """\
id: bottleneck.echo
version: 1
stage: bottlenecks
title: Turns every remedy into a new capacity finding
when:
  - as: r
    kind: remedy
then:
  - kind: finding
    set: {finding: memory_capacity, severity: warning, gpu: ""}
    compute:
      value: r.effect_bytes
explain: A remedy was proposed.
"""


def test_R103_a_cycle_is_reported_naming_its_rules(checkout):
    (checkout / "rules/bottlenecks/echo.yaml").write_text(CYCLE_RULE, encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    (problem,) = checks.check_cycles(kb)
    assert problem.code == "R103" and problem.file == "rules/bottlenecks/echo.yaml"
    assert problem.message.startswith("rules chain in a cycle: bottleneck.echo (finding) → remedy.")
    assert " (remedy) → bottleneck.echo; the cycle's component also holds remedy." in problem.message
    named = {rid for rid in kb.rules if rid in problem.message}
    assert named >= {"bottleneck.echo", "remedy.lora", "remedy.qlora", "remedy.zero-sharding"}


def test_R103_no_cycle_when_the_literals_cannot_match(checkout):
    # the same loop, but the finding it asserts is 'thermal', which no remedy matches
    (checkout / "rules/bottlenecks/echo.yaml").write_text(
        CYCLE_RULE.replace("finding: memory_capacity", "finding: thermal"), encoding="utf-8")
    assert checks.check_cycles(gpukb.load_kb(checkout)) == []


# --- W101: claims nothing cites ------------------------------------------------------------------


def _claim_cited_once(kb) -> tuple[str, str]:
    policy_cited = {c for p in kb.policies.values() for c in p.claims}
    for claim_id in sorted(kb.claims):
        citing = [r.id for r in kb.rules.values() if claim_id in r.claims]
        if len(citing) == 1 and claim_id not in policy_cited:
            return claim_id, citing[0]
    raise AssertionError("no claim is cited by exactly one rule")


def test_W101_a_claim_nothing_cites_is_a_warning(checkout, kb):
    claim_id, rule_id = _claim_cited_once(kb)
    edit_entry(checkout, rule_id, lambda r: r.update(claims=[c for c in r["claims"] if c != claim_id]))
    problems = checks.check_uncited_claims(gpukb.load_kb(checkout))
    (problem,) = [p for p in problems if f"'{claim_id}'" in p.message]
    assert problem.code == "W101" and problem.is_warning and problem.file == "kb/claims/article.yaml"
    assert problem.message == f"claim '{claim_id}' is cited by no rule and no policy: no answer rests on it"

    # a warning does not fail lint; --strict makes it fail
    result = lint(checkout)
    assert any(p.code == "W101" and claim_id in p.message for p in result.warnings)
    assert result.failed() is bool(result.errors) and result.failed(strict=True)


# --- S101 / S102: sources ------------------------------------------------------------------------


def test_S101_a_source_without_an_address(checkout):
    # the loader already refuses it (E010) ...
    edit_entry(checkout, "nvidia-h100-datasheet", lambda s: s.update(url=None))
    with pytest.raises(KBError) as info:
        gpukb.load_kb(checkout)
    assert any("E010" in str(p) and "a source needs a url" in str(p) for p in info.value.problems)


def test_S101_check_on_a_source_that_lost_its_address(checkout):
    # ... and the lint check holds on its own, should a source ever load without one
    kb = gpukb.load_kb(checkout)
    kb.sources["nvidia-h100-datasheet"] = kb.sources["nvidia-h100-datasheet"].model_copy(update={"url": None, "path": None})
    (problem,) = [p for p in checks.check_sources(kb) if p.code == "S101"]
    assert problem.file == "kb/sources/hardware.yaml" and problem.field == "url"
    assert problem.message == ("source 'nvidia-h100-datasheet' has no address: give a url "
                               "(or a path for a local document)")


def test_S102_an_undated_source_needs_a_written_allowance(checkout):
    kb = gpukb.load_kb(checkout)
    allow, problems = checks.load_allowances(checkout)
    assert problems == []
    assert [p.code for p in checks.check_sources(kb, allow)] == []  # the article is allowed, with its reason
    assert any("allowed S102 for 'article': The article is an undated web page" in n for n in allow.notes())

    (checkout / "kb" / "lint.yaml").unlink()
    (problem,) = checks.check_sources(kb, checks.load_allowances(checkout)[0])
    assert problem.code == "S102" and problem.file == "kb/sources/article.yaml" and problem.field == "as_of"
    assert problem.message.startswith("source 'article' has no date: give as_of")


def test_allowances_are_checked_and_unused_ones_reported(checkout):
    (checkout / "kb" / "lint.yaml").write_text("""\
allow:
  - {code: S102, id: article, reason: The article is an undated web page.}
  - {code: S102, id: nvidia-h100-datasheet, reason: This source is dated and this matches nothing.}
  - {code: R102, id: remedy.lora, reason: Dead rules cannot be waved through.}
  - {code: S102, id: article, reason: The same allowance twice.}
""", encoding="utf-8")
    result = lint(checkout)
    found = _messages(p for p in result.problems if p.file == "kb/lint.yaml")
    assert "kb/lint.yaml:4:5: A101 allow.2.code: R102 cannot be allowed (only D102, S102, W101, Y101): fix it" in found
    assert "kb/lint.yaml:5:5: A101 allow.3: S102 for 'article' is allowed twice" in found
    assert "kb/lint.yaml:3:5: W102 allow: allowance S102 for 'nvidia-h100-datasheet' matches no problem: remove it" in found
    bad = checkout / "kb" / "lint.yaml"
    bad.write_text("allow:\n  - {code: S102, id: article}\n", encoding="utf-8")
    (problem,) = checks.load_allowances(checkout)[1]
    assert problem.code == "A101" and problem.field == "allow.0.reason"


# --- D101 / D102 / D103: deprecation -------------------------------------------------------------


def test_D101_successor_must_be_in_use(checkout):
    edit_entry(checkout, "a100-sxm-40gb", lambda g: g.update(status="deprecated", superseded_by="a100-sxm-80gb"))
    edit_entry(checkout, "a100-sxm-80gb", lambda g: g.update(status="deprecated", superseded_by="h100-sxm-80gb"))
    (problem,) = checks.check_deprecations(gpukb.load_kb(checkout), checks.load_allowances(checkout)[0])
    assert problem.code == "D101" and problem.file == "kb/gpus/a100-sxm-40gb.yaml" and problem.field == "superseded_by"
    assert problem.message == ("successor 'a100-sxm-80gb' is itself deprecated (it is superseded by 'h100-sxm-80gb'): "
                               "point to an entry in use")


def test_D101_successor_of_another_kind_is_refused_at_load(checkout):
    edit_entry(checkout, "remedy.lora", lambda r: r.update(status="deprecated", superseded_by="h100-sxm-80gb"))
    with pytest.raises(KBError) as info:
        gpukb.load_kb(checkout)
    assert any("E030 superseded_by: unknown rule id 'h100-sxm-80gb'" in str(p) for p in info.value.problems)


def test_D102_deprecated_without_successor_or_reason(checkout):
    edit_entry(checkout, "l4-24gb", lambda g: g.update(status="deprecated"))
    (problem,) = checks.check_deprecations(gpukb.load_kb(checkout), checks.load_allowances(checkout)[0])
    assert problem.code == "D102" and problem.file == "kb/gpus/l4-24gb.yaml" and problem.field == "status"
    assert "deprecated 'l4-24gb' names no successor: set superseded_by, or give the reason in kb/lint.yaml" in problem.message
    with (checkout / "kb" / "lint.yaml").open("a", encoding="utf-8") as f:
        f.write("  - {code: D102, id: l4-24gb, reason: Withdrawn by its vendor with no direct successor.}\n")
    allow, problems = checks.load_allowances(checkout)
    assert problems == [] and checks.check_deprecations(gpukb.load_kb(checkout), allow) == []


def test_D103_a_successor_on_an_entry_still_in_use(checkout):
    edit_entry(checkout, "a100-sxm-40gb", lambda g: g.update(superseded_by="a100-sxm-80gb"))
    (problem,) = checks.check_deprecations(gpukb.load_kb(checkout), checks.load_allowances(checkout)[0])
    assert problem.code == "D103"
    assert problem.message == ("'a100-sxm-40gb' names a successor but its status is stable: set status: deprecated, "
                               "or remove superseded_by")


# --- the known value domains agree with the facts the engine really asserts ----------------------


@pytest.mark.parametrize("workload", [
    {"model": "llama-2-7b", "task": "inference", "precision": "int4"},
    {"model": "llama-2-7b", "task": "full_finetune", "optimizer": "adamw_8bit", "activation_checkpointing": True},
    {"model": "llama-2-7b", "task": "lora", "activation_checkpointing": False, "precision": "fp16"},
    {"model": "llama-2-70b", "task": "qlora"},
    {"params": "7B", "layers": 32, "hidden_size": 4096, "heads": 32, "vocab_size": 32000, "task": "pretrain",
     "optimizer": "sgd", "zero_stage": 3, "offload": "optimizer", "gpus": ["rtx-4090-24gb"], "gpu_count": 8},
])
def test_engine_domains_hold_the_values_the_engine_asserts(kb, workload):
    domains = checks.engine_domains(kb)
    resolved, fields = resolve(kb, Workload.model_validate(workload))
    facts = {"workload": fields}
    facts["gpu"] = gpu_fact(kb, kb.gpus[resolved.gpus[0]], resolved.precision)
    for (kind, name), domain in domains.items():
        if kind in facts and name in facts[kind]:
            assert checks._contains(domain, facts[kind][name]), (kind, name, facts[kind][name])
    answer = kb.ask(workload)
    for option in answer.options + answer.rejected:
        assert option.strategy.offload in domains[("plan", "offload")]
        assert option.strategy.zero_stage in domains[("plan", "zero_stage")]


# --- output formats ------------------------------------------------------------------------------


def test_lint_output_formats_carry_severity(checkout, kb):
    claim_id, rule_id = _claim_cited_once(kb)
    edit_entry(checkout, rule_id, lambda r: r.update(claims=[c for c in r["claims"] if c != claim_id]))
    _replace(checkout / "rules/remedies/lora.yaml", "task == 'full_finetune'", "task == 'finetune'")
    text = runner.invoke(app, ["lint", str(checkout)])
    assert text.exit_code == 1
    line = next(x for x in text.output.splitlines() if " R102 " in x)
    assert line.startswith("rules/remedies/lora.yaml:") and "workload.task is never 'finetune'" in line
    assert any(f"W101 id: claim '{claim_id}'" in x for x in text.output.splitlines())

    github = runner.invoke(app, ["lint", str(checkout), "--format", "github"]).output.splitlines()
    assert github[0].startswith("::error file=rules/remedies/lora.yaml,line=")
    assert any(x.startswith("::warning file=kb/claims/article.yaml,") and "title=W101::" in x for x in github)

    rows = json.loads(runner.invoke(app, ["lint", str(checkout), "--format", "json"]).output)
    by_code = {r["code"]: r for r in rows}
    assert by_code["R102"]["severity"] == "error" and by_code["W101"]["severity"] == "warning"
    assert {"file", "line", "column", "code", "message", "field"} <= set(by_code["R102"])


def test_warnings_alone_pass_unless_strict(checkout, kb):
    claim_id, rule_id = _claim_cited_once(kb)
    edit_entry(checkout, rule_id, lambda r: r.update(claims=[c for c in r["claims"] if c != claim_id]))
    result = runner.invoke(app, ["lint", str(checkout)])
    assert result.exit_code == 0 and result.output.startswith("ok:") and "warning(s)" in result.output
    assert runner.invoke(app, ["lint", str(checkout), "--strict"]).exit_code == 1
