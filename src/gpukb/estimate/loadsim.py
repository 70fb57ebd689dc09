"""Serving under load: a seeded discrete-event simulation of one replica's continuous-batching scheduler.

Requests arrive (Poisson or evenly spaced) with prompt and output lengths drawn about their means. Each engine step
runs every decoding request's next token and, within the step's token budget (chunked prefill), the next chunk of
the oldest prompts ('mixed', vLLM and TensorRT-LLM), or a step that has prompt tokens to run runs them alone, the
decoding requests waiting for the next step ('separate', SGLang: prefill first). Waiting requests are admitted while
the running ones are fewer than the engine's maximum and the KV cache has room: blocks allocated as tokens are
generated, the newest running request preempted and recomputed when none is left ('on_demand', vLLM and SGLang),
or a request's whole length reserved when it is admitted ('reserve_full', TensorRT-LLM's GUARANTEED_NO_EVICT).
A step's time is the roofline of what it runs (StepCost).

Between events (an arrival that can be admitted, a completion, the KV cache filling) a run of decode-only steps is
advanced in closed form: their times grow linearly with the context read, so k of them sum to a quadratic in k.
The run is bounded (the benchmark's number of prompts, REQUESTS unless the workload gives num_prompts; MAX_EVENTS
events) and deterministic for a seed: arrivals are drawn once at
unit rate and scaled, so the same requests arrive in the same order at every rate compared.
"""

from __future__ import annotations

import heapq
import math
import random
from collections import deque
from dataclasses import dataclass, field
from typing import NamedTuple

REQUESTS = 200  # requests simulated per rate unless num_prompts says: vLLM's nightly serving benchmarks send 200
# A prompt is prefilled in chunks of the step's token budget, a scheduler iteration each: past LONG_PROMPT tokens
# fewer requests are simulated (never under MIN_REQUESTS), so a run's iterations stay about as many as at LONG_PROMPT
LONG_PROMPT, MIN_REQUESTS = 16_384, 50
MAX_EVENTS = 200_000  # scheduler iterations with prefill, plus closed-form decode runs: the bound on any run
LENGTH_CAP = 4.0  # a drawn length never exceeds this multiple of its mean (an exponential's tail, truncated)
SEED = 0
BISECTIONS = 6  # the lowest rate tried is 1/64 of the replica's capacity; the search ends within 1/32 of it


@dataclass(frozen=True)
class StepCost:
    """One replica's step time as a roofline of what the step runs; seconds (per token, per context token) as the
    decode rule (rec.throughput.decode) computes them for this plan."""

    weights_s: float  # reading the weights a decode step reads
    prefill_weights_s: float  # reading them in a step that prefills (at the prefill's bandwidth share)
    linear_s: float  # the matrix multiplies of one token (compute)
    logits_s: float  # the output layer for one sampled position
    context_read_s: float  # reading one context token's KV cache in a decode step
    context_flop_s: float  # attention arithmetic of one query token against one context token
    elementwise_s: float  # a decode token's element-wise kernels
    prefill_elementwise_s: float  # a prompt token's
    tp_fixed_s: float  # tensor parallelism's per-step all-reduce latency
    tp_token_s: float  # and its traffic per token
    floor_s: float  # no step is shorter than the host takes to issue it
    host_s: float  # the host's time between steps, the GPU idle (an engine that does not overlap them)
    host_sequence_s: float  # and what it grows by for each sequence a step samples
    per_context: float = field(init=False, repr=False, compare=False)
    shortest: float = field(init=False, repr=False, compare=False)  # the floor and the host's fixed time after it

    def step(self, decoding: int, context: float, prefill: int, prefill_context: float, sampled: int) -> float:
        """A step decoding `decoding` sequences of `context` tokens in all and prefilling `prefill` prompt tokens
        whose attention spans `prefill_context` token pairs; `sampled` positions turned into logits."""
        tokens = decoding + prefill
        arithmetic = self.linear_s * tokens + self.logits_s * sampled
        # a decode step takes the longer of its reads and its arithmetic; a step that prefills adds the two, as the
        # decode rule's prefill does (measured time to first token grows linearly from about one weight read)
        matmul = self.prefill_weights_s + arithmetic if prefill else max(self.weights_s, arithmetic)
        attention = self.per_context * context + self.context_flop_s * prefill_context
        elementwise = self.elementwise_s * decoding + self.prefill_elementwise_s * prefill
        tp = (self.tp_fixed_s + self.tp_token_s * tokens) if self.tp_fixed_s else 0.0
        return max(matmul + attention + elementwise + tp, self.floor_s) + self.host_s + self.host_sequence_s * sampled

    def __post_init__(self) -> None:
        # a decode step's attention per context token: the longer of its reads and its arithmetic (read per step)
        object.__setattr__(self, "per_context", max(self.context_read_s, self.context_flop_s))
        object.__setattr__(self, "shortest", self.floor_s + self.host_s)

    def decode_fixed(self, decoding: int) -> float:
        """A decode-only step's time bar its attention and the floor: the step is this + per_context x context, or
        `shortest` where that is longer."""
        matmul = max(self.weights_s, (self.linear_s + self.logits_s) * decoding)
        tp = (self.tp_fixed_s + self.tp_token_s * decoding) if self.tp_fixed_s else 0.0
        return matmul + self.elementwise_s * decoding + tp + self.host_s + self.host_sequence_s * decoding


