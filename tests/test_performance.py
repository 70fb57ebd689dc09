"""The performance model against hand computations: every constant and term written out here, from
its source (kb/policies/ and the datasheets in kb/gpus/), so a change to one of them fails a test."""

import pytest

from gpukb import WorkloadError

A100_BF16, H100_BF16, L40S_BF16 = 312e12, 989.4e12, 362.05e12  # dense tensor FLOP/s (datasheets)
A100_BW = 2039e9  # A100 SXM 80 GB memory bandwidth
A100_NVLINK = 300e9  # NVLink 3: 600 GB/s both directions
UTIL = {"ampere": 0.57, "hopper": 0.46, "default": 0.40}  # kb/policies: mfu-ampere, mfu-hopper, mfu
H100_BW = 3.35e12  # H100 SXM memory bandwidth
ELEMENTWISE, UTIL_WIDTH = 4.4, 4096  # kb/policies: elementwise-work, utilisation-hidden-size
DECODE_BW = 0.69  # decode-bandwidth-utilisation
HOST_PER_GPU = 256e9  # host-memory-per-gpu: 2 TB in an 8 x H100 server
NODE_NET_A100 = 200e9  # node-network-bandwidth-ampere: 8 x 200 Gb/s per node
BASE_LAT, HOP_NVLINK, HOP_PCIE = 5.6e-6, 2.0e-6, 2.7e-6  # nccl-tests: ring / LL on a DGX A100, 8 x RTX 4090
PCIE4 = 31.5e9  # PCIe 4.0 x16, one direction
N_7B, L_7B, H_7B, V_7B = 6_738_415_616, 32, 4096, 32000  # llama-2-7b


def values(option, rule: str) -> dict:
    step = next(s for s in option.trace if s.rule.split("@")[0] == rule)
    return {v["name"]: v["value"] for v in step.values}


def forward(params: int, layers: int, seq: int, hidden: int) -> int:
    """Kaplan et al. 2020: 2·N plus 2·layers·context·d_model FLOP per token."""
    return 2 * params + 2 * layers * seq * hidden


@pytest.mark.parametrize(("gpu", "peak", "util"), [("h100-sxm-80gb", H100_BF16, UTIL["hopper"]),
                                                     ("a100-sxm-80gb", A100_BF16, UTIL["ampere"]),
                                                     ("l40s-48gb", L40S_BF16, UTIL["default"])])
def test_one_gpu_trains_at_its_generations_utilisation(kb, gpu, peak, util):
    answer = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": [gpu], "activation_checkpointing": False})
    (option,) = answer.options
    fwd = forward(N_7B, L_7B, 4096, H_7B)
    # a frozen base: forward + activation gradients, no weight gradients; the adapters' optimizer step after
    # each micro-batch costs under a thousandth of it
    rate = peak * util / (2 * fwd)
    assert option.tokens_per_s == pytest.approx(with_optimizer_step(rate, option), rel=1e-9)
    assert option.tokens_per_s == pytest.approx(rate, rel=2e-3)
    assert option.efficiency == 1 and option.mfu == pytest.approx(util * option.tokens_per_s / rate, rel=1e-9)


def with_optimizer_step(rate: float, option: object, tokens: int = 4096) -> float:
    """A compute rate (tokens/s) once the estimate's own optimizer step (memory-bound, once per step of
    `tokens` tokens on each data-parallel rank) is added to the step's time."""
    step = values(option, "rec.throughput.training")
    step_tokens = tokens * option.strategy.data_parallel
    return step_tokens / (step_tokens / rate + step["optimizer_s"])


def width_factor(peak: float, bandwidth: float, hidden: int, measured_at: int = UTIL_WIDTH) -> float:
    """Element-wise time over matrix-multiply time is k·ridge/d: the utilisation measured at one width,
    carried to another."""
    ridge = peak / bandwidth
    return (1 + ELEMENTWISE * ridge / measured_at) / (1 + ELEMENTWISE * ridge / hidden)


