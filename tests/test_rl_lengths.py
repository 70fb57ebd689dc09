"""The response-length distribution of an RL step and the continuous-batching time of its generation."""

from __future__ import annotations

import math

import pytest

from gpukb.estimate import rl_lengths


@pytest.mark.parametrize(("mean", "cap"), [(932, 3968), (1024, 2048), (1900, 2048), (50, 8192)])
def test_the_clipped_exponential_has_the_stated_mean(mean: int, cap: int) -> None:
    mu = rl_lengths.scale(mean, cap)
    assert mu * -math.expm1(-cap / mu) == pytest.approx(mean, rel=1e-9)
    # its Weyl-point sample averages the mean too
    lens = rl_lengths.lengths(4096, mu, cap, 0)
    assert sum(lens) / len(lens) == pytest.approx(mean, rel=0.02)
    assert max(lens) <= cap


def test_no_mean_puts_every_response_at_the_cap() -> None:
    mu = rl_lengths.scale(2048, 2048)
    assert math.isinf(mu) and set(rl_lengths.lengths(100, mu, 2048, 0)) == {2048}
    assert rl_lengths.expected_longest(100, mu, 2048) == 2048


def test_the_longest_of_more_responses_is_longer_and_never_past_the_cap() -> None:
    mu = rl_lengths.scale(500, 100_000)  # nearly unclipped: E[max of n] = mu·H_n for an exponential
    for n in (1, 10, 100):
        harmonic = sum(1 / k for k in range(1, n + 1))
        assert rl_lengths.expected_longest(n, mu, 100_000) == pytest.approx(mu * harmonic, rel=1e-3)
    mu = rl_lengths.scale(932, 3968)
    assert rl_lengths.expected_longest(2048, mu, 3968) == pytest.approx(3968, rel=1e-3)


# a step reads 1 ms of weights plus 0.25 ms a running sequence; no KV reads, no floor, no prefill
FLAT = rl_lengths.Decoder(weights_s=1e-3, flop_s=0.0, kv_s=0.0, per_seq_s=2.5e-4, fixed_s=0.0, floor_s=0.0, prefill_s=0.0)


def test_a_full_batch_decodes_in_waves_and_a_thinning_one_at_the_single_sequence_step() -> None:
    # equal lengths, twice the concurrency: two waves at the step of four sequences (2 ms)
    assert rl_lengths.decode_time([100] * 8, 4, 0, FLAT) == pytest.approx(2 * 100 * 2e-3)
    # one long response after short ones: its tail runs at the one-sequence step (1.25 ms)
    assert rl_lengths.decode_time([10, 10, 10, 1000], 4, 0, FLAT) == pytest.approx(10 * 2e-3 + 990 * 1.25e-3)
    # a queued sequence starts as soon as one ends, not after the whole wave
    assert rl_lengths.decode_time([10, 100, 90], 2, 0, FLAT) == pytest.approx(100 * 1.5e-3)


def test_each_step_reads_the_running_sequences_caches_to_their_own_context() -> None:
    kv = rl_lengths.Decoder(weights_s=1e-3, flop_s=0.0, kv_s=1e-6, per_seq_s=0.0, fixed_s=0.0, floor_s=0.0,
                            prefill_s=0.5)
    # one response of 1,000 tokens after a 200-token prompt: its prefill, then steps reading 200..1,199 tokens
    assert rl_lengths.decode_time([1000], 1, 200, kv) == pytest.approx(0.5 + 1000 * 1e-3 + 1e-6 * (1000 * 200 + 999 * 1000 / 2))
    # a response admitted late starts from its own prompt, not from the context of the one it replaced
    late = rl_lengths.decode_time([10, 10], 1, 0, kv)
    assert late == pytest.approx(1.0 + 20 * 1e-3 + 2 * 1e-6 * 45)
    # under the host's floor a step takes the floor, until the caches it reads lift it above
    floored = rl_lengths.Decoder(weights_s=1e-3, flop_s=0.0, kv_s=1e-6, per_seq_s=0.0, fixed_s=0.0, floor_s=1.5e-3,
                                 prefill_s=0.0)
    expected = sum(max(1e-3 + 1e-6 * j, 1.5e-3) for j in range(1000))
    assert rl_lengths.decode_time([1000], 1, 0, floored) == pytest.approx(expected)


