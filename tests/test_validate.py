"""`gpukb validate`: published measurements as knowledge, predicted through ask(), gated by policy."""

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.lint import lint
from gpukb.estimate.validation import FOOTPRINTS, Point, Summary, Validation, validate
from kbfiles import edit_entry, make_repo

runner = CliRunner()


@pytest.fixture(scope="module")
def shipped():
    return validate(gpukb.load_kb())


def test_the_shipped_measurements_cover_what_the_calibration_needs(kb):
    points = list(kb.measurements.values())
    assert len(points) >= 25 and len({m.source for m in points}) >= 8
    quantities = {m.quantity for m in points}
    assert {"training_tokens_per_s_per_gpu", "gpu_hours", "decode_tokens_per_s", "peak_memory_per_gpu"} <= quantities
    gpus = {g for m in points for g in m.workload["gpus"]}
    assert {"a100-sxm-80gb", "h100-sxm-80gb", "rtx-4090-24gb"} <= gpus
    tasks = {m.workload["task"] for m in points}
    assert {"pretrain", "full_finetune", "lora", "qlora", "inference"} <= tasks
    for m in points:  # every point names where in its source the number is
        assert m.locator and m.quote and kb.sources[m.source]


def test_the_shipped_set_passes_the_thresholds_in_the_policies(shipped, kb):
    assert shipped.thresholds == {"median_error": kb.policy("validation-median-error"),
                                  "within_25": kb.policy("validation-within-25"),
                                  "band_calibration": kb.policy("band-calibration-floor"),
                                  "footprint_within_25": kb.policy("validation-footprint-within-25")}
    assert shipped.passed and shipped.footprints_passed
    assert shipped.overall.median_error <= kb.policy("validation-median-error")
    assert shipped.overall.within_25 >= kb.policy("validation-within-25")
    # each quantity's summary covers its points, which are every measurement not withdrawn (deprecated)
    active = [m for m in kb.measurements.values() if m.status != "deprecated"]
    assert sum(s.points for s in shipped.by_quantity.values()) == len(shipped.points) == len(active)
    assert len(active) < len(kb.measurements)  # the withdrawn ones are left out, not counted as misses


def test_every_point_is_a_prediction_with_its_rules_or_a_miss_with_its_reason(shipped):
    for p in shipped.points:
        if p.predicted is None:
            assert p.ratio is None and p.reason and not p.within
        else:
            assert p.ratio == pytest.approx(p.predicted / p.measured) and p.rules
            assert all("@" in rule for rule in p.rules)


def test_the_median_error_is_exp_of_the_median_log_ratio():
    def point(ratio):
        return Point("p", "mfu", 1.0, ratio, ratio, "s", "g")

    summary = Summary.of([point(1.1), point(0.5), point(1 / 1.2), point(None)])  # a miss is an infinite error
    # |ln r| sorted: ln 1.1, ln 1.2, ln 2, inf -> median (ln 1.2 + ln 2) / 2
    assert summary.median_error == pytest.approx(math.exp((math.log(1.2) + math.log(2)) / 2) - 1)
    assert summary.within_25 == 0.5  # 1.1 and 0.833 are within ±25%; 0.5 and the miss are not
    assert summary.inside == 2


def test_measured_values_are_read_in_their_published_units(kb):
    by_unit = {m.unit: m for m in kb.measurements.values()}
    assert by_unit["ms/token"].canonical == pytest.approx(1000 / by_unit["ms/token"].value)
    assert by_unit["TFLOP/s"].canonical == by_unit["TFLOP/s"].value * 1e12
    assert by_unit["GiB"].canonical == by_unit["GiB"].value * 2**30
    assert by_unit["%"].canonical == pytest.approx(by_unit["%"].value / 100)


def test_the_command_prints_a_table_and_json_and_exits_by_the_thresholds(shipped):
    text = runner.invoke(app, ["validate"])
    assert text.exit_code == 0, text.output
    assert "median error" in text.output and "within ±25%" in text.output and "passed" in text.output
    # the share with its count and one decimal, so 79.8% never reads as an 80% goal met
    o = shipped.overall
    assert f"{o.inside} ({o.within_25:.1%})" in text.output
    data = json.loads(runner.invoke(app, ["validate", "--format", "json"]).output)
    assert set(data) >= {"points", "median_error", "within_25", "by_quantity", "thresholds", "passed"}
    assert {"id", "measured", "predicted", "ratio", "rules"} <= set(data["points"][0])
    assert data["median_error"] == pytest.approx(shipped.overall.median_error)


