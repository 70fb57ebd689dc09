"""A knowledge base's own asks (claim figures, measurement workloads) from a hostile pull request: they name
only catalog models or config files inside the checkout, they are capped in number, and any failure is a
located lint error, never a crash, a download or a run of minutes. Lint runs in a child with a time limit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from child import run_child

import gpukb
from gpukb.contrib import figures
from gpukb.contrib.checks import check_figures, check_measurements
from kbfiles import edit_entry, entry_file

REPO = Path(__file__).resolve().parents[2]
CLAIM = "art.capacity.13b-30b-80gb"  # quotes the figures lora13, q405 and lora13_4090
MEASUREMENT = "torchtune-2024-llama-3.1-8b-qlora-rtx4090"
CONFIG = REPO / "tests" / "fixtures" / "hf" / "llama-2-7b" / "config.json"
CLI = ["-c", "from gpukb.cli.main import app; app()"]
LIMIT = 60  # seconds for a whole gpukb process


def _model(ref: str):
    return lambda e: e["figures"]["lora13"]["ask"].update(model=ref)


@pytest.fixture()
def outside_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model config outside the checkout (which is the test's own tmp_path)."""
    path = tmp_path_factory.mktemp("outside") / "config.json"
    shutil.copy(CONFIG, path)
    return path


@pytest.mark.parametrize(("ref", "says"), [
    ("hf:meta-llama/Llama-2-7b-hf", "downloaded from the Hugging Face Hub"),
    ("{outside}", "not a path relative to the checkout"),
    ("~/config.json", "not a path relative to the checkout"),
    ("../outside/config.json", "steps out of its folder with '..'"),
    ("kb/linked/config.json", "leads out of the checkout"),
])
def test_a_figure_naming_a_model_outside_the_checkout_is_a_located_error(checkout: Path, outside_config: Path,
                                                                        ref: str, says: str) -> None:
    (checkout / "kb" / "linked").symlink_to(outside_config.parent)
    edit_entry(checkout, CLAIM, _model(ref.format(outside=outside_config)))
    kb = gpukb.load_kb(checkout)
    problems = [p for p in check_figures(kb) if p.code == "F101"]
    assert len(problems) == 1 and says in problems[0].message, problems
    assert problems[0].file.endswith("kb/claims/article.yaml") and problems[0].field == "figures.lora13"
    assert "huggingface_hub" not in sys.modules  # nothing was downloaded, nor the downloader imported


def test_a_figure_may_name_a_config_inside_the_checkout(checkout: Path) -> None:
    (checkout / "models" / "llama-2-7b").mkdir(parents=True)
    shutil.copy(CONFIG, checkout / "models" / "llama-2-7b" / "config.json")
    edit_entry(checkout, CLAIM, _model("models/llama-2-7b/config.json"))
    kb = gpukb.load_kb(checkout)
    assert check_figures(kb) == []
    lora7 = gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]}).options[0]
    assert figures.values(kb, kb.claims[CLAIM].figures["lora13"])["count"] == lora7.count
    # and the checkout's own path wherever gpukb runs: the same figure from another working directory
    done = run_child(["-c", "import sys, gpukb\nfrom gpukb.contrib.checks import check_figures\n"
                            "print(len(check_figures(gpukb.load_kb(sys.argv[1]))))", str(checkout)],
                     Path("/"), cpu_seconds=20)
    assert done.stdout.strip() == "0", done.stderr


def test_a_catalog_models_repository_stays_offline(checkout: Path) -> None:
    edit_entry(checkout, CLAIM, _model("meta-llama/Llama-2-13b-hf"))
    assert check_figures(gpukb.load_kb(checkout)) == []