def gemm_efficiency(util: float, peak: float, bandwidth: float, measured_at: int = UTIL_WIDTH) -> float:
    """A forward pass's matrix multiplies alone: the training utilisation without its element-wise share."""
    return util * (1 + ELEMENTWISE * peak / bandwidth / measured_at)


def elementwise_bytes(layers: int, hidden: int, heads: int, kv_heads: int, head_dim: int, ffn: int, tp: int = 1) -> float:
    """A token's element-wise traffic in one GPU: two residual-add + RMSNorm (8·d bytes each) on every
    tensor-parallel rank, rotary on queries and keys and SiLU-and-mul split over the ranks."""
    return layers * (16 * hidden + (4 * (heads + kv_heads) * head_dim + 2 * 3 * ffn) / tp)


@pytest.mark.parametrize(("model", "hidden", "layers", "params", "gpu", "peak", "bandwidth", "util"), [
    # Llama 2 70B, d = 8,192: a wider model spends less of its step on element-wise work
    ("llama-2-70b", 8192, 80, 68_976_648_192, "h100-sxm-80gb", H100_BF16, H100_BW, UTIL["hopper"]),
    # Phi-3-mini, d = 3,072: a narrower one more (the A100's ridge is 153 FLOP/byte, the H100's 295)
    ("phi-3-mini", 3072, 32, 3_821_079_552, "a100-sxm-80gb", A100_BF16, A100_BW, UTIL["ampere"]),
])
def test_utilisation_is_carried_to_the_models_width(kb, model, hidden, layers, params, gpu, peak, bandwidth, util):
    (option,) = kb.ask({"model": model, "task": "lora", "gpus": [gpu], "gpu_count": 8, "placement": "all",
                        "activation_checkpointing": False}).options
    step = values(option, "rec.throughput.training")
    factor = width_factor(peak, bandwidth, hidden)
    assert step["width_factor"] == pytest.approx(factor, rel=1e-9)
    assert (factor > 1) == (hidden > UTIL_WIDTH)
    assert step["utilisation"] == pytest.approx(util * factor, rel=1e-9)
    fwd = forward(params, layers, 4096, hidden)
    assert step["tokens_per_s"] == pytest.approx(with_optimizer_step(8 * peak * util * factor / (2 * fwd), option), rel=1e-9)


def test_a_generation_measured_at_another_width_is_carried_from_there(kb):
    """CDNA 2's utilisation is Dash et al.'s 175B figure (d = 12,288): a 7B model on MI250X runs below it."""
    (option,) = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["mi250x-128gb"],
                        "activation_checkpointing": False}).options
    step = values(option, "rec.throughput.training")
    gpu = kb.gpus["mi250x-128gb"]
    factor = width_factor(gpu.bf16_flops, gpu.memory_bandwidth, H_7B, measured_at=12288)
    assert step["utilisation"] == pytest.approx(0.36 * factor, rel=1e-9) and factor < 1


def test_recomputation_is_work_the_gpu_does_not_model_flops(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"],
                        "activation_checkpointing": True}).options
    fwd = forward(N_7B, L_7B, 4096, H_7B)
    rate = H100_BF16 * UTIL["hopper"] / (3 * fwd)
    assert option.tokens_per_s == pytest.approx(with_optimizer_step(rate, option), rel=1e-9)
    # the model's FLOPs are two forwards of the three executed
    assert option.mfu == pytest.approx(UTIL["hopper"] * 2 / 3 * option.tokens_per_s / rate, rel=1e-9)


