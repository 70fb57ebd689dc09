"""Serving: capacity, SLA targets, launch settings and cost of inference options, against hand computations."""

import math

H100_MEM = 85_520_809_984  # h100-sxm-80gb as the driver reports it (kb/gpus)
RESERVE, OVERHEAD, CHUNK = 0.10, 2e9, 8192  # kb/policies: reserve-fraction, runtime-overhead, prefill-chunk
W_7B_BF16 = 13_476_831_232  # llama-2-7b weights in bf16
KV_TOKEN_7B = 524_288  # 2 x 32 layers x 32 KV heads x 128 x 2 bytes
H_7B, V_7B = 4096, 32000


def usable(memory: float) -> float:
    return memory * (1 - RESERVE) + min(OVERHEAD, memory * RESERVE)


def test_capacity_on_one_gpu_by_hand(kb):
    (option,) = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h100-sxm-80gb"]}).options
    free = usable(H100_MEM) - W_7B_BF16 - OVERHEAD
    chunk_act = CHUNK * H_7B * 34  # one layer's activations for a full prefill chunk
    per_seq = KV_TOKEN_7B * 4096 + 4 * V_7B  # KV cache of 4096 tokens and fp32 last-token logits
    assert option.max_concurrency == math.floor((free - chunk_act) / per_seq) == 29
    assert option.max_context == math.floor((free - 4 * V_7B - chunk_act) / KV_TOKEN_7B) == 118_924


def test_capacity_is_consistent_with_the_fit(kb):
    """The requested batch and context fit, one more sequence does not, and the capacity is tight."""
    w = {"model": "llama-3-8b", "task": "inference", "gpus": ["l40s-48gb", "a100-sxm-80gb"], "seq_len": 8192,
         "batch_size": 4}
    for option in kb.ask(w).options:
        assert option.max_concurrency >= 4 and option.max_context >= 8192
        at = kb.ask({**w, "gpus": [option.gpu], "batch_size": option.max_concurrency,
                     "tensor_parallel": option.strategy.tensor_parallel, "gpu_count": option.count})
        assert at.options, option.gpu
        over = kb.ask({**w, "gpus": [option.gpu], "batch_size": option.max_concurrency + 1,
                       "tensor_parallel": option.strategy.tensor_parallel, "gpu_count": option.count})
        assert not over.options, option.gpu
        ctx = kb.ask({**w, "gpus": [option.gpu], "seq_len": option.max_context,
                      "tensor_parallel": option.strategy.tensor_parallel, "gpu_count": option.count})
        assert ctx.options and not kb.ask({**w, "gpus": [option.gpu], "seq_len": option.max_context + 1,
                                            "tensor_parallel": option.strategy.tensor_parallel,
                                            "gpu_count": option.count}).options


def test_capacity_divides_by_tensor_parallel_shards(kb):
    (option,) = kb.ask({"model": "llama-2-70b", "task": "inference", "gpus": ["a100-sxm-80gb"]}).options
    tp = option.strategy.tensor_parallel * option.strategy.pipeline_parallel
    assert tp == 2
    free = usable(kb.gpus["a100-sxm-80gb"].memory_bytes) - option.memory.weights - OVERHEAD
    kv_token = 2 * 80 * 8 * 128 * 2  # 80 layers, 8 KV heads of 128, bf16
    per_seq = kv_token * 4096 / tp + 4 * V_7B / option.strategy.tensor_parallel
    chunk_act = CHUNK * 8192 * 34 / option.strategy.tensor_parallel
    assert option.max_concurrency == math.floor((free - chunk_act) / per_seq)


def test_training_options_have_no_serving_capacity(kb):
    option = kb.ask({"model": "llama-2-7b", "task": "lora"}).options[0]
    assert option.max_concurrency is None and option.max_context is None