def test_a_runs_footprint_is_its_own_gate_outside_the_overall_median(shipped, kb):
    # a run's energy and CO2 are its GPU-hours times stated figures: in the median they would count it again
    footprints = [p for p in shipped.points if p.quantity in FOOTPRINTS]
    performance = [p for p in shipped.points if p.quantity not in FOOTPRINTS]
    assert set(FOOTPRINTS) == {"training_energy_kwh", "training_co2_kg"} and len(footprints) >= 8
    assert shipped.overall == Summary.of(performance) and shipped.footprints == Summary.of(footprints)
    assert sum(s.points for s in shipped.by_framework.values()) == len(performance)
    assert kb.policy("validation-footprint-within-25") == 1.0  # each published footprint within ±25%
    assert all(p.within for p in footprints)
    data = json.loads(runner.invoke(app, ["validate", "--format", "json"]).output)
    assert data["footprints"]["points"] == len(footprints) and data["footprints"]["passed"] is True
    assert data["median_error"] == pytest.approx(Summary.of(performance).median_error)
    text = runner.invoke(app, ["validate"]).output
    assert f"all (performance)            {len(performance):6d}" in text
    assert "footprints (a run's energy and CO₂" in text and "footprints within ±25% ≥ 100%" in text


def test_one_footprint_outside_25_percent_fails_validation_whatever_the_median():
    def point(quantity, ratio):
        return Point(f"{quantity}-{ratio}", quantity, 1.0, ratio, ratio, "s", "g")

    points = [point("mfu", 1.0)] * 9 + [point("training_co2_kg", 1.0), point("training_co2_kg", 0.7)]
    v = Validation(points, Summary.of(points[:9]), {}, {"median_error": 0.12, "within_25": 0.8,
                                                          "footprint_within_25": 1.0},
                   footprints=Summary.of(points[9:]))
    assert v.overall.median_error == 0.0 and not v.footprints_passed and not v.passed
    assert Validation(points, v.overall, {}, v.thresholds, footprints=Summary.of(points[9:10])).passed


def test_a_grid_intensity_off_by_a_third_fails_the_footprint_gate_not_the_median(checkout: Path, shipped):
    edit_entry(checkout, "grid-intensity-us", lambda p: p.update(value=240))
    worse = validate(gpukb.load_kb(checkout))
    assert not worse.footprints_passed and not worse.passed
    assert worse.overall == shipped.overall  # the performance points do not move
    result = runner.invoke(app, ["validate", "--root", str(checkout)])
    assert result.exit_code == 1 and "FAILED" in result.output


def test_a_model_made_worse_fails_the_gate(checkout: Path):
    # Hopper's utilisation halved: every H100 training estimate drops by half
    edit_entry(checkout, "mfu-hopper", lambda p: p.update(value=0.23))
    worse = runner.invoke(app, ["validate", "--root", str(checkout)])
    assert worse.exit_code == 1 and "FAILED" in worse.output


def test_against_a_base_revision_a_worse_median_fails_and_names_the_points(tmp_path: Path):
    repo = make_repo(tmp_path / "repo")
    same = runner.invoke(app, ["validate", "--root", str(repo), "--base", "HEAD", "--format", "json"])
    assert same.exit_code == 0 and json.loads(same.output)["base"]["failed"] is False
    # a decode rate well below every engine's: the decode points' median error rises past the allowed step
    edit_entry(repo, "decode-bandwidth-utilisation", lambda p: p.update(value=0.2))
    result = runner.invoke(app, ["validate", "--root", str(repo), "--base", "HEAD", "--format", "json"])
    base = json.loads(result.output)["base"]
    assert result.exit_code == 1 and base["failed"] is True
    # named: the points that moved most, each further from its measurement (the load tests' runs, 1,200 to 2,400
    # requests past a capacity the slow decode cut, move furthest; a rate no replica carries is a miss)
    assert base["moved"] and all(m["ratio"] is None or abs(math.log(m["ratio"])) > abs(math.log(m["base_ratio"]))
                                 for m in base["moved"])


def test_a_measurement_that_is_no_workload_is_a_located_lint_error(checkout: Path):
    edit_entry(checkout, "gptfast-llama-2-7b-bf16-a100-80gb-batch1",
               lambda m: m["workload"].update(gpus=["a100-sxm-81gb"]))
    edit_entry(checkout, "llama2-7b-pretrain-gpu-hours", lambda m: m["workload"].pop("tokens"))
    problems = {p.code: p for p in lint(checkout).problems if p.code in ("M001", "M002")}
    assert problems["M001"].file == "kb/measurements/gpt-fast-readme.yaml" and problems["M001"].line > 1
    assert "a100-sxm-81gb" in problems["M001"].message and problems["M001"].field == "workload.gpus"
    assert problems["M002"].file == "kb/measurements/llama2-model-card.yaml" and "tokens" in problems["M002"].message