def test_the_gradient_all_reduce_crosses_nodes_at_the_nodes_aggregate_rate_and_hides_behind_backward(kb):
    # 16 A100s in two nodes, DDP with ZeRO-1, one 512-token micro-batch per rank per step
    (option,) = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "seq_len": 512, "gpus": ["a100-sxm-80gb"],
                        "gpu_count": 16, "placement": "all", "zero_stage": 1, "activation_checkpointing": False,
                        "global_batch_size": 16}).options
    assert (option.count, option.strategy.data_parallel, option.strategy.nodes) == (16, 16, 2)
    step = values(option, "bottleneck.interconnect.step")
    grads = 2 * N_7B  # bf16 gradients of the whole replica
    # reduce inside the node over NVLink (8 ranks), then each GPU's eighth over its share of 8 adapters
    allreduce = grads * 2 * 7 / 8 / A100_NVLINK + grads / 8 * 2 * (1 / 2) / (NODE_NET_A100 / 8)
    assert step["dp_time_s"] == pytest.approx(allreduce, rel=1e-9)
    compute = 512 * 16 * 3 * forward(N_7B, L_7B, 512, H_7B) / (16 * A100_BF16 * UTIL["ampere"])
    assert step["compute_time_s"] == pytest.approx(compute, rel=1e-9)
    exposed = allreduce - 2 / 3 * compute  # the last backward pass hides two thirds of a micro-batch
    assert step["exposed_dp_s"] == pytest.approx(exposed, rel=1e-9)
    assert option.efficiency == pytest.approx(compute / (compute + exposed), rel=1e-9)
    assert step["link"] == "the network between nodes"


def test_gradient_accumulation_runs_the_all_reduce_once_per_step(kb):
    def step(global_batch):
        (option,) = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "seq_len": 512, "gpus": ["a100-sxm-80gb"],
                            "gpu_count": 16, "placement": "all", "zero_stage": 1, "activation_checkpointing": False,
                            "global_batch_size": global_batch}).options
        return values(option, "bottleneck.interconnect.step"), option

    one, _ = step(16)
    eight, option = step(128)
    assert eight["microbatches"] == 8 and eight["dp_time_s"] == pytest.approx(one["dp_time_s"], rel=1e-12)
    assert eight["compute_time_s"] == pytest.approx(8 * one["compute_time_s"], rel=1e-12)
    assert eight["exposed_dp_s"] == pytest.approx(one["exposed_dp_s"], rel=1e-12)
    compute = eight["compute_time_s"]
    assert option.efficiency == pytest.approx(compute / (compute + one["exposed_dp_s"]), rel=1e-9)
    assert option.efficiency > values(step(16)[1], "bottleneck.interconnect.step")["efficiency"]


def test_zero3_gathers_weights_every_micro_batch(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                        "placement": "all", "zero_stage": 3, "global_batch_size": 32}).options
    step = values(option, "bottleneck.interconnect.step")
    assert step["microbatches"] == 4
    # ZeRO-3: 1.5x the all-reduce volume, per micro-batch (Rajbhandari et al. 2020)
    assert step["dp_bytes"] == pytest.approx(2 * N_7B * 2 * 7 / 8 * 1.5 * 4, rel=1e-9)


def test_the_pipeline_bubble_is_p_minus_1_over_m(kb):
    (option,) = kb.ask({"model": "llama-2-13b", "task": "pretrain", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                        "tensor_parallel": 2, "pipeline_parallel": 4, "global_batch_size": 8,
                        "activation_checkpointing": True}).options
    step = values(option, "bottleneck.interconnect.step")
    assert option.strategy.data_parallel == 1 and step["microbatches"] == 8
    assert step["bubble_time_s"] == pytest.approx(step["compute_time_s"] * 3 / 8, rel=1e-12)
    # (p-1)/(m+p-1) of the step idles when nothing else is lost
    total = step["compute_time_s"] + step["bubble_time_s"] + step["comm_time_s"]
    assert step["bubble_time_s"] / total < 3 / 11 + 1e-12


