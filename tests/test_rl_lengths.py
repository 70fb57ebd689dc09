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


def test_a_full_batch_decodes_in_waves_and_a_thinning_one_at_the_single_sequence_rate() -> None:
    # equal lengths, twice the concurrency: two waves at the full step time
    assert rl_lengths.decode_time([100] * 8, 4, 0.001, 0.002) == pytest.approx(2 * 100 * 0.002)
    # one long response after short ones: its tail runs at the one-sequence step
    t = rl_lengths.decode_time([10, 10, 10, 1000], 4, 0.001, 0.004)
    assert t == pytest.approx(10 * 0.004 + 990 * 0.001)
    # a queued sequence starts as soon as one ends, not after the whole wave
    assert rl_lengths.decode_time([10, 100, 90], 2, 0.001, 0.002) == pytest.approx(100 * 0.002)


def test_a_mean_must_be_positive() -> None:
    with pytest.raises(ValueError, match="mean_response_len"):
        rl_lengths.scale(0, 2048)