def test_a_measurement_without_a_locator_is_an_error_at_its_line(checkout: Path):
    edit_entry(checkout, "gptfast-llama-2-7b-bf16-a100-80gb-batch1", lambda m: m.pop("locator"))
    (problem,) = [p for p in lint(checkout).problems if p.field == "locator"]
    assert problem.code == "E012" and problem.file == "kb/measurements/gpt-fast-readme.yaml"


def test_the_registry_drives_loading_references_and_explain_for_the_new_kind(checkout: Path):
    """kb/measurements/ is read, its `source` checked and `gpukb explain` shown through kinds.KINDS only."""
    kb = gpukb.load_kb(checkout)
    assert kb.locate("measurements", "gptfast-llama-2-7b-bf16-a100-80gb-batch1")[0] == "kb/measurements/gpt-fast-readme.yaml"
    shown = runner.invoke(app, ["explain", "gptfast-llama-2-7b-bf16-a100-80gb-batch1"])
    assert shown.exit_code == 0 and "gpt-fast" in shown.output and "104.9" in shown.output
    edit_entry(checkout, "gptfast-llama-2-7b-bf16-a100-80gb-batch1", lambda m: m.update(source="no-such-source"))
    (problem,) = [p for p in lint(checkout).problems if p.code == "E030"]
    assert problem.file == "kb/measurements/gpt-fast-readme.yaml" and "unknown source id 'no-such-source'" in problem.message


def test_gpukb_validate_stays_the_function_whatever_was_imported_first():
    import gpukb.cli
    import gpukb.estimate.validation

    assert callable(gpukb.validate) and not hasattr(gpukb.validate, "Validation")


def test_flop_figures_are_compared_in_the_sources_own_count(shipped, kb):
    # torchtitan's MFU counts 6·N + 12·l·h·s per token (attention over the full, unmasked sequence) where
    # gpukb's model FLOPs count 6·N + 6·l·h·s (causal): the prediction is gpukb's tokens/s in torchtitan's count
    m = kb.measurements["torchtitan-2024-llama3-8b-a100-64-sel-op-mfu"]
    assert m.flop_per_token == "6 * params + 12 * layers * hidden_size * seq_len"
    n, layers, h, s = 8_030_261_248, 32, 4096, 8192
    (point,) = [p for p in shipped.points if p.id == m.id]
    answer = kb.ask(gpukb.estimate.validation.workload_of(m, kb))
    option = answer.options[0]
    tokens_per_gpu = option.tokens_per_s / option.count
    assert point.predicted == pytest.approx(tokens_per_gpu * (6 * n + 12 * layers * h * s) / 312e12, rel=1e-9)
    assert point.predicted == pytest.approx(option.mfu * (6 * n + 12 * layers * h * s) / (6 * n + 6 * layers * h * s),
                                            rel=1e-9)


def test_a_flop_formula_reading_no_workload_field_is_a_located_lint_error(checkout: Path):
    edit_entry(checkout, "torchtitan-2024-llama3-8b-a100-64-sel-op-mfu",
               lambda m: m.update(flop_per_token="6 * parameters + 12 * layers * hidden_size * seq_len"))
    (problem,) = [p for p in lint(checkout).problems if p.code == "M003"]
    assert problem.file == "kb/measurements/torchtitan-performance-2024-04.yaml" and problem.line > 1
    assert "parameters" in problem.message and problem.field == "flop_per_token"


def test_a_flop_formula_that_is_no_expression_is_refused_naming_the_field(checkout: Path):
    edit_entry(checkout, "torchtitan-2024-llama3-8b-a100-64-sel-op-mfu",
               lambda m: m.update(flop_per_token="__import__('os').system('true')"))
    problems = [p for p in lint(checkout).problems if p.field == "flop_per_token"]
    assert problems and problems[0].file == "kb/measurements/torchtitan-performance-2024-04.yaml"


def test_a_flop_formula_that_cannot_be_computed_is_a_miss_with_its_reason(checkout: Path):
    edit_entry(checkout, "torchtitan-2024-llama3-8b-a100-64-sel-op-mfu",
               lambda m: m.update(flop_per_token="6 * params / (layers - layers)"))
    result = runner.invoke(app, ["validate", "--root", str(checkout), "--format", "json"])
    assert "Traceback" not in result.output
    (point,) = [p for p in json.loads(result.output)["points"] if p["id"].endswith("sel-op-mfu")]
    assert point["predicted"] is None and "division by zero" in point["reason"]