def test_a_mean_must_be_positive() -> None:
    with pytest.raises(ValueError, match="mean_response_len"):
        rl_lengths.scale(0, 2048)


def test_the_hosts_serial_work_adds_once_per_token_of_every_running_sequence() -> None:
    # a synchronously scheduled engine pays host_s for each running sequence at every step: summed over the
    # steps, once per decoded token, whatever the concurrency and however the batch thins
    hosted = rl_lengths.Decoder(weights_s=1e-3, flop_s=0.0, kv_s=0.0, per_seq_s=2.5e-4, fixed_s=0.0, floor_s=0.0,
                                prefill_s=0.0, host_s=2e-5)
    lens = [10, 10, 10, 1000, 300, 40]
    for concurrency in (1, 2, 6):
        extra = rl_lengths.decode_time(lens, concurrency, 0, hosted) - rl_lengths.decode_time(lens, concurrency, 0, FLAT)
        assert extra == pytest.approx(sum(lens) * 2e-5)
    # a full batch of 256 pays 5.1 ms a step on top of its GPU time, one sequence 20 us
    assert hosted.step(256, 0) - FLAT.step(256, 0) == pytest.approx(256 * 2e-5)
    assert hosted.step(1, 0) - FLAT.step(1, 0) == pytest.approx(2e-5)


def test_packing_puts_whole_sequences_into_bins_of_the_capacity() -> None:
    # every response at the cap: 3,968 + 128 tokens fill a 4,096-token bin alone, and two never share one
    assert rl_lengths.packed_bins(512, math.inf, 3968, 128, 4096) == 512
    assert rl_lengths.packed_bins(512, math.inf, 3968, 128, 2 * 4096) == 256
    # short responses share bins: first-fit decreasing needs at least the tokens over the capacity, and on a
    # clipped exponential no more than one bin in twenty beyond that
    mu = rl_lengths.scale(398, 3968)
    lens = [128 + max(1, round(rl_lengths.quantile((i + 0.5) / 512, mu, 3968))) for i in range(512)]
    least = math.ceil(sum(lens) / 4096)
    bins = rl_lengths.packed_bins(512, mu, 3968, 128, 4096)
    assert least <= bins <= least * 1.05
    assert bins < 512 / 6  # a bin holds about seven of them
    # a longer mean needs more bins for the same sequences
    assert rl_lengths.packed_bins(512, rl_lengths.scale(1500, 3968), 3968, 128, 4096) > bins


def test_the_hosts_fixed_work_adds_once_per_token_step_however_few_sequences_run() -> None:
    # a synchronously scheduled engine pays step_host_s at every token step, whatever the batch: a thinning tail pays
    # it on each of its steps, so the one long response below pays it 1000 times however many run beside it
    stepped = rl_lengths.Decoder(weights_s=1e-3, flop_s=0.0, kv_s=0.0, per_seq_s=2.5e-4, fixed_s=0.0, floor_s=0.0,
                                 prefill_s=0.0, step_host_s=4e-4)
    lens = [10, 10, 10, 1000, 300, 40]
    extra = {c: rl_lengths.decode_time(lens, c, 0, stepped) - rl_lengths.decode_time(lens, c, 0, FLAT) for c in (1, 6)}
    assert extra[1] == pytest.approx(sum(lens) * 4e-4)  # one sequence at a time: a step per token
    assert extra[6] == pytest.approx(max(lens) * 4e-4)  # all at once: a step per token of the longest
    # the same at one sequence and at 256: unlike the per-sequence part, it does not grow with the batch
    assert stepped.step(1, 0) - FLAT.step(1, 0) == pytest.approx(stepped.step(256, 0) - FLAT.step(256, 0))
    # it adds to the GPU's time rather than hiding under it: a step of one sequence takes 1.25 + 0.4 ms
    assert stepped.step(1, 0) == pytest.approx(1.65e-3)