class Limits(NamedTuple):
    """The scheduler's bounds on one replica."""

    max_num_seqs: int
    max_batched_tokens: int
    kv_tokens: int  # the KV cache's capacity in tokens (whole blocks)
    block_tokens: int
    reserve_full: bool
    separate_prefill: bool = False  # a step with prompt tokens runs no decode tokens (SGLang's prefill-first loop)


class Trace(NamedTuple):
    """The requests of one run at unit rate: arrival times (s at 1 request/s), prompt and output lengths."""

    arrivals: tuple[float, ...]
    prompts: tuple[int, ...]
    outputs: tuple[int, ...]


def _lengths(rng: random.Random, mean: int, shape: str, n: int) -> tuple[int, ...]:
    if shape == "fixed":
        return (mean,) * n
    cap = max(1, round(mean * LENGTH_CAP))
    if shape == "uniform":
        return tuple(rng.randint(1, max(1, 2 * mean - 1)) for _ in range(n))
    return tuple(min(cap, max(1, round(rng.expovariate(1 / mean)))) for _ in range(n))


def requests_for(prompt: int, wanted: int = REQUESTS) -> int:
    """How many requests a run simulates for prompts of this mean length, of the `wanted` a benchmark sends: all of
    them up to LONG_PROMPT tokens, fewer past it (never under MIN_REQUESTS, nor more than wanted)."""
    if prompt <= LONG_PROMPT:
        return wanted
    return min(wanted, max(MIN_REQUESTS, round(wanted * LONG_PROMPT / prompt)))


def make_trace(prompt: int, output: int, prompt_shape: str, output_shape: str, arrival: str,
               requests: int | None = None, seed: int = SEED, wanted: int | None = None) -> Trace:
    """The run's requests: `requests` of them where given, else those requests_for() keeps of `wanted` (a
    benchmark's number of prompts; REQUESTS where the workload names none)."""
    requests = requests_for(prompt, wanted or REQUESTS) if requests is None else requests
    rng = random.Random(seed)
    if arrival == "constant":
        arrivals = tuple(float(i) for i in range(requests))
    else:
        t, times = 0.0, []
        for _ in range(requests):
            times.append(t)
            t += rng.expovariate(1.0)
        arrivals = tuple(times)
    return Trace(arrivals, _lengths(rng, prompt, prompt_shape, requests), _lengths(rng, output, output_shape, requests))


class Run(NamedTuple):
    """What one rate's run measured, per request (seconds), and whether it ran to the end."""

    ttft: tuple[float, ...]
    tpot: tuple[float, ...]
    e2e: tuple[float, ...]
    finished: bool
    makespan_s: float
    preemptions: int
    requests: int  # sent