@pytest.mark.parametrize(("ref", "says"), [
    ("hf:meta-llama/Llama-3.1-8B", "downloaded from the Hugging Face Hub"),
    ("/etc/config.json", "not a path relative to the checkout"),
])
def test_a_measurement_naming_a_model_outside_the_checkout_is_m001(checkout: Path, ref: str, says: str) -> None:
    edit_entry(checkout, MEASUREMENT, lambda e: e["workload"].update(model=ref))
    kb = gpukb.load_kb(checkout)
    problems = [p for p in check_measurements(kb) if p.code == "M001"]
    assert len(problems) == 1 and says in problems[0].message and problems[0].field == "workload.model", problems
    (point,) = [p for p in gpukb.estimate.validation.validate(kb).points if p.id == MEASUREMENT]
    assert point.predicted is None and says in point.reason  # validate and the bands skip it, offline
    assert "huggingface_hub" not in sys.modules


def test_any_exception_of_a_figure_is_a_located_error_in_lint_explain_and_the_site(checkout: Path) -> None:
    edit_entry(checkout, CLAIM, lambda e: e["figures"]["lora13"]["ask"].update(
        task="pretrain", tokens="1T", deadline_days=1e-310))
    kb = gpukb.load_kb(checkout)
    problems = [p for p in check_figures(kb) if p.code == "F101"]
    assert len(problems) == 1 and "its ask fails" in problems[0].message and problems[0].field == "figures.lora13"
    assert figures.shown(kb, kb.claims[CLAIM]) == kb.claims[CLAIM].reason  # a page shows the reason as written
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUKB_")} | {"GPUKB_NO_CACHE": "1"}
    for args in (["lint", str(checkout), "--format", "json"], ["explain", CLAIM, "--root", str(checkout)]):
        done = subprocess.run([sys.executable, *CLI, *args], capture_output=True, text=True, timeout=LIMIT, env=env)
        assert "Traceback" not in done.stderr, done.stderr
        if args[0] == "lint":
            found = [p for p in json.loads(done.stdout) if p["code"] == "F101"]
            assert len(found) == 1 and found[0]["line"] > 1
        else:
            assert done.returncode == 0 and "Llama" in done.stdout


def _rl_figures(count: int, offset: int) -> dict[str, dict[str, object]]:
    """`count` distinct RL figures (each a new prompt length, so no answer is reused)."""
    return {f"rl{i}": {"ask": {"model": "qwen3-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8,
                               "prompt_len": 256 + offset + i, "response_len": 512, "gpus": ["h100-sxm-80gb"]}}
            for i in range(count)}


def test_three_files_of_900_rl_figures_are_capped_and_lint_ends(checkout: Path) -> None:
    path, index = entry_file(checkout, CLAIM)
    claim = yaml.safe_load(path.read_text(encoding="utf-8"))[index]
    for n in range(3):
        copy = {**claim, "id": f"art.flood-{n}", "figures": _rl_figures(900, 1000 * n)}
        (checkout / "kb" / "claims" / f"flood-{n}.yaml").write_text(
            yaml.safe_dump([copy], sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    kb = gpukb.load_kb(checkout)
    per_file, total = kb.policy(figures.PER_FILE_POLICY), kb.policy(figures.TOTAL_POLICY)
    capped = figures.over_caps(kb)
    packaged = sum(len(c.figures) for c in kb.claims.values()) - 3 * 900  # kb/claims/article.yaml's, counted first
    assert packaged < per_file <= total
    assert len(capped) == packaged + 3 * 900 - total  # only `total` figures are ever asked
    assert sum(1 for claim_id, _ in capped if claim_id == "art.flood-0") == 900 - (total - packaged)
    done = run_child(["-c", "import sys, json, gpukb\nfrom gpukb.contrib.checks import check_figures\n"
                            "print(json.dumps([[p.code, p.file, p.field] for p in check_figures("
                            "gpukb.load_kb(sys.argv[1]))]))", str(checkout)], checkout, cpu_seconds=40)
    assert done.returncode == 0, done.stderr
    problems = json.loads(done.stdout)
    assert {(code, Path(file).name) for code, file, _ in problems} == {
        ("F102", "flood-0.yaml"), ("F102", "flood-1.yaml"), ("F102", "flood-2.yaml")}
