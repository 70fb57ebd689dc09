"""One model, one answer: a catalog model and its own config.json give the same memory and speed.

The catalog entries are written by hand from the configs their sources cite; the config reader
(gpukb.knowledge.hfconfig) reads the same files by code. Sliding windows, tied embeddings and RoPE scaling
must come out the same both ways, or one model gets two answers (mistral-7b's KV cache at 32k x 8
was 34.4 GB from the catalog and 4.3 GB from its config.json). Which fixture is which catalog model
follows from the fixtures' README (the Hub address of each) and the catalog's `hf_repo`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gpukb
from gpukb.knowledge.hfconfig import load_model

HF = Path(__file__).parent / "fixtures" / "hf"
_ROW = re.compile(r"^\| `([^`]+)` \| https://huggingface\.co/([^/\s]+/[^/\s]+)/blob/main/config\.json \|$", re.M)
PUBLISHED_AT = dict(_ROW.findall((HF / "README.md").read_text(encoding="utf-8")))  # folder -> Hub repository
FIGURES = ("gpu", "count", "fits", "per_gpu_bytes", "usable_bytes", "memory", "strategy", "tokens_per_s",
           "time_to_train_s", "efficiency", "mfu", "ttft_s", "tpot_s", "max_concurrency", "max_context",
           "usd_per_hour", "cost_usd", "usd_per_million_tokens")


def test_every_fixture_says_where_it_was_published():
    assert sorted(PUBLISHED_AT) == sorted(p.name for p in HF.iterdir() if p.is_dir())


def _pairs() -> list[tuple[str, str]]:
    by_repo = {m.hf_repo: m.id for m in gpukb.load_kb().models.values() if m.hf_repo}
    return sorted((folder, by_repo[repo]) for folder, repo in PUBLISHED_AT.items() if repo in by_repo)


PAIRS = _pairs()


def test_the_catalog_models_with_a_config_are_found():
    # the four without a catalog entry are DeepSeek-V2-Lite, DeepSeek-V3, Pythia 1.4B and Qwen3 4B AWQ (a
    # quantized checkpoint's config)
    assert len(PAIRS) == len(PUBLISHED_AT) - 4 >= 8


def _figures(answer) -> tuple:
    options = sorted((*answer.options, *answer.rejected), key=lambda o: o.gpu)
    return answer.memory, [tuple(getattr(o, name) for name in FIGURES) for o in options]


@pytest.mark.parametrize(("folder", "model_id"), PAIRS)
@pytest.mark.parametrize("task", ["inference", "lora", "full_finetune"])
def test_catalog_entry_and_config_give_one_answer(kb, folder, model_id, task):
    model = kb.models[model_id]
    workload = {"task": task, "seq_len": min(32768, model.context_length), "batch_size": 8} if task == "inference" \
        else {"task": task, "seq_len": min(4096, model.context_length), "tokens": "10B"}
    catalog = kb.ask({"model": model_id, **workload})
    config = kb.ask({"model": str(HF / folder / "config.json"), **workload})
    assert config.workload.config_file and not catalog.workload.config_file
    assert _figures(catalog) == _figures(config)


@pytest.mark.parametrize(("folder", "model_id"), PAIRS)
def test_catalog_entry_is_its_config_field_by_field(kb, folder, model_id):
    """Every architecture field, windows, tied embeddings and the RoPE-scaled context included."""
    about = {"id", "version", "status", "superseded_by", "name", "sources", "notes", "hf_repo"}
    assert load_model(HF / folder).model_dump(exclude=about) == kb.models[model_id].model_dump(exclude=about)
