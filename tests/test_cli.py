import json

from typer.testing import CliRunner

import gpukb
from gpukb.cli import app

runner = CliRunner()


def test_ask_prints_tables_for_the_readme_example():
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "full_finetune"])
    assert result.exit_code == 0, result.output
    for text in ("One replica, before sharding", "Options, most tokens/s per GPU first", "h100-sxm-80gb", "141.3 GB"):
        assert text in result.output
    result = runner.invoke(app, ["ask", "--model", "llama-2-13b", "--task", "full_finetune", "--gpu", "rtx-4090-24gb",
                                 "--gpu-count", "1", "--seq-len", "32768"])
    assert result.exit_code == 3, result.output  # nothing fits
    for text in ("nothing fits", "Rejected", "rtx-4090-24gb", "Findings", "Remedies", "LoRA instead of full fine-tuning"):
        assert text in result.output


def test_ask_json_is_the_answer():
    result = runner.invoke(app, ["ask", "--model", "llama-3-8b", "--task", "inference", "--gpu", "l4-24gb",
                                 "--batch-size", "4", "--json", "--trace"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["workload"]["batch_size"] == 4 and data["options"][0]["gpu"] == "l4-24gb"
    rule_id, _, version = data["trace"][0]["rule"].partition("@")
    assert int(version) == gpukb.load_kb().rules[rule_id].version


def test_ask_explain_shows_the_chain_and_claims():
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "inference", "--gpu", "h100-sxm-80gb",
                                 "--explain"])
    assert result.exit_code == 0
    kv_cache = gpukb.load_kb().rules["req.kv-cache"]
    assert f"req.kv-cache@{kv_cache.version}" in result.output and "art.kv.quadratic [contradicted]" in result.output


def test_bad_input_is_one_clear_line_and_exit_2():
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "inference", "--optimizer", "adamw"])
    assert result.exit_code == 2
    assert "error: optimizer: not used for inference" in result.output
    assert "Traceback" not in result.output


def test_expert_parallelism_is_a_flag_and_shows_in_the_strategy():
    result = runner.invoke(app, ["ask", "--model", "mixtral-8x7b", "--task", "full_finetune", "--expert-parallel", "8",
                                 "--gpu", "h100-sxm-80gb"])
    assert result.exit_code == 0, result.output
    assert "ep8" in result.output
    refused = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "full_finetune", "--expert-parallel", "2"])
    assert refused.exit_code == 2 and "expert_parallel" in refused.output and "Traceback" not in refused.output


def test_tensor_parallel_overlap_is_a_flag_kept_in_the_answer():
    args = ["ask", "--model", "llama-2-13b", "--task", "pretrain", "--gpu", "h100-sxm-80gb", "--gpu-count", "8",
            "--placement", "all", "--tensor-parallel", "8"]
    overlapped = runner.invoke(app, [*args, "--tp-comm-overlap", "--json"])
    assert overlapped.exit_code == 0, overlapped.output
    assert json.loads(overlapped.output)["workload"]["tp_comm_overlap"] is True
    assert "tp_comm_overlap" not in json.loads(runner.invoke(app, [*args, "--json"]).output)["workload"]
    refused = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "inference", "--tp-comm-overlap"])
    assert refused.exit_code == 2 and "tp_comm_overlap" in refused.output and "Traceback" not in refused.output


def test_explain_rule_claim_and_gpu():
    rule = runner.invoke(app, ["explain", "req.kv-cache"])
    assert rule.exit_code == 0 and "rules/requirements/kv-cache.yaml:2" in rule.output and "tests:" in rule.output
    claim = runner.invoke(app, ["explain", "art.kv.quadratic"])
    assert "verdict: contradicted" in claim.output and "cited by rules: " in claim.output
    gpu = runner.invoke(app, ["explain", "h100-sxm-80gb"])
    assert "80.0 GB HBM3 at 3.35 TB/s" in gpu.output and "nvidia-h100-datasheet" in gpu.output
    missing = runner.invoke(app, ["explain", "nope"])
    assert missing.exit_code == 2