def test_the_interleaved_schedule_divides_the_bubble_and_holds_more_activations(kb):
    # Narayanan et al. 2021: v model chunks per pipeline rank idle (p-1)/(v·m) of the compute; Korthikanti et
    # al. 2022 §4.2.3: the first stage then holds 1 + (p-1)/(p·v) times the activations of plain 1F1B
    workload = {"model": "llama-2-13b", "task": "pretrain", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                "tensor_parallel": 2, "pipeline_parallel": 4, "global_batch_size": 8, "activation_checkpointing": True}
    (plain,) = kb.ask(workload).options
    (interleaved,) = kb.ask({**workload, "virtual_pipeline_stages": 2}).options
    step = values(interleaved, "bottleneck.interconnect.step")
    assert step["bubble_time_s"] == pytest.approx(step["compute_time_s"] * 3 / (8 * 2), rel=1e-12)
    plan, plain_plan = values(interleaved, "planner.fewest-gpus"), values(plain, "planner.fewest-gpus")
    assert plan["activations"] == pytest.approx(plain_plan["activations"] * (1 + 3 / (4 * 2)), rel=1e-12)
    assert interleaved.tokens_per_s > plain.tokens_per_s


@pytest.mark.parametrize(("extra", "field"), [
    ({"virtual_pipeline_stages": 2}, "virtual_pipeline_stages"),  # no pipeline to interleave
    ({"pipeline_parallel": 4, "virtual_pipeline_stages": 3}, "virtual_pipeline_stages"),  # 40 layers, 4 x 3 chunks
    ({"task": "inference", "pipeline_parallel": 2, "virtual_pipeline_stages": 2}, "virtual_pipeline_stages"),
])
def test_virtual_pipeline_stages_must_split_the_layers_of_a_training_pipeline(kb, extra, field):
    with pytest.raises(WorkloadError, match=field):
        kb.ask({"model": "llama-2-13b", "task": "pretrain", "gpu_count": 16, **extra})


def test_megatron_counts_the_embedding_and_the_loss_as_layers_to_split_126_layers_into_64_chunks(kb):
    # Llama 3.1 405B: 126 layers + the embedding + the loss = 128 = 8 stages x 8 chunks of 2 (Megatron-Core's
    # account_for_embedding_in_pipeline_split / account_for_loss_in_pipeline_split, as NeMo's 405B recipe sets)
    workload = {"model": "llama-3.1-405b", "task": "pretrain", "precision": "fp8", "gpus": ["h100-sxm-80gb"],
                "gpu_count": 1024, "placement": "all", "tensor_parallel": 8, "pipeline_parallel": 8,
                "context_parallel": 2, "global_batch_size": 512}
    (option,) = kb.ask({**workload, "virtual_pipeline_stages": 8}).options
    assert option.strategy.pipeline_parallel == 8
    with pytest.raises(WorkloadError, match="even with the embedding and the loss"):  # 20 chunks: 126 or 128 layers
        kb.ask({**workload, "pipeline_parallel": 4, "virtual_pipeline_stages": 5})


def test_tensor_parallel_traffic_is_exposed_unless_the_framework_overlaps_it(kb):
    # Llama-2-13B, TP 8 on one H100 node, one 4096-token micro-batch: 16 x 40 layers x 4096 tokens x 5120 x 7/8 bytes
    def step(overlap: bool):
        workload = {"model": "llama-2-13b", "task": "pretrain", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                    "placement": "all", "tensor_parallel": 8, "activation_checkpointing": False}
        (option,) = kb.ask({**workload, "tp_comm_overlap": True} if overlap else workload).options
        return values(option, "bottleneck.interconnect.step"), option

    plain, plain_option = step(False)
    hidden, hidden_option = step(True)
    tp = 16 * 40 * 4096 * 5120 * 7 / 8 / 450e9  # NVLink 4: 900 GB/s both directions
    assert plain["tp_time_s"] == pytest.approx(tp, rel=1e-9) and hidden["tp_time_s"] == plain["tp_time_s"]
    assert plain["exposed_tp_s"] == plain["tp_time_s"]
    # overlapped, only what the micro-batch's compute cannot cover is exposed: here nothing
    assert hidden["compute_time_s"] > tp and hidden["exposed_tp_s"] == 0
    compute = hidden["compute_time_s"]
    assert plain_option.efficiency == pytest.approx(compute / (compute + tp), rel=1e-9)
    assert hidden_option.efficiency == 1
    assert hidden_option.tokens_per_s > plain_option.tokens_per_s


