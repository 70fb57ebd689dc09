"""Error bands: every predicted number with enough published measurements behind it carries the spread of
gpukb's own misses on them (gpukb.answer.bands), derived from kb/measurements/ once per knowledge base."""

import dataclasses
import json
import math
import statistics

import pytest
from typer.testing import CliRunner

from gpukb.answer import bands
from gpukb.answer.answer import ErrorBand
from gpukb.answer.bandtext import banded
from gpukb.cli import app
from gpukb.estimate.validation import Point, bands_of, validate

runner = CliRunner()
# exactly 2 H100s (one node): without them the pre-training horizon sizes a multi-node cluster
PRETRAIN = {"model": "llama-2-7b", "task": "pretrain", "tokens": "2T", "gpus": ["h100-sxm-80gb"], "gpu_count": 2,
            "placement": "all"}


@pytest.fixture(scope="module")
def shipped(kb):
    return validate(kb)


def test_the_interval_is_the_split_conformal_order_statistics():
    ratios = [1 + i / 100 for i in range(26)]  # 1.00 .. 1.25
    # n = 26 at 80%: the floor(27 * 0.1) = 2nd and the ceil(27 * 0.9) = 25th smallest
    assert bands.interval(reversed(ratios), 0.8) == (1.01, 1.24)
    # with 8 points both ends are the extremes: nothing is extrapolated
    assert bands.interval([3, 1, 2, 5, 4, 8, 7, 6], 0.8) == (1, 8)


def test_each_band_is_the_interval_of_its_fields_ratios_on_the_shipped_points(shipped, kb):
    """Recomputed here from the validation points: tokens/s of single-node training and time per output token
    (the inverse of decode tokens/s, so its ratios are inverted)."""
    table = bands_of(kb).table
    coverage, least = kb.policy("band-coverage"), kb.policy("band-min-points")
    single = [p.ratio for p in shipped.points if p.ratio and p.regime == "single-node"
              and p.quantity in ("training_tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu",
                                 "mfu")]
    band = table[("tokens_per_s", "training", "single-node")]
    assert band.points == len(single) >= least
    assert (band.low, band.high) == bands.interval(single, coverage)
    tpot = [1 / p.ratio for p in shipped.points if p.ratio and p.quantity == "decode_tokens_per_s"]
    band = table[("tpot_s", "inference", bands.ALL)]
    assert (band.low, band.high) == bands.interval(tpot, coverage) and band.points == len(tpot)
    for band in table.values():  # too few points: no band is invented
        assert band.banded == (band.points >= least)


def test_an_answer_carries_a_band_for_each_predicted_number_in_its_units(kb):
    answer = kb.ask(PRETRAIN)
    best = answer.best
    table = bands_of(kb).table
    b = best.bands["tokens_per_s"]
    own = table[("tokens_per_s", "training", "single-node")]  # 2 H100s: one node
    assert b.points == own.points and b.coverage == pytest.approx(0.8)
    # the true value lies between prediction / high ratio and prediction / low ratio
    assert b.low == pytest.approx(best.tokens_per_s / own.high) and b.high == pytest.approx(best.tokens_per_s / own.low)
    assert b.low < best.tokens_per_s < b.high
    for name in ("time_to_train_s", "cost_usd", "per_gpu_bytes", "mfu"):
        assert name in best.bands and best.bands[name].low < getattr(best, name) * 1.5
    assert best.bands["count"].low is None and best.bands["count"].points < kb.policy("band-min-points")
    data = json.loads(answer.model_dump_json())["options"][0]["bands"]
    assert set(data["tokens_per_s"]) == {"low", "high", "coverage", "points"}
    assert data["count"]["low"] is None and data["count"]["points"] == 2
    inference = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h100-sxm-80gb"]}).best
    assert {"tokens_per_s", "ttft_s", "tpot_s", "per_gpu_bytes"} <= set(inference.bands)
    assert "time_to_train_s" not in inference.bands


def test_multi_node_training_has_its_own_band(kb):
    best = kb.ask({"model": "llama-2-70b", "task": "pretrain", "gpus": ["h100-sxm-80gb"], "gpu_count": 64,
                   "placement": "all"}).best
    assert best.strategy.nodes > 1
    assert best.bands["tokens_per_s"].regime == "multi-node"
    assert best.bands["tokens_per_s"].points == bands_of(kb).table[("tokens_per_s", "training", "multi-node")].points


def test_the_bands_are_derived_from_the_measurements_once_per_knowledge_base(kb, monkeypatch):
    first = bands_of(kb)
    monkeypatch.setattr(bands, "compute", lambda *a, **k: pytest.fail("bands derived again"))
    kb.ask(PRETRAIN)
    kb.ask(PRETRAIN)
    assert bands_of(kb) is first
    # an option's bands are made when read, not by the ask: an ask that reads none pays nothing for them
    best = kb.ask(PRETRAIN).best
    assert "bands" not in best.__dict__ and best.bands and "bands" in best.__dict__
    monkeypatch.undo()
    # a knowledge base with other measurements derives bands of its own: they are data, not typed in
    kept = {k: m for k, m in kb.measurements.items() if m.source != "torchtitan-performance-2025-01"}
    other = dataclasses.replace(kb, tables={**kb.tables, "measurements": kept})
    assert other.derived == {}
    mine, theirs = bands_of(kb).table, bands_of(other).table
    assert mine[("per_gpu_bytes", "any", bands.ALL)].points > theirs[("per_gpu_bytes", "any", bands.ALL)].points


