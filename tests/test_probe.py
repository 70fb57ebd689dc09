"""`gpukb probe` on the CPU with tiny shapes: predicted against measured, the entries it writes, and the
runs it refuses. CI installs the `probe` extra; elsewhere the file is skipped only without PyTorch."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.knowledge.schema import Measurement, Source
from gpukb.probe.probe import ProbeError, local_gpu, plan, predict, probe_params

if not os.environ.get("CI"):
    pytest.importorskip("torch")
import torch  # CI must have it: a missing extra fails here rather than skipping

runner = CliRunner()


def _probe(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["probe", "--device", "cpu", "--steps", "1", *args])
    return result.exit_code, result.output


def test_a_tiny_training_run_prints_prediction_and_measurement_and_writes_valid_entries(tmp_path: Path) -> None:
    code, output = _probe("--task", "full_finetune", "--model", "llama-3.1-8b", "--tiny", "--out", str(tmp_path))
    assert code == 0, output
    assert "peak memory, allocated (GB)" in output and "unavailable" in output and "training tokens/s" in output
    (measurements,) = (tmp_path / "kb" / "measurements").glob("probe-cpu-*.yaml")
    (sources,) = (tmp_path / "kb" / "sources").glob("probe-cpu-*.yaml")
    entries = yaml.safe_load(measurements.read_text())
    assert [e["quantity"] for e in entries] == ["training_tokens_per_s_per_gpu"]  # no memory figure on a CPU
    for entry in entries:
        m = Measurement.model_validate(entry)
        assert m.workload["framework"] == "hf" and m.locator.startswith("gpukb probe --task full_finetune --model llama-3.1-8b")
        assert "--device cpu --tiny --steps 1" in m.locator
        assert m.value > 0 and "torch" in m.setup
    (source,) = yaml.safe_load(sources.read_text())
    assert Source.model_validate(source).id == entries[0]["source"]


def test_a_tiny_serving_run_measures_prefill_and_decode(tmp_path: Path) -> None:
    code, output = _probe("--task", "inference", "--model", "llama-3.1-8b", "--tiny", "--batch-size", "1",
                          "--out", str(tmp_path))
    assert code == 0, output
    assert "prefill tokens/s" in output and "decode tokens/s" in output
    (measurements,) = (tmp_path / "kb" / "measurements").glob("*.yaml")
    assert {e["quantity"] for e in yaml.safe_load(measurements.read_text())} == {"ttft_s", "decode_tokens_per_s"}
    # two entries of one run share its workload: each is written out in full, as the loader refuses YAML aliases
    assert "&id" not in measurements.read_text() and "*id" not in measurements.read_text()


def test_a_run_that_would_not_fit_is_refused_with_exit_code_3() -> None:
    code, output = _probe("--task", "full_finetune", "--model", "llama-3.1-405b")
    assert code == 3 and "would not fit" in output


@pytest.mark.parametrize(("args", "word"), [
    (("--task", "full_finetune", "--model", "llama-3.1-8b", "--framework", "megatron"), "framework"),
    (("--task", "qlora", "--model", "llama-3.1-8b"), "qlora"),
    (("--task", "full_finetune", "--model", "no-such-model", "--tiny"), "model"),
])
def test_what_the_probe_cannot_run_is_a_clear_error(args: tuple[str, ...], word: str) -> None:
    code, output = _probe(*args)
    assert code == 2 and word in output and "Traceback" not in output


def test_the_module_has_the_parameters_gpukb_is_told(kb: gpukb.KnowledgeBase) -> None:
    from gpukb.probe.model import Decoder, Shape

    w = plan(kb, {"task": "full_finetune", "model": "llama-3.1-8b"}, "", tiny=True, layers=3)
    resolved = kb.ask(w).workload
    module = Decoder(Shape.of(resolved))
    assert sum(p.numel() for p in module.parameters()) == probe_params(w) == resolved.params
    assert resolved.layers == 3 and resolved.seq_len == 32


def test_on_a_gpu_the_plan_must_fit_one_card_without_offload(kb: gpukb.KnowledgeBase) -> None:
    w = plan(kb, {"task": "full_finetune", "model": "llama-3.1-8b", "seq_len": 2048}, "h100-sxm-80gb", False, None)
    with pytest.raises(ProbeError) as err:
        predict(kb, w, on_gpu=True)
    assert err.value.code == 3 and "h100-sxm-80gb" in str(err.value)
    small = plan(kb, {"task": "lora", "model": "llama-3.1-8b", "seq_len": 2048}, "h100-sxm-80gb", False, None)
    _, predicted = predict(kb, small, on_gpu=True)
    assert predicted["train_tokens_per_s"] and predicted["peak_allocated"] < 80e9


@pytest.mark.parametrize(("name", "total", "gpu"), [
    ("NVIDIA H200", 150_109_880_320, "h200-sxm-141gb"),
    ("NVIDIA H100 80GB HBM3", 85_520_809_984, "h100-sxm-80gb"),
    ("NVIDIA A100-SXM4-80GB", 85_100_000_000, "a100-sxm-80gb"),
    ("NVIDIA GeForce RTX 4090", 25_393_692_672, "rtx-4090-24gb"),
    # SXM and PCIe cards of one chip report the same memory: the name tells them apart
    ("NVIDIA H100 PCIe", 85_520_809_984, "h100-pcie-80gb"),
    ("NVIDIA H100 NVL", 99_857_989_632, "h100-nvl-94gb"),
    ("NVIDIA A100-PCIE-40GB", 42_505_273_344, "a100-pcie-40gb"),
    ("NVIDIA A100-SXM4-40GB", 42_505_273_344, "a100-sxm-40gb"),
    ("Some Accelerator", 1, ""),
])
def test_the_local_device_maps_to_its_catalog_gpu(kb: gpukb.KnowledgeBase, name: str, total: int, gpu: str) -> None:
    assert local_gpu(kb, name, total) == gpu


def test_torch_is_the_probe_extra() -> None:
    assert torch.__version__


@pytest.mark.parametrize(("task", "term"), [("lora", "layer_activation_bytes"),
                                            ("full_finetune", "layer_activation_bytes_fp32_residual")])
def test_the_probe_layer_saves_what_the_hf_term_states(kb: gpukb.KnowledgeBase, task: str, term: str) -> None:
    # The probe's module stands for the hf stack: one of its layers must save, per token and hidden unit, the
    # count of rules/requirements/activations-training.yaml plus the term kb/frameworks states for Transformers
    # (benchmarks/saved_activations.py measures both against Transformers itself)
    import torch

    from gpukb.probe.model import Shape, build, saved_bytes_per_token

    h, heads, kv, i = 2048, 16, 4, 7168  # small terms (rotary tables, rank-16 products) shrink with the width
    s = Shape(layers=1, hidden=h, heads=heads, kv_heads=kv, head_dim=h // heads, intermediate=i, vocab=8, gated=True)
    sixteen_bit = task == "lora"
    model = build(s, torch.device("cpu"), torch.bfloat16 if sixteen_bit else torch.float32)
    if sixteen_bit:
        model.add_lora(16)
    measured = saved_bytes_per_token(model.blocks[0], h, torch.bfloat16 if sixteen_bit else torch.float32)
    counted = 12 + 4 * kv / heads + 8 * i / h
    assert measured - counted == pytest.approx(getattr(kb.frameworks["hf"], term).value, abs=0.6)


def test_the_probe_speaks_chinese_too() -> None:
    code, output = _probe("--task", "lora", "--model", "llama-3.1-8b", "--tiny", "--lang", "zh")
    assert code == 0, output
    assert "在 cpu 上探测" in output and "训练 tokens/s" in output and "CPU 上无法测量" in output
    assert "figure" not in output and "unavailable" not in output
    code, output = _probe("--task", "qlora", "--model", "llama-3.1-8b", "--tiny", "--lang", "zh")
    assert code == 2 and "错误" in output and "请改测 lora" in output and "probe lora" not in output
