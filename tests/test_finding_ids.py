"""Finding ids: `gpukb list gpus|models`, did-you-mean for every unknown id, ids in any case, and a
catalog model named by its Hugging Face repository, resolved offline."""

from __future__ import annotations

import json
import sys

import pytest
from typer.testing import CliRunner

from gpukb.cli import app
from gpukb.core.errors import WorkloadError
from gpukb.core.ids import catalog_id, did_you_mean

runner = CliRunner()
H100S = ("h100-sxm-80gb", "h100-pcie-80gb", "h100-nvl-94gb")


def test_list_gpus_shows_every_catalog_gpu_with_its_figures(kb):
    result = runner.invoke(app, ["list", "gpus"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    listed = {line.split()[0] for line in result.stdout.splitlines()[4:] if line.strip()}  # after title, header
    assert listed == {g for g, gpu in kb.gpus.items() if gpu.status != "deprecated"}
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("h100-sxm-80gb "))
    # the name, 80 GB, 3.35 TB/s, 989 dense BF16 TFLOPS, $/GPU-hour
    h100 = kb.gpus["h100-sxm-80gb"]
    assert h100.name in row and "80.0 GB" in row and "3.35 TB/s" in row and " 989 " in row
    assert f"{h100.cloud_price.usd_per_gpu_hour:,.2f}" in row


@pytest.mark.parametrize("what", ["gpus", "models", "systems"])
def test_a_list_narrower_than_its_table_gives_each_entry_its_id_line_then_its_figures(kb, what):
    """In 80 columns the tables do not fit: each id stands whole on a line of its own, its figures below it,
    wrapped under their indent; nothing is wider than the terminal."""
    result = runner.invoke(app, ["list", what], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(map(len, lines)) <= 80
    ids = [line for line in lines if line and not line.startswith(" ")][1:]  # after the title
    catalog = {"gpus": kb.gpus, "models": kb.models, "systems": kb.systems}[what]
    assert ids == sorted(i for i, entry in catalog.items() if entry.status != "deprecated")
    after = lines[lines.index("h100-sxm-80gb" if what == "gpus" else ids[0]) + 1]
    assert after.startswith("  ") and ": " in after and " · " in after


def test_list_gpus_as_json_carries_si_numbers(kb):
    result = runner.invoke(app, ["list", "gpus", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["id"]: r for r in json.loads(result.stdout)}
    h100, rtx = rows["h100-sxm-80gb"], rows["rtx-4090-24gb"]
    assert (h100["memory_bytes"], h100["memory_bandwidth"], h100["bf16_flops"]) == (
        80e9, kb.gpus["h100-sxm-80gb"].memory_bandwidth, kb.gpus["h100-sxm-80gb"].bf16_flops)
    assert rtx["price_usd"] == kb.gpus["rtx-4090-24gb"].price.usd and h100["price_usd"] is None


def test_list_models_shows_params_layers_context_and_repository(kb):
    result = runner.invoke(app, ["list", "models"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if line.strip().startswith("mixtral-8x7b "))
    assert "12.9B of 46.7B" in row and " 32 " in row and "32,768" in row and "mistralai/Mixtral-8x7B-v0.1" in row
    rows = json.loads(runner.invoke(app, ["list", "models", "--json"]).stdout)
    assert [r["id"] for r in rows] == sorted(m for m, model in kb.models.items() if model.status != "deprecated")
    llama = next(r for r in rows if r["id"] == "llama-3.1-8b")
    assert llama == {"id": "llama-3.1-8b", "name": kb.models["llama-3.1-8b"].name, "params": 8_030_261_248,
                     "active_params": None, "layers": 32, "context_length": 131_072, "hf_repo": "meta-llama/Llama-3.1-8B"}


def test_an_unknown_gpu_suggests_its_variants(kb):
    with pytest.raises(WorkloadError) as raised:
        kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["a100-sxm-80gb", "h100"]})
    assert raised.value.field == "gpus.1"
    assert all(g in str(raised.value).partition("did you mean")[2] for g in H100S)
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "lora", "--gpu", "h100"])
    assert result.exit_code == 2 and "did you mean h100-" in result.output and "Traceback" not in result.output