def test_a_knowledge_base_derives_its_bands_only_when_an_option_s_bands_are_read(kb):
    # without the packaged copy (GPUKB_NO_CACHE, a read-only home) asking must not run every measurement first
    fresh = dataclasses.replace(kb)
    answer = fresh.ask(PRETRAIN)
    assert fresh.derived == {}
    assert answer.best.bands["tokens_per_s"].points == bands_of(kb).table[("tokens_per_s", "training",
                                                                           "single-node")].points
    assert set(fresh.derived) == {"bands"}
    assert fresh.ask(PRETRAIN) == fresh.ask(PRETRAIN)  # answers keep what makes their bands, and still compare


def _point(ratio, source, quantity="ttft_s"):
    return Point(f"{source}-{ratio}", quantity, 1.0, ratio, ratio, source, "g", regime="batch-1")


def test_a_source_never_sets_its_own_band_in_the_calibration():
    # ten sources agree within 5%; one source is off by 2x on each of its points
    points = [_point(1 + i / 100, f"s{i}") for i in range(-5, 5)] + [_point(2.0, "odd"), _point(2.1, "odd")]
    cal = bands.calibrate(points, 0.8, 8)
    inside, total = cal.checked["ttft_s"]
    assert total == 12
    assert inside <= 10  # the odd source's points are judged by the other sources' band and fall outside
    with_itself = bands.derive(bands.samples(points), 0.8, 8)[("ttft_s", "inference", bands.ALL)]
    assert with_itself.high >= 2.0  # whereas the band drawn from all points stretches to hold them


def test_the_stated_coverage_holds_on_held_out_sources(shipped, kb):
    cal = shipped.bands.calibration
    assert cal.total >= 50  # most points are checked against other sources' bands
    assert cal.share >= kb.policy("band-calibration-floor")
    assert cal.coverage == kb.policy("band-coverage")


def test_validate_prints_the_bands_and_their_held_out_coverage():
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 0, result.output
    assert "held-out coverage (leave-one-source-out" in result.output
    assert "tokens_per_s" in result.output and "too few points" in result.output
    data = json.loads(runner.invoke(app, ["validate", "--format", "json"]).output)
    assert data["calibration"]["share"] >= 0.7 and data["calibration"]["checked"] > 0
    assert any(b["field"] == "tokens_per_s" and b["low"] is not None for b in data["bands"])


def test_the_command_line_prints_each_band_with_its_runs(kb):
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "pretrain", "--tokens", "2T",
                                 "--gpu", "h100-sxm-80gb", "--gpu-count", "2", "--placement", "all"])
    assert result.exit_code == 0, result.output
    assert "Error bands of h100-sxm-80gb" in result.output
    best = kb.ask(PRETRAIN).best
    band, runs = best.bands["tokens_per_s"], bands_of(kb).table[("tokens_per_s", "training", "single-node")].points
    line = f"tokens/s: {banded('tokens_per_s', best.tokens_per_s, band)}"  # 19,400 tokens/s (15,700–23,400, 80% of 29 ...
    assert line.startswith(f"tokens/s: {float(f'{best.tokens_per_s:.3g}'):,.0f} tokens/s (")
    assert f"80% of {runs} measured runs)" in line
    assert line in result.output
    assert "too few for a band" in result.output


def test_a_band_reads_in_the_units_of_its_value():
    band = ErrorBand(low=17_812.0, high=23_389.0, coverage=0.8, points=26)
    assert banded("tokens_per_s", 20_853.0, band) == "20,900 tokens/s (17,800–23,400, 80% of 26 measured runs)"
    assert banded("ttft_s", 0.1504, ErrorBand(low=0.1, high=0.2, coverage=0.8, points=21)) == \
        "150 ms (100–200, 80% of 21 measured runs)"
    assert "too few" in banded("count", 2, ErrorBand(low=None, high=None, coverage=0.8, points=2))
    assert math.isfinite(band.low)


@pytest.mark.parametrize("workload", [
    {"model": "llama-2-7b", "task": "pretrain", "tokens": "2T"},  # GPU-hours points all under-predict
    {"model": "llama-3-8b", "task": "full_finetune", "tokens": "10B", "gpu_count": 64, "placement": "all"},
    {"model": "llama-2-7b", "task": "inference", "batch_size": 16},
])
def test_every_band_holds_its_own_estimate(kb, workload):
    answer = kb.ask(workload)
    checked = 0
    for option in answer.options:
        for name, band in option.bands.items():
            value = getattr(option, name)
            if band.low is None or value is None:
                continue
            assert band.low <= value <= band.high, (option.gpu, name, band.low, value, band.high)
            checked += 1
    assert checked


def test_validate_reports_the_bias_of_every_quantity_and_every_band_interval_holds_1(kb):
    v = validate(kb).to_json()
    for quantity, summary in v["by_quantity"].items():
        assert summary["bias"] is not None and summary["bias"] > 0, quantity
    hours = [p["ratio"] for p in v["points"] if p["quantity"] == "gpu_hours"]
    assert v["by_quantity"]["gpu_hours"]["bias"] == pytest.approx(statistics.median(hours))
    for band in v["bands"]:
        if band["interval"] is not None:
            low, high = band["interval"]
            assert low <= 1 <= high and low <= band["low"] and high >= band["high"], band
