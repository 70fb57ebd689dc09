"""The catalogs against their published sources."""

import pytest

from gpukb.architecture import count_parameters

# Exact totals published with each model (Hugging Face safetensors metadata / model cards);
# the catalog's architecture must reproduce them.
PUBLISHED = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen2.5-7b": 7_615_616_512,
    "qwen2.5-14b": 14_770_033_664,
    "qwen2.5-32b": 32_763_876_352,
    "qwen2.5-72b": 72_706_203_648,
}
REQUIRED_GPUS = {
    "v100-sxm-32gb", "a100-sxm-40gb", "a100-sxm-80gb", "a100-pcie-80gb", "h100-sxm-80gb", "h100-pcie-80gb",
    "h100-nvl-94gb", "h200-sxm-141gb", "l40s-48gb", "l40-48gb", "l4-24gb", "a10-24gb", "a40-48gb",
    "rtx-a6000-48gb", "rtx-6000-ada-48gb", "rtx-4090-24gb", "rtx-3090-24gb", "rtx-5090-32gb", "mi250x-128gb",
    "mi300x-192gb", "gaudi2-96gb", "gaudi3-128gb",
}


@pytest.mark.parametrize(("model_id", "total"), sorted(PUBLISHED.items()))
def test_parameter_counts_follow_from_the_architecture(kb, model_id, total):
    model = kb.models[model_id]
    assert model.params == total
    assert count_parameters(model)[0] == total


def test_gpt3_175b_rounds_to_the_papers_175b(kb):
    assert round(kb.models["gpt3-175b"].params / 1e9) == 175


def test_mixtral_keeps_all_experts_resident_but_computes_two(kb):
    mixtral = kb.models["mixtral-8x7b"]
    assert mixtral.active_params == 12_879_925_248
    answer = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["h200-sxm-141gb"]})
    assert answer.memory.weights == 2 * mixtral.params  # every expert in memory
    decode = next(s for s in answer.trace if s.rule.startswith("rec.throughput.decode@"))
    flop = {v["name"]: v["value"] for v in decode.values}["flop_per_token"]
    # only the routed experts compute (plus attention over the 4096-token context)
    assert flop == 2 * mixtral.active_params + 2 * mixtral.layers * 4096 * mixtral.hidden_size


def test_gpu_catalog_has_every_required_type_with_dense_figures(kb):
    assert set(kb.gpus) >= REQUIRED_GPUS
    assert {"b200-sxm-180gb", "mi325x-256gb"} <= set(kb.gpus)  # shipping variants, see their notes
    h100 = kb.gpus["h100-sxm-80gb"]
    assert (h100.bf16_flops, h100.fp8_flops) == (989.4e12, 1978.9e12)  # dense, not the 2x sparsity figures
    assert kb.gpus["a100-sxm-80gb"].bf16_flops == 312e12 and kb.gpus["a100-sxm-80gb"].fp8_flops is None
    assert kb.gpus["v100-sxm-32gb"].bf16_flops is None
    assert kb.gpus["mi300x-192gb"].memory_bandwidth == 5.3e12
    for gpu in kb.gpus.values():
        assert gpu.sources and gpu.as_of, gpu.id
        if gpu.fp8_flops and gpu.bf16_flops and gpu.vendor == "nvidia":
            assert gpu.fp8_flops == pytest.approx(2 * gpu.bf16_flops, rel=0.02), gpu.id


def test_interconnect_catalog(kb):
    required = {"pcie-4-x16", "pcie-5-x16", "nvlink-3", "nvlink-4", "nvlink-5", "nvswitch-3", "infinity-fabric-4",
                "infiniband-hdr", "infiniband-ndr", "infiniband-xdr", "roce-400g"}
    assert required <= set(kb.interconnects)
    assert kb.interconnects["nvlink-4"].bandwidth == 450e9  # 900 GB/s bidirectional
    assert kb.interconnects["infiniband-ndr"].bandwidth == 50e9  # 400 Gb/s
    assert kb.interconnects["pcie-5-x16"].bandwidth == 63e9