def test_lint_passes_on_the_repository():
    result = runner.invoke(app, ["lint"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("ok:")


def test_lint_reports_file_line_and_exits_1(checkout):
    path = checkout / "rules/requirements/kv-cache.yaml"
    path.write_text(path.read_text().replace("values: {per_token: 524288, bytes: 2147483648}",
                                             "values: {per_token: 999, bytes: 2147483648}"))
    result = runner.invoke(app, ["lint", str(checkout)])
    assert result.exit_code == 1
    (line,) = [x for x in result.output.splitlines() if "T001" in x]
    assert line.startswith("rules/requirements/kv-cache.yaml:")
    assert "per_token = 524,288, expected 999" in line
    github = runner.invoke(app, ["lint", str(checkout), "--format", "github"])
    assert github.output.startswith("::error file=rules/requirements/kv-cache.yaml,line=")


def test_schema_is_in_sync():
    result = runner.invoke(app, ["schema", "--check"])
    assert result.exit_code == 0, result.output


def test_every_lint_format_has_its_reporter():
    from gpukb.cli.common import Format
    from gpukb.contrib.reporters import REPORTERS

    assert [f.value for f in Format] == list(REPORTERS)


def test_pure_bf16_and_optimizer_in_backward_are_flags_kept_in_the_answer():
    args = ["ask", "--model", "llama-3-8b", "--task", "full_finetune", "--gpu", "rtx-a6000-48gb", "--json"]
    answer = json.loads(runner.invoke(app, [*args, "--no-master-weights", "--optimizer-in-backward"]).output)
    assert answer["workload"]["master_weights"] is False and answer["workload"]["optimizer_in_backward"] is True
    plain = json.loads(runner.invoke(app, args).output)["workload"]
    assert "master_weights" not in plain and "optimizer_in_backward" not in plain


def test_virtual_pipeline_stages_is_an_option_checked_against_the_layers():
    args = ["ask", "--model", "llama-2-13b", "--task", "pretrain", "--gpu", "h100-sxm-80gb", "--gpu-count", "16",
            "--pipeline-parallel", "4", "--json"]
    answer = json.loads(runner.invoke(app, [*args, "--virtual-pipeline-stages", "2"]).output)
    assert answer["workload"]["virtual_pipeline_stages"] == 2
    refused = runner.invoke(app, [*args, "--virtual-pipeline-stages", "3"])
    assert refused.exit_code == 2 and "virtual_pipeline_stages" in refused.output and "Traceback" not in refused.output


def test_context_parallel_is_an_option_shown_in_the_strategy():
    result = runner.invoke(app, ["ask", "--model", "llama-3-8b", "--task", "pretrain", "--seq-len", "32768",
                                 "--gpu", "h100-sxm-80gb", "--gpu-count", "16", "--context-parallel", "4"])
    assert result.exit_code == 0, result.output
    assert "cp4" in result.output


def test_each_command_is_a_small_module_of_its_own():
    from pathlib import Path

    import gpukb.cli

    folder = Path(gpukb.cli.__file__).parent
    sizes = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in folder.glob("*.py")}
    assert {"common.py", "ask.py", "sweep.py", "explain.py", "catalog.py", "lint.py", "impact.py", "validate.py",
            "probe.py", "schema.py"} <= set(sizes)
    too_long = {name: n for name, n in sizes.items() if n > 250}
    assert not too_long, f"modules of src/gpukb/cli over 250 lines: {too_long}"
    names = {command.name or command.callback.__name__ for command in app.registered_commands}
    assert names == {"ask", "sweep", "explain", "list", "lint", "impact", "validate", "probe", "schema"}


def test_python_m_gpukb_cli_is_the_command():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-m", "gpukb.cli", "list", "models", "--json"], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert any(row["id"] == "llama-2-7b" for row in json.loads(result.stdout))