def test_tensor_parallel_overlap_is_a_training_setting(kb):
    with pytest.raises(WorkloadError, match="tp_comm_overlap"):
        kb.ask({"model": "llama-2-7b", "task": "inference", "tp_comm_overlap": True})


def test_batch_one_decode_reads_only_the_experts_it_routes_to(kb):
    (option,) = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["h200-sxm-141gb"],
                        "output_len": 128}).options
    answer = kb.ask({"model": "mixtral-8x7b", "task": "inference", "gpus": ["h200-sxm-141gb"], "output_len": 128})
    model = kb.models["mixtral-8x7b"]
    expert = 32 * 3 * 4096 * 14336  # one expert's SwiGLU MLP in all 32 layers
    touched = 8 * (1 - (1 - 2 / 8) ** 1)  # top-2 of 8 experts, one token: 2
    unread = expert * (8 - touched) + model.vocab_size * model.hidden_size  # and the input embedding
    decode = values(option, "rec.throughput.decode")
    # a 128-token context with a 1-token prompt: decode reads, on average, the KV of 1 + 128/2 tokens
    kv_read = answer.memory.kv_cache * (1 + 128 / 2) / 128
    assert decode["bytes_per_step"] == pytest.approx(answer.memory.weights * (1 - unread / model.params) + kv_read,
                                                     rel=1e-9)


def test_tensor_parallel_decode_pays_two_all_reduces_per_layer(kb):
    answer = kb.ask({"model": "llama-2-70b", "task": "inference", "gpus": ["a100-sxm-80gb"],
                     "tensor_parallel": 8, "output_len": 128})
    (option,) = answer.options
    assert option.count == 8 and option.strategy.tensor_parallel == 8  # a pinned size is exact
    # the hidden state's bytes at the 20 GB/s a link NCCL counts for Ampere's NVLink, 0.8 of the datasheet's 25
    per_all_reduce = BASE_LAT + 2 * 7 * HOP_NVLINK + 8192 * 2 * 2 * (7 / 8) / (A100_NVLINK * 0.8)
    decode = values(option, "rec.throughput.decode")
    assert decode["tp_latency_s"] == pytest.approx(2 * 80 * per_all_reduce, rel=1e-9)
    read = decode["bytes_per_step"] / (8 * A100_BW * DECODE_BW)
    # the token's element-wise traffic on each GPU: 64 query and 8 KV heads of 128, an MLP of 28,672
    elementwise = elementwise_bytes(80, 8192, 64, 8, 128, 28672, tp=8) / (A100_BW * DECODE_BW)
    assert option.tpot_s == pytest.approx(read + elementwise + 2 * 80 * per_all_reduce, rel=1e-9)
    # the request's output over its prefill (a one-token prompt: one read of the weights, one token's
    # arithmetic at the A100's matrix-multiply efficiency, its element-wise traffic and its all-reduces) and its
    # decode steps
    one_token = forward(68_976_648_192 - 32000 * 8192, 80, 1, 8192) / (
        8 * A100_BF16 * gemm_efficiency(UTIL["ampere"], A100_BF16, A100_BW))
    read = answer.memory.weights - 2 * 32000 * 8192  # every weight but the input embedding (16-bit), looked up
    prefill = read / (8 * A100_BW * DECODE_BW) + one_token + elementwise + 2 * 80 * per_all_reduce
    assert decode["batch_prefill_s"] == pytest.approx(prefill, rel=1e-9)
    assert option.tokens_per_s == pytest.approx(128 / (decode["batch_prefill_s"] + 128 * option.tpot_s), rel=1e-9)


