"""How long an RL step's generation lasts when its responses differ in length.

response_len is the cap (verl's data.max_response_length, NeMo RL's max_new_tokens, OpenRLHF's
generate_max_len): the engine stops a response there. mean_response_len, when given, is the published or
measured average; without it every response is taken to reach the cap (an upper bound). Between the two,
lengths follow the distribution of most entropy for a stated mean on [0, inf), the exponential, clipped
at the cap as the engine clips it: the responses that would run longer end at the cap together, the mass
verl logs as response_length/clip_ratio.

A synchronous step waits for its longest response (verl docs/advance/one_step_off.md: "model updates must
wait for the longest output in the generation phase to complete"), and a continuous-batching engine (vLLM,
SGLang) admits a queued sequence as soon as one finishes, so its batch stays full while the queue lasts and
thins as the last responses run on. Each engine's share is timed token step by token step from the decode
rule's own terms (a Decoder): the weights read once a step, each running sequence's KV cache read to its own
context (the long responses of the tail read the longest caches), per-sequence work on top, and the engine's
host work between two steps, a fixed part and a part for each running sequence, which a synchronously scheduled
engine does not overlap with the GPU's.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from functools import lru_cache

# 1/golden ratio: the Weyl sequence frac(i / phi) spreads n points evenly over [0, 1) in an order with no
# trend, a deterministic stand-in for n random draws (the order a batch's lengths arrive in is random)
_WEYL = (math.sqrt(5) - 1) / 2
_STEPS = 400  # Simpson intervals for the expected longest response (even)


def scale(mean: float, cap: float) -> float:
    """The exponential's mean mu whose clipped mean mu·(1 - exp(-cap/mu)) is `mean`; inf when mean >= cap
    (every response at the cap). Bisection on a function rising in mu: the same answer for the same input."""
    if mean >= cap:
        return math.inf
    if mean <= 0:
        raise ValueError(f"mean_response_len must be positive, got {mean}")
    lo, hi = mean, mean
    while hi * -math.expm1(-cap / hi) < mean:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mid * -math.expm1(-cap / mid) < mean else (lo, mid)
    return (lo + hi) / 2


def quantile(u: float, mu: float, cap: float) -> float:
    """The length at cumulative share u of the clipped exponential."""
    return cap if math.isinf(mu) else min(-mu * math.log1p(-u), cap)


def expected_longest(n: int, mu: float, cap: float) -> float:
    """E[max of n lengths] = integral over [0, cap] of 1 - F(t)^n, F(t) = 1 - exp(-t/mu) (Simpson's rule)."""
    if math.isinf(mu) or n <= 0:
        return cap
    h = cap / _STEPS

    def tail(t: float) -> float:
        return 1 - (-math.expm1(-t / mu)) ** n

    inner = sum((4 if i % 2 else 2) * tail(i * h) for i in range(1, _STEPS))
    return min(cap, h / 3 * (tail(0) + inner + tail(cap)))


def lengths(n: int, mu: float, cap: float, longest: float) -> list[int]:
    """n response lengths in arrival order: the clipped exponential at the Weyl points, the largest set to
    `longest` (the step's expected longest, which some engine holds and the phase waits for)."""
    out = [quantile(((i + 1) * _WEYL) % 1.0, mu, cap) for i in range(n)]
    top = max(range(n), key=out.__getitem__)
    out[top] = max(out[top], longest)
    return [max(1, round(x)) for x in out]


# The same update packs the same way for every layout and GPU type an RL ask compares (55 calls of ~2 ms each for
# one GRPO ask of 512-sequence updates): packed once per set of arguments.
@lru_cache(maxsize=256)
def packed_bins(n: int, mu: float, cap: float, prompt: int, capacity: int) -> int:
    """Micro-batches a trainer packs n sequences into (NeMo RL's sequence packing, its default on Megatron-Core:
    nemo_rl/distributed/batched_data_dict.py shard_by_batch_size, bins of train_mb_tokens = max_total_sequence_length
    x train_micro_batch_size tokens): the sequences are prompts of `prompt` tokens and responses at the clipped
    exponential's n mid-quantiles (a deterministic stand-in for n draws), packed first-fit decreasing, each into
    the first bin it fits, a bin opened when none has room."""
    sizes = sorted((prompt + max(1, round(quantile((i + 0.5) / n, mu, cap))) for i in range(n)), reverse=True)
    room: list[int] = []  # what each open bin has left
    for size in sizes:
        size = min(size, capacity)
        slot = next((j for j, r in enumerate(room) if r >= size), None)
        if slot is None:
            room.append(capacity - size)
        else:
            room[slot] -= size
    return len(room)


@dataclass(frozen=True)
class Decoder:
    """One engine's token step, from the decode rule's own terms (rec.throughput.decode): the matrix multiplies
    (the longer of reading the weights and their arithmetic for b sequences), the attention reading each running
    sequence's KV cache to its own context, per-sequence element-wise work and tensor-parallel traffic, a fixed
    part (the all-reduces' latency), the host's floor under a step, and the host's work between steps that a
    synchronously scheduled engine does while the GPU waits: a fixed part each step (scheduling the batch, updating
    its state, preparing its inputs) and a part per running sequence (scheduling it, preparing its inputs, taking
    its sampled token)."""

    weights_s: float  # reading the weights once
    flop_s: float  # the multiplies' arithmetic for one sequence
    kv_s: float  # reading one context token's KV cache
    per_seq_s: float  # element-wise kernels and tensor-parallel bytes of one sequence
    fixed_s: float  # tensor-parallel all-reduce latency
    floor_s: float  # the shortest step the host issues
    prefill_s: float  # prefilling one sequence's prompt
    host_s: float = 0.0  # the host's work per running sequence between two steps, not overlapped with the GPU's
    step_host_s: float = 0.0  # the host's fixed work between two steps, whatever the batch, not overlapped either

    def base(self, b: int) -> float:
        """A step of b sequences, their KV cache reads aside: the GPU's time and the host's serial work."""
        return (max(self.weights_s, b * self.flop_s) + self.fixed_s + self.step_host_s
                + b * (self.per_seq_s + self.host_s))

    def step(self, b: int, context: float) -> float:
        """A token step with b sequences running whose contexts sum to `context` tokens."""
        return max(self.base(b) + context * self.kv_s, self.floor_s)


def decode_time(lens: list[int], concurrency: int, prompt: int, engine: Decoder) -> float:
    """Seconds for one engine to generate `lens` (prompts of `prompt` tokens) with at most `concurrency`
    sequences at once: each admitted as a running one ends, prefilled, then decoded a token a step, every step
    timed at the sequences running and their contexts then."""
    if not lens:
        return 0.0
    c = max(1, concurrency)
    running: list[tuple[int, int]] = []  # (the token step it ends at, the step it started at) per running sequence
    started = 0  # the sum of the running sequences' start steps: their contexts sum to b·(prompt + step) - started
    queue = iter(lens)
    step, seconds = 0, engine.prefill_s * len(lens)
    for length in queue:
        heapq.heappush(running, (length, 0))
        if len(running) == c:
            break
    while running:
        end, b = running[0][0], len(running)
        k = end - step
        first = b * (prompt + step) - started  # the contexts' sum at this segment's first step; it grows by b a step
        seconds += _segment(engine, b, first, k)
        step = end
        while running and running[0][0] == step:
            started -= heapq.heappop(running)[1]
            nxt = next(queue, None)
            if nxt is not None:
                heapq.heappush(running, (step + nxt, step))
                started += step
    return seconds


def _segment(engine: Decoder, b: int, first: float, k: int) -> float:
    """k token steps of b sequences whose contexts sum to `first` at the first and grow by b a step: the steps
    under the host's floor take the floor, the rest their GPU time (a sum in closed form, the contexts only grow)."""
    base, lift = engine.base(b), engine.kv_s * b
    gap = engine.floor_s - base - engine.kv_s * first  # how far the first step's GPU time is under the floor
    floored = 0 if gap < 0 else (k if lift <= 0 else min(k, math.floor(gap / lift) + 1))
    rest = k - floored
    start = first + b * floored
    return floored * engine.floor_s + rest * base + engine.kv_s * (rest * start + b * rest * (rest - 1) / 2)