def percentile(values: tuple[float, ...], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default, as vLLM's benchmark reports)."""
    if not values:
        return math.nan
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low = math.floor(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def simulate(cost: StepCost, limits: Limits, trace: Trace, rate: float) -> Run:
    """Serve the trace's requests arriving at `rate` per second on one replica."""
    n = len(trace.arrivals)
    arrive = [a / rate for a in trace.arrivals]
    todo = list(trace.prompts)  # prompt tokens still to prefill (the whole context again after a preemption)
    target = list(trace.prompts)  # what the current prefill covers
    left = list(trace.outputs)  # output tokens still to generate
    reserved = [0] * n  # reserve_full: KV tokens a request holds from admission to its end
    first, done = [math.nan] * n, [math.nan] * n
    end_ctx, finish_at = [0] * n, [0] * n  # a decoding request's final context and the decode step it ends at
    waiting: deque[int] = deque()
    prefilling: list[int] = []  # admitted, prompt not yet all prefilled, oldest first
    heap: list[tuple[int, int]] = []  # (finish step, request); entries of preempted requests are skipped
    order: list[int] = []  # decoding requests in admission order: the newest is preempted first
    decoding: set[int] = set()
    now, steps, b, ctx = 0.0, 0, 0, 0.0  # time, decode steps, decoding sequences, their context in all
    held, reserving = 0, 0  # KV tokens held by prompts being prefilled (on_demand), reserved in all (reserve_full)
    nxt = finished = events = preempted = 0
    half_block = (limits.block_tokens - 1) / 2  # a sequence's last block is on average half empty
    reserve_full, kv, block, max_seqs = limits.reserve_full, limits.kv_tokens, limits.block_tokens, limits.max_num_seqs
    alone = limits.separate_prefill

    while finished < n and events < MAX_EVENTS:
        events += 1
        while nxt < n and arrive[nxt] <= now:
            waiting.append(nxt)
            nxt += 1
        if not b and not prefilling and not waiting:
            now = arrive[nxt]
            continue
        # the step's prompt tokens: running prefills first, then newly admitted requests, within the token budget
        start = limits.max_batched_tokens if alone else limits.max_batched_tokens - b
        budget = start
        chunks: list[tuple[int, int]] = []
        for r in prefilling:
            if budget <= 0:
                break
            take = todo[r] if todo[r] < budget else budget
            chunks.append((r, take))
            budget -= take
        while waiting and budget > 0 and b + len(prefilling) < max_seqs:
            r = waiting[0]
            need = todo[r] + left[r] if reserve_full else todo[r]
            blocks = -(-need // block) * block
            if (reserving if reserve_full else ctx + b * half_block + held) + blocks > kv:
                break
            waiting.popleft()
            prefilling.append(r)
            target[r] = todo[r]
            if reserve_full:
                reserved[r] = blocks
                reserving += blocks
            else:
                held += todo[r]
            take = todo[r] if todo[r] < budget else budget
            chunks.append((r, take))
            budget -= take
        if not chunks:
            if not b:  # nothing runs: the head of the queue needs more memory than the whole cache
                break
            room = kv - (reserving if reserve_full else ctx + b * half_block + held)
            now, k = _decode_run(cost, limits, heap[0][0] - steps, arrive, now, nxt, b, ctx, not waiting
                                 and b + len(prefilling) < max_seqs, room)
            steps += k
            ctx += b * k
        else:
            prefill = start - budget
            # query x key pairs, as the decode rule counts a prompt's attention (every token against the whole prompt)
            pairs, completing = 0.0, 0
            for r, take in chunks:
                pairs += take * (target[r] - todo[r] + take)
                completing += take == todo[r]
            if alone:  # the running requests wait: no decode step is taken
                now += cost.step(0, 0.0, prefill, pairs, completing)
            else:
                now += cost.step(b, ctx, prefill, pairs, b + completing)
                steps += 1
                ctx += b
            for r, take in chunks:
                todo[r] -= take
                if todo[r]:
                    continue
                prefilling.remove(r)
                if math.isnan(first[r]):
                    first[r] = now
                left[r] -= 1  # the prefill's step samples a token
                held -= 0 if reserve_full else target[r]
                if not left[r]:
                    done[r], finished = now, finished + 1
                    reserving -= reserved[r]
                    continue
                finish_at[r], end_ctx[r] = steps + left[r], target[r] + 1 + left[r]
                heapq.heappush(heap, (finish_at[r], r))
                decoding.add(r)
                order.append(r)
                b += 1
                ctx += target[r] + 1
        while heap and heap[0][0] <= steps:
            at, r = heapq.heappop(heap)
            if r not in decoding or finish_at[r] != at:
                continue
            decoding.discard(r)
            order.remove(r)
            b -= 1
            ctx -= end_ctx[r]
            reserving -= reserved[r]
            done[r], finished = now, finished + 1
        # on_demand: out of blocks, the newest running request gives its cache back and waits to be recomputed
        while not reserve_full and b > 1 and ctx + b * half_block + held > kv:
            r = order.pop()
            decoding.discard(r)
            remaining = finish_at[r] - steps
            context = end_ctx[r] - remaining
            b -= 1
            ctx -= context
            todo[r], left[r] = context, remaining
            waiting.appendleft(r)
            preempted += 1
    ttft = tuple(first[r] - arrive[r] for r in range(n) if not math.isnan(first[r]))
    e2e = tuple(done[r] - arrive[r] for r in range(n) if not math.isnan(done[r]))
    tpot = tuple((done[r] - first[r]) / (trace.outputs[r] - 1) for r in range(n)
                 if not math.isnan(done[r]) and trace.outputs[r] > 1)
    return Run(ttft, tpot, e2e, finished == n, now, preempted, n)


def _decode_run(cost: StepCost, limits: Limits, to_finish: int, arrive: list[float], now: float, nxt: int, b: int,
                ctx: float, admissible: bool, room: float) -> tuple[float, int]:
    """Decode-only steps up to the next event, in closed form: (the time after them, how many). A step takes
    fixed + slope x context (or the floor), the context growing by b a step, so k steps sum to a quadratic in k."""
    fixed, slope = cost.decode_fixed(b), cost.per_context
    shortest = cost.shortest + cost.host_sequence_s * b  # a floored step, and the host's time after it
    k = max(1, to_finish)
    if not limits.reserve_full:
        k = max(1, min(k, int(room / b) + 1))  # the step whose tokens no longer fit ends the run
    if admissible and nxt < len(arrive):
        gap = arrive[nxt] - now  # the first step ending at or after the next arrival
        qa, qb = slope * b / 2, fixed + slope * ctx - slope * b / 2
        root = (-qb + math.sqrt(qb * qb + 4 * qa * gap)) / (2 * qa) if qa > 0 else gap / max(qb, 1e-12)
        # steps are never shorter than the first: that many reach the arrival even where the floor holds
        k = max(1, min(k, math.ceil(root), math.ceil(gap / max(shortest, fixed + slope * ctx))))
    floored = 0  # host-bound steps take the floor until the context outgrows it
    if fixed + slope * ctx < shortest:
        grow = slope * b
        floored = k if grow <= 0 else min(k, math.ceil((shortest - fixed - slope * ctx) / grow))
    rest, start = k - floored, ctx + b * floored
    return now + floored * shortest + rest * fixed + slope * (rest * start + b * rest * (rest - 1) / 2), k


class Figures(NamedTuple):
    """The percentiles of one run."""

    ttft_p50_s: float
    ttft_p99_s: float
    tpot_p50_s: float
    tpot_p99_s: float
    e2e_p50_s: float
    e2e_p99_s: float
    finished: bool


def figures(run: Run) -> Figures:
    return Figures(percentile(run.ttft, 50), percentile(run.ttft, 99), percentile(run.tpot, 50),
                   percentile(run.tpot, 99), percentile(run.e2e, 50), percentile(run.e2e, 99), run.finished)


def capacity(cost: StepCost, limits: Limits, prompt: int, output: int) -> tuple[float, int]:
    """The replica's steady-state throughput in requests/s and the batch it runs at: as many sequences as the
    engine and its KV cache hold (their average context prompt + output/2 on demand, the whole length reserved),
    each step prefilling the prompt tokens that keep that batch full (in a step of their own where the engine runs
    prefills alone). Past this rate the queue grows without bound."""
    held = prompt + output if limits.reserve_full else prompt + output / 2 + (limits.block_tokens - 1) / 2
    batch = max(1, min(limits.max_num_seqs, int(limits.kv_tokens // held)))
    per_step = batch * prompt / output  # prompt tokens a step must prefill to keep the batch full
    context = batch * (prompt + output / 2)
    if limits.separate_prefill:
        step = (cost.step(batch, context, 0, 0.0, batch)
                + cost.step(0, 0.0, round(per_step), per_step * prompt, round(batch / output)))
    else:
        step = cost.step(batch, context, round(per_step), per_step * prompt, batch)
    return batch / (output * step), batch


def meets(fig: Figures, targets: dict[str, float]) -> bool:
    """Every target (seconds, by figure name) met, and the run finished."""
    return fig.finished and all(getattr(fig, name) <= limit for name, limit in targets.items())


def max_rate(cost: StepCost, limits: Limits, trace: Trace, targets: dict[str, float], ceiling: float,
             probe: tuple[float, Run] | None = None) -> float:
    """The highest rate per replica, up to `ceiling` (its capacity), whose run meets the targets: a bisection of
    fixed length from [0, ceiling], narrowed first by `probe` (a rate already simulated, and its run). Looser
    targets never give a lower rate: every probe depends only on the interval so far, and where the stricter
    targets are met, so are the looser, so the looser search never moves below the stricter one."""
    if not targets:
        return ceiling
    if meets(figures(simulate(cost, limits, trace, ceiling)), targets):
        return ceiling
    if not meets(figures(simulate(cost, limits, trace, ceiling / 2**BISECTIONS)), targets):
        return 0.0  # not even at the bisection's lowest rate: a request alone misses them
    low, high = ceiling / 2**BISECTIONS, ceiling
    if probe is not None and low < probe[0] < high:
        low, high = (probe[0], high) if meets(figures(probe[1]), targets) else (low, probe[0])
    for _ in range(BISECTIONS - 1):
        mid = (low + high) / 2
        if meets(figures(simulate(cost, limits, trace, mid)), targets):
            low = mid
        else:
            high = mid
    return low