def test_tensor_parallel_decode_over_pcie_pays_its_slower_ring_steps(kb):
    answer = kb.ask({"model": "llama-2-13b", "task": "inference", "gpus": ["l40s-48gb"], "tensor_parallel": 4})
    (option,) = answer.options
    assert option.count == 4
    # L40S has no NVLink: each of the ring's 2 x 3 steps crosses PCIe 4.0 (hidden size 5,120, 40 layers), whose
    # bytes move at the 24 GB/s NCCL counts for a Gen4 x16 link (16 lanes x 120 / 80), 0.762 of its 31.5 GB/s
    per_all_reduce = BASE_LAT + 2 * 3 * HOP_PCIE + 5120 * 2 * 2 * (3 / 4) / (PCIE4 * 0.762)
    assert values(option, "rec.throughput.decode")["tp_latency_s"] == pytest.approx(2 * 40 * per_all_reduce, rel=1e-9)


@pytest.mark.parametrize("prompt", [128, 2048])
def test_time_to_first_token_is_one_weight_read_plus_the_prompts_compute(kb, prompt):
    # Splitwise and DistServe: prefill time grows linearly with the prompt from about one weight read; not the
    # larger of the two, which at 128 tokens (near an A100's ridge) would be half of this
    answer = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["a100-sxm-80gb"], "prompt_len": prompt,
                     "output_len": 1})
    (option,) = answer.options
    # the prompt's tokens run the layers (the input embedding is a lookup), its last position the output layer
    # at the matrix multiplies' own efficiency (the A100's training utilisation without its element-wise share)
    layers = forward(N_7B - 2 * V_7B * H_7B, L_7B, prompt, H_7B) * prompt
    compute = (layers + 2 * V_7B * H_7B) / (A100_BF16 * gemm_efficiency(UTIL["ampere"], A100_BF16, A100_BW))
    read = (answer.memory.weights - 2 * V_7B * H_7B) / (A100_BW * DECODE_BW)  # all but the looked-up input embedding
    elementwise = prompt * elementwise_bytes(L_7B, H_7B, 32, 32, 128, 11008) / (A100_BW * DECODE_BW)
    assert option.ttft_s == pytest.approx(compute + read + elementwise, rel=1e-9)
    assert option.ttft_s > 1.9 * max(compute, read) if prompt == 128 else option.ttft_s < 1.2 * compute


def test_an_fp8_kv_cache_halves_it(kb):
    def kv(precision):
        return kb.ask({"model": "llama-3-8b", "task": "inference", "gpus": ["h100-sxm-80gb"], "seq_len": 8192,
                       "kv_cache_precision": precision}).memory.kv_cache
    assert kv("fp8") * 2 == kv("bf16") == 2 * 32 * 8 * 128 * 8192 * 2


def test_usable_memory_counts_the_overhead_inside_the_reserve(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]}).options
    reported = 81559 * 2**20  # nvidia-smi's total for an H100 80 GB
    assert option.usable_bytes == round(reported * 0.9 + min(2e9, reported * 0.1))


def test_placement_all_uses_every_gpu_as_data_parallel_replicas(kb):
    fewest = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 16})
    every = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 16,
                    "placement": "all"})
    assert fewest.options[0].count < 16 == every.options[0].count
    assert every.options[0].tokens_per_s > fewest.options[0].tokens_per_s
    with pytest.raises(WorkloadError, match="placement"):
        kb.ask({"model": "llama-2-7b", "task": "full_finetune", "placement": "all"})


def test_offloaded_state_must_fit_the_hosts_memory(kb):
    # Llama 2 13B in full on 4090s: parameter offload fits one card's memory, but its 16 bytes per parameter
    # of CPU state, sharded over the data-parallel ranks, need more GPUs' share of the server's host memory
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["rtx-4090-24gb"], "gpu_count": 8,
                     "offload": "optimizer+params"})
    (option,) = answer.options
    host = kb.systems[option.system].host_memory / kb.systems[option.system].gpus_per_node  # the 8x4090 server
    state = answer.memory.optimizer + answer.memory.gradients + answer.memory.weights
    n = option.strategy.data_parallel
    assert option.strategy.offload == "optimizer+params" and option.count == n
    assert state / n <= host and (n == 1 or state / (n - 1) > host or option.count < n)
    assert values(option, "planner.fewest-gpus")["host_bytes"] == pytest.approx(state / n, rel=1e-12)