def test_an_unknown_model_suggests_near_ids(kb):
    with pytest.raises(WorkloadError, match=r"^model: unknown model 'mixtral'; did you mean mixtral-8x7b, mixtral-8x22b"):
        kb.ask({"model": "mixtral", "task": "inference"})
    with pytest.raises(WorkloadError, match=r"did you mean llama-3\.1-8b\b"):
        kb.ask({"model": "llama31-8b", "task": "inference"})


def test_ids_are_matched_ignoring_case(kb):
    lower = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb", "a100-sxm-80gb"]})
    upper = kb.ask({"model": "Llama-2-7B", "task": "lora", "gpus": ["H100-SXM-80GB", "A100-sxm-80gb"]})
    assert (upper.workload.model, upper.workload.gpus) == ("llama-2-7b", ("h100-sxm-80gb", "a100-sxm-80gb"))
    assert upper.memory == lower.memory and upper.options == lower.options
    with pytest.raises(WorkloadError, match=r"gpus\.1: 'h100-sxm-80gb' is listed 2 times"):
        kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb", "H100-SXM-80GB"]})


def test_explain_takes_ids_in_any_case():
    result = runner.invoke(app, ["explain", "H100-SXM-80GB", "Req.KV-Cache"])
    assert result.exit_code == 0, result.output
    assert "gpu h100-sxm-80gb" in result.output and "rule req.kv-cache" in result.output


@pytest.mark.parametrize("repo", ["meta-llama/Llama-3.1-8B", "META-LLAMA/llama-3.1-8b"])
def test_a_hugging_face_repository_names_its_catalog_model_offline(kb, monkeypatch, repo):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # any download would fail
    answer = kb.ask({"model": repo, "task": "inference", "gpus": ["h100-sxm-80gb"]})
    catalog = kb.ask({"model": "llama-3.1-8b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert (answer.workload.model, answer.workload.config_file) == ("llama-3.1-8b", None)
    assert answer.memory == catalog.memory and answer.options == catalog.options


def test_a_repository_outside_the_catalog_says_what_to_do(kb):
    with pytest.raises(WorkloadError) as raised:
        kb.ask({"model": "meta-llama/Llama-3-8B", "task": "inference"})  # Meta-Llama-3-8B is its name
    message = str(raised.value)
    assert raised.value.field == "model"
    assert "did you mean" in message and "meta-llama/Meta-Llama-3-8B (llama-3-8b)" in message
    assert "hf:meta-llama/Llama-3-8B" in message and "cannot read it" not in message
    result = runner.invoke(app, ["ask", "--model", "someone/some-model", "--task", "inference"])
    assert result.exit_code == 2 and "hf:someone/some-model" in result.output


def test_every_catalog_model_on_the_hub_names_its_repository_from_its_cited_config(kb):
    """hf_repo is the repository of the config.json the entry cites, and every entry citing one has it."""
    for model_id, model in kb.models.items():
        hub = {str(kb.sources[s].url).removeprefix("https://huggingface.co/").split("/blob/")[0]
               for s in model.sources if str(kb.sources[s].url).startswith("https://huggingface.co/")
               and kb.sources[s].kind == "model_config"}
        assert hub == ({model.hf_repo} if model.hf_repo else set()), model_id
    assert sum(1 for m in kb.models.values() if m.hf_repo) >= len(kb.models) - 1  # GPT-3 has no public weights


def test_id_helpers():
    assert catalog_id("H100-SXM-80GB", {"h100-sxm-80gb"}) == "h100-sxm-80gb"
    assert catalog_id("h100", {"h100-sxm-80gb"}) is None
    assert did_you_mean("h100", ["a100-sxm-80gb", *H100S]) == f"; did you mean {', '.join(sorted(H100S, key=len))}?"
    assert did_you_mean("x" * 101, ["x" * 101]) == ""
