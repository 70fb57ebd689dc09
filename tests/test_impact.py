"""`gpukb impact`: a deliberate change in a temporary git repository, and the Markdown it yields."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.impact import ImpactError, compare, impact_report, load_scenarios, scenario_file
from kbfiles import REPO, edit_entry, make_repo

SCENARIOS = Path(__file__).resolve().parent / "data" / "scenarios.yaml"
runner = CliRunner()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", scenarios=SCENARIOS)


def _triple_optimizer_states(rule: dict) -> None:
    compute = rule["then"][0]["compute"]
    compute["optimizer"] = f"({compute['optimizer']}) * 3"
    rule["version"] += 1


def test_a_rule_change_names_the_new_count_and_the_rule_responsible(repo):
    workload = {"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]}
    before = gpukb.load_kb(repo).ask(workload).best
    edit_entry(repo, "req.memory.full-training", _triple_optimizer_states)
    after = gpukb.load_kb(repo).ask(workload).best
    assert before is not None and after is not None and after.count > before.count

    text = impact_report(repo, "HEAD")  # scenarios from site/scenarios.yaml
    assert text.startswith("## gpukb impact report\n")
    old = gpukb.load_kb(REPO).rules["req.memory.full-training"].version
    assert f"rules:req.memory.full-training v{old}→v{old + 1}: then" in text
    assert "calls for a **minor** bump of the KB version" in text
    # the other two answers change only in their error bands: the memory points that draw them are predicted anew
    assert "**3 of 3 scenarios change.**" in text
    section = text.split("### Full fine-tuning of a 7B model on H100s (`full-finetune-7b-h100`)")[1].split("###")[0]
    assert (f"- **Best option:** {before.count} × h100-sxm-80gb → **{after.count} × h100-sxm-80gb**"
            in section)
    assert "- Memory for one replica: " in section
    assert f"`req.memory.full-training@{old + 1}` (**changed here**, was v{old})" in section
    assert "recomputed from changed inputs: " in section and "`planner.fewest-gpus@1`" in section
    assert "| Full fine-tuning of a 7B model on H100s | " in text  # the summary table
    serving = text.split("### Serving a 7B model on an H100 (`inference-7b-h100`)")[1].split("###")[0]
    assert "- Error bands:" in serving and "`per_gpu_bytes`:" in serving and "Best option" not in serving


def test_a_policy_change_shows_counts_and_rejections(repo):
    workload = {"model": "llama-2-13b", "task": "lora", "gpus": ["rtx-4090-24gb", "l40s-48gb"], "gpu_count": 1,
                "offload": "none"}
    before = gpukb.load_kb(repo).ask(workload)
    # half of every card kept free, at the edge too (a plan the reserve refuses would otherwise run at the edge)
    for policy in ("reserve-fraction", "edge-reserve-fraction"):
        edit_entry(repo, policy, lambda p: p.update(value=0.5, version=p["version"] + 1))
    after = gpukb.load_kb(repo).ask(workload)
    fitted = {o.gpu for o in before.options} - {o.gpu for o in after.options}
    assert fitted, "a 50% reserve should push a GPU out"

    result = runner.invoke(app, ["impact", "--base", "HEAD", "--root", str(repo), "--scenarios", str(SCENARIOS),
                                 "--output", str(repo / "impact.md")])
    assert result.exit_code == 0, result.output
    text = (repo / "impact.md").read_text(encoding="utf-8")
    assert text == result.output
    v = gpukb.load_kb(repo).policies["reserve-fraction"].version
    assert f"policies:reserve-fraction v{v - 1}→v{v}: value" in text
    assert "- Changed entries it reads: `policies:edge-reserve-fraction`, `policies:reserve-fraction`" in text
    section = text.split("(`lora-13b-consumer`)")[1]
    assert "- Now rejected:" in section
    for gpu in sorted(fitted):
        assert f"  - {gpu} — " in section
    assert "[bottleneck.capacity.no-fit@" in section  # the rule that rejects it, with its version


def test_no_change_says_so(repo):
    text = impact_report(repo, "HEAD", SCENARIOS)
    assert "kb/ and rules/ are unchanged." in text and "**No answer changes** in 3 scenarios." in text


def test_scenarios_come_from_the_site_then_the_repository_root(tmp_path):
    with pytest.raises(ImpactError, match="no scenarios"):
        scenario_file(tmp_path)
    (tmp_path / "scenarios.yaml").write_text("- {id: a, title: A, workload: {model: llama-2-7b, task: lora}}\n")
    assert scenario_file(tmp_path) == tmp_path / "scenarios.yaml"
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "scenarios.yaml").write_text(SCENARIOS.read_text())
    assert scenario_file(tmp_path) == tmp_path / "site" / "scenarios.yaml"
    (tmp_path / "bad.yaml").write_text("- {id: a}\n")
    with pytest.raises(ImpactError, match="scenario 1"):
        load_scenarios(tmp_path / "bad.yaml")


def test_the_site_scenarios_load_and_answer(kb):
    path = REPO / "site" / "scenarios.yaml"
    scenarios = load_scenarios(path)
    assert scenarios and len({s.id for s in scenarios}) == len(scenarios)
    for s in scenarios:
        assert kb.ask(s.workload).best is not None, s.id


def test_compare_reports_a_workload_that_stops_working(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "lora"})
    lines = compare(answer, "WorkloadError: model: unknown model 'llama-2-7b'").lines
    assert lines == [f"Answered before (best option {answer.best.count} × {answer.best.gpu}); "
                     "now fails: WorkloadError: model: unknown model 'llama-2-7b'"]
    assert compare(answer, answer).lines == []


def test_impact_outside_git_is_a_clear_error(checkout):
    (checkout / "scenarios.yaml").write_text(SCENARIOS.read_text())
    result = runner.invoke(app, ["impact", "--base", "HEAD", "--root", str(checkout)])
    assert result.exit_code == 2 and "is not inside a git repository" in result.output