def test_a_plan_short_of_host_memory_is_rejected_for_that(kb):
    answer = kb.ask({"model": "llama-3.1-405b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 8})
    assert not answer.options
    (finding,) = [f for f in answer.rejected[0].findings if f.rule.startswith("bottleneck.capacity.")]
    assert finding.rule.startswith("bottleneck.capacity.host-memory@") and "CPU memory" in finding.message


def test_a_pinned_zero_stage_on_one_rank_does_not_fall_back_to_offload(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "lora", "zero_stage": 1, "gpus": ["h100-sxm-80gb"]}).options
    assert option.strategy.offload == "none" and option.strategy.zero_stage == 1 and option.count == 1


def test_more_pipeline_stages_than_layers_is_an_error_naming_the_field(kb):
    with pytest.raises(WorkloadError, match="pipeline_parallel"):
        kb.ask({"model": "llama-2-7b", "task": "pretrain", "pipeline_parallel": 64, "gpu_count": 64})


# Llama 3 8B: 8,030,261,248 parameters, a 128,256 x 4,096 embedding (untied output of the same size)
N_8B, V_8B, H_8B = 8_030_261_248, 128_256, 4096


def test_pure_bf16_training_keeps_no_master_copy_and_its_states_in_bf16(kb):
    # torchtune: "When dtype=bf16, all activations, gradients and optimizer states are in bfloat16";
    # torch.optim.AdamW makes both moments with zeros_like(param), 2 + 2 bytes, and no fp32 master
    workload = {"model": "llama-3-8b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]}
    mixed = kb.ask(workload).memory
    pure = kb.ask({**workload, "master_weights": False}).memory
    assert mixed.optimizer == N_8B * (4 + 8) and pure.optimizer == N_8B * 4
    assert pure.weights == mixed.weights == N_8B * 2 and pure.gradients == mixed.gradients == N_8B * 2
    # 8-bit AdamW's states are 8-bit whatever the weights: only the master copy goes
    eight = kb.ask({**workload, "master_weights": False, "optimizer": "adamw_8bit"}).memory
    assert eight.optimizer == N_8B * 2
    # fp32 training has no master copy to drop
    fp32 = {**workload, "precision": "fp32"}
    assert kb.ask({**fp32, "master_weights": False}).memory == kb.ask(fp32).memory


def test_the_optimizer_stepped_in_backward_keeps_one_gradient_at_a_time(kb):
    # torchtune's single-GPU Llama 3.1 8B full fine-tune: pure bf16, 8-bit AdamW, optimizer_in_bwd, bs 2 x 2048
    workload = {"model": "llama-3-8b", "task": "full_finetune", "master_weights": False, "optimizer": "adamw_8bit",
                "optimizer_in_backward": True, "seq_len": 2048, "micro_batch_size": 2,
                "activation_checkpointing": True, "gpus": ["rtx-a6000-48gb"], "gpu_count": 1}
    answer = kb.ask(workload)
    assert answer.memory.gradients == V_8B * H_8B * 2  # the largest tensor's gradient: the embedding's
    (option,) = answer.options
    plan = values(option, "planner.fewest-gpus")
    # 16.06 GB of weights + 1.05 GB of one gradient + 16.06 GB of 8-bit states, on the card, no offload
    assert option.strategy.offload == "none"
    assert plan["weights"] + plan["gradients"] + plan["optimizer"] == N_8B * 2 + V_8B * H_8B * 2 + N_8B * 2
    # without it, all 16.06 GB of gradients: the same run no longer fits 48 GB without offloading the states
    (without,) = kb.ask({**workload, "optimizer_in_backward": False}).options
    assert without.strategy.offload != "none"


@pytest.mark.parametrize(("extra", "field"), [
    ({"task": "inference", "master_weights": False}, "master_weights"),
    ({"task": "inference", "optimizer_in_backward": True}, "optimizer_in_backward"),
    ({"task": "lora", "optimizer_in_backward": True}, "optimizer_in_backward"),
    ({"task": "full_finetune", "optimizer_in_backward": True, "global_batch_size": 64}, "optimizer_in_backward"),
])
def test_pure_bf16_and_optimizer_in_backward_are_full_training_settings(kb, extra, field):
    with pytest.raises(WorkloadError, match=field):
        kb.ask({"model": "llama-2-7b", **extra})


def test_context_parallelism_splits_each_sequence_and_passes_its_keys_and_values(kb):
    # Llama 3 8B on 16 H100s, 32k-token sequences: TP 2 x CP 4 per data-parallel rank, 2 ranks, ZeRO-1
    workload = {"model": "llama-3-8b", "task": "pretrain", "seq_len": 32768, "gpus": ["h100-sxm-80gb"],
                "gpu_count": 16, "placement": "all", "tensor_parallel": 2, "context_parallel": 4, "zero_stage": 1,
                "activation_checkpointing": True}
    answer = kb.ask(workload)
    (option,) = answer.options
    s = option.strategy
    assert (s.data_parallel, s.tensor_parallel, s.context_parallel, option.count) == (2, 2, 4, 16)
    assert "cp4" in s.tag() and answer.model_dump(mode="json")["options"][0]["strategy"]["context_parallel"] == 4
    plan = values(option, "planner.fewest-gpus")
    # activations: 1/(tp·cp) of the replica's; optimizer states: ZeRO-1 over the 2 x 4 data x context ranks
    replica = values(option, "req.memory.full-training")
    assert plan["activations"] == pytest.approx(replica["activations_checkpointed"] / 8, rel=1e-12)
    assert plan["optimizer"] == pytest.approx(answer.memory.optimizer / 2 / 8, rel=1e-12)
    step = values(option, "bottleneck.interconnect.step")
    # keys and values of 8 KV heads x 128 dims in 16 bits (4,096 bytes a token, half per TP rank), 3/4 of the
    # 32,768 tokens to pass, three times per layer (forward K,V; backward K,V and their gradients), 32 layers
    assert step["cp_bytes"] == pytest.approx(3 * 32 * 32768 * 3 / 4 * 4096 / 2, rel=1e-12)
    assert step["cp_bandwidth"] == 450e9  # TP 2 x CP 4 inside the 8-GPU NVLink domain
    # hidden behind the attention compute (L·s·h of N + L·s·h per token): nothing exposed here
    share = 32 * 32768 * 4096 / (8_030_261_248 + 32 * 32768 * 4096)
    assert step["attention_share"] == pytest.approx(share, rel=1e-12)
    assert step["exposed_cp_s"] == max(0, step["cp_time_s"] - step["compute_time_s"] * share) == 0
    # gradients are reduced over the 8 data x context ranks
    assert step["reducers"] == 8


@pytest.mark.parametrize(("extra", "field"), [
    ({"task": "inference", "context_parallel": 2}, "context_parallel"),
    ({"context_parallel": 3, "seq_len": 4096}, "context_parallel"),  # does not divide the sequence
    ({"context_parallel": 2, "offload": "optimizer"}, "context_parallel"),
    ({"context_parallel": 4, "tensor_parallel": 4, "gpu_count": 8}, "gpu_count"),
])
def test_context_parallelism_is_a_training_pin_that_fits_the_workload(kb, extra, field):
    with pytest.raises(WorkloadError, match=field):
        kb.ask({"model": "llama-3-8b", "task": "pretrain", **extra})
