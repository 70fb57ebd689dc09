"""Workload values at the edge of what the math allows: an answer or an error naming the field, quickly."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from cpu_budget import within_cpu_seconds

from gpukb import WorkloadError
from gpukb.answer.workload import MAX_GPU_IDS

MIXTRAL = Path(__file__).resolve().parents[1] / "fixtures/hf/mixtral-8x7b-v0.1/config.json"


@pytest.fixture()
def every_expert(tmp_path: Path) -> Path:
    """Mixtral's config.json with each token routed to all 8 experts: a dense-like mixture of experts."""
    config = json.loads(MIXTRAL.read_text(encoding="utf-8"))
    config["num_experts_per_tok"] = config["num_local_experts"]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("task", ["inference", "full_finetune", "lora"])
def test_a_model_whose_tokens_run_every_expert_is_answered(kb, every_expert, task):
    with within_cpu_seconds(2.0, task):
        answer = kb.ask({"model": str(every_expert), "task": task, "gpus": ["h100-sxm-80gb", "a100-sxm-80gb"]})
    assert answer.options
    assert answer.workload.active_params == answer.workload.params  # every expert is active


def test_decoding_with_every_expert_reads_them_all(kb, every_expert):
    """E·(1-(1-k/E)^batch) with k = E is E: the decode step reads every expert (top-2 reads fewer, so is faster)."""
    workload = {"task": "inference", "gpus": ["h100-sxm-80gb"]}
    answer = kb.ask({**workload, "model": str(every_expert)})
    step = next(s for s in answer.trace if s.rule.startswith("rec.throughput.decode@"))
    assert next(v["value"] for v in step.values if v["name"] == "touched") == 8
    top2 = kb.ask({**workload, "model": str(MIXTRAL)}).options[0]
    assert answer.options[0].tpot_s > top2.tpot_s


@pytest.mark.parametrize("gpus", [itertools.repeat("h100-sxm-80gb"), itertools.count(), ["h100-sxm-80gb"] * (MAX_GPU_IDS + 1)],
                         ids=["endless-repeat", "endless-count", "one-too-many"])
def test_an_endless_or_huge_gpus_is_a_workload_error_naming_gpus(kb, gpus):
    refused = pytest.raises(WorkloadError, match=f"more than {MAX_GPU_IDS:,} GPU ids")
    with within_cpu_seconds(2.0, "validation"), refused as caught:
        kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": gpus})
    assert caught.value.field == "gpus"


def test_gpus_is_read_lazily_up_to_one_past_the_bound(kb):
    read = []

    def ids():
        for n in itertools.count():
            read.append(n)
            yield "h100-sxm-80gb"

    with pytest.raises(WorkloadError):
        kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ids()})
    assert len(read) == MAX_GPU_IDS + 1


def test_any_iterable_of_ids_is_read_as_a_list(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": iter(("h100-sxm-80gb", "a100-sxm-80gb"))})
    assert {o.gpu for o in answer.options} | {r.gpu for r in answer.rejected} == {"h100-sxm-80gb", "a100-sxm-80gb"}