def test_an_allocator_peak_is_compared_without_the_runtime_overhead(shipped, kb):
    # torchtune logs PyTorch's caching-allocator peaks, which never hold the CUDA context or NCCL's buffers
    m = kb.measurements["torchtune-2024-llama-3.1-8b-qlora-rtx4090"]
    assert m.memory_counter == "allocator"
    option = kb.ask(gpukb.estimate.validation.workload_of(m, kb)).options[0]
    assert option.memory.overhead == 2e9
    (point,) = [p for p in shipped.points if p.id == m.id]
    assert point.predicted == option.per_gpu_bytes - 2e9
    assert point.ratio == pytest.approx((option.per_gpu_bytes - 2e9) / (7.4 * 2**30), rel=1e-12)


def test_a_device_peak_is_compared_with_everything_the_gpu_holds(checkout: Path):
    edit_entry(checkout, "torchtune-2024-llama-3.1-8b-qlora-rtx4090", lambda m: m.pop("memory_counter"))
    kb = gpukb.load_kb(checkout)
    m = kb.measurements["torchtune-2024-llama-3.1-8b-qlora-rtx4090"]
    assert m.memory_counter == "device"  # the default: nvidia-smi's view, or the card a run fits
    (point,) = [p for p in validate(kb).points if p.id == m.id]
    assert point.predicted == kb.ask(gpukb.estimate.validation.workload_of(m, kb)).options[0].per_gpu_bytes


def test_a_memory_counter_on_another_quantity_is_a_located_error(checkout: Path):
    edit_entry(checkout, "torchtitan-2024-llama3-8b-a100-64-sel-op-mfu", lambda m: m.update(memory_counter="allocator"))
    problems = [p for p in lint(checkout).problems if p.field == "memory_counter"]
    assert problems and problems[0].file == "kb/measurements/torchtitan-performance-2024-04.yaml"
    assert "only for peak_memory_per_gpu" in problems[0].message and problems[0].line > 1



def test_rl_step_times_are_predicted_from_the_rl_option(shipped):
    points = [p for p in shipped.points if p.quantity == "rl_step_time_s"]
    assert len(points) >= 2 and all(p.predicted for p in points)
    assert all(any(r.startswith("rec.rl.step-time") for r in p.rules) for p in points)


def test_rl_phase_times_are_the_sum_of_their_phases_in_the_rl_option(shipped, kb):
    """A phase point reads its phases from the same answer as the step: generation alone; the trainer's phases (the
    update with the old log-probs, the reference's, reward's and critic's passes) together; never the step."""
    from gpukb.estimate.validation import RL_PHASES, predict, workload_of

    by_id = {p.id: p for p in shipped.points}
    for quantity in RL_PHASES:
        ids = [m.id for m in kb.measurements.values() if m.quantity == quantity and m.status != "deprecated"]
        assert len(ids) >= 3
        for mid in ids:
            m = kb.measurements[mid]
            option = kb.ask(workload_of(m, kb), bands=False).options[0]
            assert option.rl is not None
            expected = sum(option.rl.phases.get(ph, 0.0) for ph in RL_PHASES[quantity])
            if quantity == "rl_generation_time_s":
                assert expected == option.rl.phases["generation"]
            else:  # everything the trainer runs, none of the engine's phases
                engine = sum(option.rl.phases.get(ph, 0.0) for ph in ("generation", "sync", "switch", "offload"))
                assert expected == pytest.approx(option.rl.step_time_s - engine)
            assert predict(m, kb.ask(workload_of(m, kb), bands=False), kb)[0] == pytest.approx(expected)
            assert 0 < expected < option.rl.step_time_s
            assert by_id[mid].predicted == pytest.approx(expected)
            assert any(r.startswith("rec.rl.step-time") for r in by_id[mid].rules)


def test_a_phase_the_answer_lacks_is_a_miss_not_a_zero(kb):
    """An RL answer with no generation phase (dpo has no rollout engine) cannot predict a generation time."""
    from gpukb.answer.answer import RlEstimate
    from gpukb.estimate.validation import predict

    m = next(m for m in kb.measurements.values() if m.quantity == "rl_generation_time_s")
    answer = kb.ask(m.workload | {"placement": "all"}, bands=False)
    option = answer.options[0]
    assert option.rl is not None
    rl = RlEstimate(**{**option.rl.model_dump(), "phases": {k: v for k, v in option.rl.phases.items()
                                                          if k != "generation"}})
    stripped = answer.model_copy(update={"options": (option.model_copy(update={"rl": rl}), *answer.options[1:])})
    with pytest.raises(LookupError, match="rl generation time"):
        predict(m, stripped, kb)
    # the trainer's phases are still there
    t = next(x for x in kb.measurements.values() if x.quantity == "rl_training_time_s" and x.workload == m.workload)
    assert predict(t, stripped, kb)[0] == pytest.approx(sum(option.rl.phases[p] for p in ("training", "reference")))
