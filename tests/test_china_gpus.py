"""The GPUs the article's readers can buy in China: their datasheet figures, and what the answers make of them."""

from __future__ import annotations

import pytest

CHINA = ("h20-96gb", "h800-sxm-80gb", "a800-sxm-80gb", "l20-48gb", "rtx-4090d-24gb", "ascend-910b-64gb")


@pytest.mark.parametrize(("gpu", "memory", "bandwidth", "bf16", "scale_up"), [
    # H20: 96 GB HBM3 at 4.0 TB/s, 148 dense BF16 TFLOPS, full NVLink (450 GB/s a direction)
    ("h20-96gb", 96e9, 4.0e12, 148e12, 450e9),
    # H800 and A800: the H100's and A100's chips, NVLink cut to 400 GB/s both ways (200 a direction)
    ("h800-sxm-80gb", 80e9, 3.35e12, 989.4e12, 200e9),
    ("a800-sxm-80gb", 80e9, 2.039e12, 312e12, 200e9),
    # L20: 48 GB GDDR6 at 864 GB/s, 119.5 dense BF16 TFLOPS (59.8 is its TF32), PCIe only
    ("l20-48gb", 48e9, 864e9, 119.5e12, None),
    # RTX 4090 D: 114 SMs of the 4090's 128, 24 GB GDDR6X at 1,008 GB/s
    ("rtx-4090d-24gb", 24e9, 1.008e12, 147.1e12, None),
    # Ascend 910B2: 64 GB HBM2e, 1.6 TB/s, 353.8 FP16/BF16 TFLOPS, HCCS 196 GB/s a direction
    ("ascend-910b-64gb", 64e9, 1.6e12, 353.8e12, 196e9),
])
def test_datasheet_figures(kb, gpu, memory, bandwidth, bf16, scale_up):
    g = kb.gpus[gpu]
    assert g.memory == pytest.approx(memory, rel=0.01)
    assert g.memory_bandwidth == pytest.approx(bandwidth, rel=0.01)
    assert g.bf16_flops == pytest.approx(bf16, rel=0.01)
    assert (g.scale_up_bandwidth or None) == (pytest.approx(scale_up, rel=0.01) if scale_up else None)
    assert g.sources and all(s in kb.sources for s in g.sources)


@pytest.mark.parametrize("gpu", CHINA)
def test_each_answers_asks_on_a_system_it_comes_in(kb, gpu):
    for workload in ({"model": "llama-3-8b", "task": "lora"}, {"model": "llama-3-8b", "task": "inference"}):
        answer = kb.ask({**workload, "gpus": [gpu]})
        (option,) = answer.options
        assert option.system is not None and kb.systems[option.system].gpu == gpu


def test_the_h20_decodes_faster_than_an_h100_and_trains_far_slower(kb):
    """Large, fast memory and a seventh of the compute: the article's bandwidth claims meet their best example."""
    serve = {o.gpu: o for o in kb.ask({"model": "llama-2-70b", "task": "inference",
                                       "gpus": ["h20-96gb", "h100-sxm-80gb"]}).options}
    assert serve["h20-96gb"].tpot_s < serve["h100-sxm-80gb"].tpot_s * serve["h100-sxm-80gb"].count / serve["h20-96gb"].count
    assert serve["h20-96gb"].ttft_s > 3 * serve["h100-sxm-80gb"].ttft_s  # prefill is compute-bound
    train = {o.gpu: o for o in kb.ask({"model": "llama-3-8b", "task": "full_finetune", "gpus": ["h20-96gb", "h100-sxm-80gb"],
                                       "gpu_count": 8, "placement": "all"}).options}
    assert train["h20-96gb"].tokens_per_s < 0.3 * train["h100-sxm-80gb"].tokens_per_s


def test_the_cut_nvlink_of_the_h800_costs_tensor_parallel_time(kb):
    answers = {gpu: kb.ask({"model": "llama-2-70b", "task": "full_finetune", "gpus": [gpu], "gpu_count": 16,
                            "placement": "all", "tensor_parallel": 8}).options[0] for gpu in ("h800-sxm-80gb", "h100-sxm-80gb")}
    assert answers["h800-sxm-80gb"].tokens_per_s < answers["h100-sxm-80gb"].tokens_per_s


def test_an_ascend_option_says_which_stack_it_assumes(kb):
    (option,) = kb.ask({"model": "llama-3-8b", "task": "inference", "gpus": ["ascend-910b-64gb"]}).options
    (finding,) = [f for f in option.findings if f.rule.startswith("bottleneck.software.ascend-stack@")]
    assert "vllm-ascend" in finding.message and "MindSpeed" in finding.message
