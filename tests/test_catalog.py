"""The catalogs against their published sources."""

import pytest

from gpukb.knowledge.architecture import count_parameters

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
    "mi300x-192gb", "gaudi2-96gb", "gaudi3-128gb", "t4-16gb", "a100-pcie-40gb", "rtx-4080-16gb", "rtx-3080-10gb",
}


def test_gpt3_175b_rounds_to_the_papers_175b(kb):
    assert round(kb.models["gpt3-175b"].params / 1e9) == 175


def test_mixtral_keeps_all_experts_resident_but_computes_two(kb):
    mixtral = kb.models["mixtral-8x7b"]
    assert mixtral.active_params == 12_879_925_248
    answer = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["h200-sxm-141gb"]})
    assert answer.memory.weights == 2 * mixtral.params  # every expert in memory
    decode = next(s for s in answer.trace if s.rule.startswith("rec.throughput.decode@"))
    flop = {v["name"]: v["value"] for v in decode.values}["flop_per_token"]
    # only the routed experts compute (plus attention over the 4096-token context); the input embedding
    # (32,000 x 4096, untied from the output layer) is a lookup, not a multiply
    matrices = mixtral.active_params - mixtral.vocab_size * mixtral.hidden_size
    assert flop == 2 * matrices + 2 * mixtral.layers * 4096 * mixtral.hidden_size


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


# Models added in KB 0.7.0, each total worked by hand from its config.json (embeddings; per layer the
# attention q, k, v, o, the MLP's three matrices and the norms; one final norm):
CONFIG_TOTALS = {
    # 2 x 128256 x 4096 + 32 x (2 x 4096^2 + 2 x 4096 x 1024 + 3 x 4096 x 14336 + 2 x 4096) + 4096
    "llama-3.1-8b": 8_030_261_248,
    # 2 x 128256 x 8192 + 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672 + 2 x 8192) + 8192
    "llama-3.1-70b": 70_553_706_496,
    # 2 x 32000 x 6144 + 56 x (2 x 6144^2 + 2 x 6144 x 1024 + 8 x 3 x 6144 x 16384 + 6144 x 8 + 2 x 6144)
    # + 6144 (all eight experts resident)
    "mixtral-8x22b": 140_620_634_112,
    # 256000 x 3584 (tied) + 42 x (2 x 3584 x 4096 + 2 x 3584 x 2048 + 3 x 3584 x 14336 + 4 x 3584) + 3584
    "gemma-2-9b": 9_241_705_984,
    # 256000 x 4608 (tied) + 46 x (2 x 4608 x 4096 + 2 x 4608 x 2048 + 3 x 4608 x 36864 + 4 x 4608) + 4608
    "gemma-2-27b": 27_227_128_320,
    # 2 x 32064 x 3072 + 32 x (4 x 3072^2 + 3 x 3072 x 8192 + 2 x 3072) + 3072
    "phi-3-mini": 3_821_079_552,
    # 2 x 151936 x 4096 + 36 x (2 x 4096^2 + 2 x 4096 x 1024 + 2 x 128 + 3 x 4096 x 12288 + 2 x 4096) + 4096
    "qwen3-8b": 8_190_735_360,
    # 2 x 151936 x 5120 + 64 x (2 x 5120 x 8192 + 2 x 5120 x 1024 + 2 x 128 + 3 x 5120 x 25600 + 2 x 5120)
    # + 5120
    "qwen3-32b": 32_762_123_264,
}


@pytest.mark.parametrize(("model_id", "total"), sorted({**PUBLISHED, **CONFIG_TOTALS}.items()))
def test_parameter_counts_follow_from_the_architecture(kb, model_id, total):
    """Published totals and those worked by hand from config.json: the catalog states them and its
    architecture reproduces them."""
    model = kb.models[model_id]
    assert model.params == total
    assert count_parameters(model)[0] == total


def test_mixtral_8x22b_runs_two_of_eight_experts(kb):
    # 2 x 32000 x 6144 + 56 x (2 x 6144^2 + 2 x 6144 x 1024 + 2 x 3 x 6144 x 16384 + 6144 x 8 + 2 x 6144) + 6144
    assert kb.models["mixtral-8x22b"].active_params == 39_152_031_744
    assert count_parameters(kb.models["mixtral-8x22b"])[1] == 39_152_031_744


def test_gpus_added_in_0_7_keep_their_datasheet_figures(kb):
    t4, a100, rtx4080, rtx3080 = (kb.gpus[g] for g in ("t4-16gb", "a100-pcie-40gb", "rtx-4080-16gb", "rtx-3080-10gb"))
    # T4 datasheet: Mixed-Precision (FP16/FP32) 65 TFLOPS; Turing has no BF16 or FP8
    assert (t4.fp16_flops, t4.bf16_flops, t4.fp8_flops) == (65e12, None, None)
    # A100 40GB PCIe product brief: 1,555 GB/s, 250 W; 624* TFLOPS with sparsity halved
    assert (a100.memory_bandwidth, a100.tdp, a100.bf16_flops) == (1555e9, 250, 312e12)
    # Ada whitepaper, FP32 accumulate, dense (as the RTX 4090 entry chose)
    assert (rtx4080.bf16_flops, rtx4080.memory_bandwidth) == (97.5e12, 716.8e9)
    # GA102 whitepaper, FP32 accumulate, dense (as the RTX 3090 entry chose); 10 GB, no NVLink
    assert (rtx3080.bf16_flops, rtx3080.memory, rtx3080.scale_up) == (59.5e12, 10e9, None)


def test_interconnect_catalog(kb):
    required = {"pcie-4-x16", "pcie-5-x16", "nvlink-3", "nvlink-4", "nvlink-5", "nvswitch-3", "infinity-fabric-4",
                "infiniband-hdr", "infiniband-ndr", "infiniband-xdr", "roce-400g"}
    assert required <= set(kb.interconnects)
    assert kb.interconnects["nvlink-4"].bandwidth == 450e9  # 900 GB/s bidirectional
    assert kb.interconnects["infiniband-ndr"].bandwidth == 50e9  # 400 Gb/s
    assert kb.interconnects["pcie-5-x16"].bandwidth == 63e9
