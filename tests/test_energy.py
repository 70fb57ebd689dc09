"""Energy and CO₂ of a training run (rec.energy.training, gpukb.estimate.energy): GPU-hours at board power, the rest
of the node, the data centre's PUE and the grid of the workload's region; checked against the published
footprints of Llama 2, Llama 3.1 and BLOOM."""

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.core.errors import WorkloadError
from gpukb.estimate.validation import validate

runner = CliRunner()
PRETRAIN = {"model": "llama-2-7b", "task": "pretrain", "tokens": "2T", "gpus": ["h100-sxm-80gb", "a100-sxm-80gb"]}


def test_every_training_option_with_tokens_has_its_energy_and_emissions(kb):
    answer = kb.ask(PRETRAIN)
    assert answer.workload.region == "us"  # the default, named in the answer
    for o in answer.options:
        gpu = kb.gpus[o.gpu]
        hours = o.count * o.time_to_train_s / 3600
        power = kb.policy("training-gpu-power-fraction") * gpu.tdp / 1000
        facility = (1 + kb.policy("node-other-power-fraction")) * kb.policy("datacenter-pue")
        assert o.energy_kwh == pytest.approx(hours * power * facility)
        assert o.co2_kg == pytest.approx(o.energy_kwh * kb.policy("grid-intensity-us") / 1000)
        step = next(s for s in o.trace if s.rule.startswith("rec.energy.training@"))
        assert {v["name"] for v in step.values} >= {"gpu_hours", "gpu_kwh", "it_kwh", "energy_kwh", "co2_kg"}
        assert "grid-intensity-us" in step.sentence


def test_the_region_sets_the_grid_and_only_the_grid(kb):
    us, fr = kb.ask(PRETRAIN).best, kb.ask({**PRETRAIN, "region": "fr"}).best
    assert fr.energy_kwh == pytest.approx(us.energy_kwh)
    assert fr.co2_kg / us.co2_kg == pytest.approx(kb.policy("grid-intensity-fr") / kb.policy("grid-intensity-us"))


def test_no_tokens_or_inference_means_no_energy(kb):
    assert kb.ask({**PRETRAIN, "tokens": None}).best.energy_kwh is None
    inference = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["h100-sxm-80gb"]})
    assert inference.best.energy_kwh is None and inference.best.co2_kg is None
    assert inference.workload.region is None and "region" not in inference.model_dump(mode="json")["workload"]


def test_a_region_without_a_grid_intensity_or_not_a_code_is_refused_by_name(kb):
    with pytest.raises(WorkloadError, match=r"region: no grid intensity for 'zz'.*fr.*us"):
        kb.ask({**PRETRAIN, "region": "zz"})
    with pytest.raises(ValidationError, match="region"):
        gpukb.Workload(**{**PRETRAIN, "region": "France"})
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "pretrain", "--tokens", "2T", "--region", "zz"])
    assert result.exit_code == 2 and "region: no grid intensity for 'zz'" in result.output


def test_every_grid_intensity_names_its_source_and_unit(kb):
    grids = {pid: p for pid, p in kb.policies.items() if pid.startswith("grid-intensity-")}
    assert {"grid-intensity-us", "grid-intensity-fr", "grid-intensity-de", "grid-intensity-cn"} <= set(grids)
    for p in grids.values():
        assert p.unit == "gCO2/kWh" and p.sources and 0 < p.value < 1200
    assert kb.policy("grid-intensity-fr") < kb.policy("grid-intensity-de") < kb.policy("grid-intensity-cn")


def test_the_published_footprints_are_predicted_within_25_percent(kb):
    points = {p.id: p for p in validate(kb).points if p.quantity in ("training_energy_kwh", "training_co2_kg")}
    assert {"llama2-70b-pretrain-co2", "llama31-405b-training-co2", "bloom-176b-training-co2",
            "bloom-176b-training-energy"} <= set(points)
    for p in points.values():
        assert p.ratio is not None and abs(p.ratio - 1) <= 0.25, (p.id, p.ratio)
        assert [rule.split("@")[0] for rule in p.rules] == ["rec.energy.training"]
    # BLOOM counted its GPUs at their 400 W TDP, as gpukb does: the same energy for the same GPU-hours
    assert points["bloom-176b-training-energy"].ratio == pytest.approx(1.0, abs=0.005)


def test_the_command_line_shows_energy_and_emissions_beside_time(kb):
    result = runner.invoke(app, ["ask", "--model", "llama-2-7b", "--task", "pretrain", "--tokens", "2T",
                                 "--gpu", "h100-sxm-80gb", "--region", "fr"])
    assert result.exit_code == 0, result.output
    best = kb.ask({**PRETRAIN, "gpus": ["h100-sxm-80gb"], "region": "fr"}).best
    text = " ".join(result.output.split())  # the line wraps at the terminal's width
    assert "grid fr" in text and f"h100-sxm-80gb {best.energy_kwh / 1000:,.3g} MWh, {best.co2_kg / 1000:,.3g} t" in text


def test_thousands_of_megawatt_hours_read_as_numbers_in_both_languages(kb):
    # a 70B pre-training run draws over a gigawatt-hour: '1,240 MWh', never '1.24e+03 MWh'
    args = ["ask", "--model", "llama-2-70b", "--task", "pretrain", "--tokens", "2T", "--gpu", "h100-sxm-80gb"]
    best = kb.ask({"model": "llama-2-70b", "task": "pretrain", "tokens": "2T", "gpus": ["h100-sxm-80gb"]}).best
    assert best.energy_kwh > 1e6 and best.co2_kg > 1e5
    mwh, tonnes = f"{float(f'{best.energy_kwh / 1000:.3g}'):,.0f} MWh", f"{float(f'{best.co2_kg / 1000:.3g}'):,.0f} t"
    english = " ".join(runner.invoke(app, [*args]).output.split())  # the line wraps at the terminal's width
    chinese = " ".join(runner.invoke(app, [*args, "--lang", "zh"]).output.split())
    assert f"h100-sxm-80gb {mwh}, {tonnes}" in english and "e+0" not in english
    assert "能耗与 CO₂（数据中心总用电，电网 us；" in chinese and f"h100-sxm-80gb {mwh}，{tonnes}" in chinese


@pytest.mark.parametrize("scope", ["gpu", "node", "facility"])
def test_the_energy_scope_says_what_energy_and_emissions_count(kb, scope):
    answer = kb.ask({**PRETRAIN, "energy_scope": scope})
    assert answer.workload.energy_scope == scope
    for o in answer.options:
        step = next(s for s in o.trace if s.rule.startswith("rec.energy.training@"))
        values = {v["name"]: v["value"] for v in step.values}
        counted = {"gpu": values["gpu_kwh"], "node": values["it_kwh"],
                   "facility": values["it_kwh"] * kb.policy("datacenter-pue")}[scope]
        assert o.energy_kwh == pytest.approx(counted)
        assert o.co2_kg == pytest.approx(counted * kb.policy("grid-intensity-us") / 1000)
        assert f"Energy scope {scope}" in step.sentence
    assert ("energy_scope" in answer.model_dump(mode="json")["workload"]) == (scope != "facility")


def test_a_pue_of_the_workload_replaces_the_policy_s_for_the_facility(kb):
    policy, own = kb.ask(PRETRAIN).best, kb.ask({**PRETRAIN, "pue": 1.1}).best
    assert own.energy_kwh / policy.energy_kwh == pytest.approx(1.1 / kb.policy("datacenter-pue"))
    assert kb.ask({**PRETRAIN, "pue": 1.1, "energy_scope": "gpu"}).best.energy_kwh == pytest.approx(
        kb.ask({**PRETRAIN, "energy_scope": "gpu"}).best.energy_kwh)  # a PUE is no part of the GPUs' energy


@pytest.mark.parametrize(("fields", "field"), [
    ({"pue": 0.9}, "pue"), ({"pue": 12}, "pue"), ({"energy_scope": "rack"}, "energy_scope"),
])
def test_a_bad_energy_scope_or_pue_is_refused_by_name(kb, fields, field):
    with pytest.raises(WorkloadError) as caught:
        kb.ask({**PRETRAIN, **fields})
    assert caught.value.field == field
    with pytest.raises(WorkloadError) as caught:
        kb.ask({"model": "llama-2-7b", "task": "inference", "energy_scope": "gpu"})
    assert caught.value.field == "energy_scope"


def test_counted_as_the_model_card_counts_it_405b_emits_what_the_card_says(kb):
    """Llama 3.1's card counts GPU board power (700 W) only: 8,930 t CO₂ for 405B. At energy_scope gpu gpukb's own
    plan (its GPU-hours, not the card's) comes within ±25% of it; the facility's figure is (1 + 0.82) x 1.58 times
    that and is not a figure to hold against the card."""
    (point,) = [m for m in kb.measurements.values() if m.id == "llama31-405b-training-co2"]
    assert point.energy_scope == "gpu" and point.value == 8930  # t CO2eq
    workload = {**point.workload, "energy_scope": point.energy_scope}
    gpu = kb.ask(workload).best
    assert abs(gpu.co2_kg / 8_930_000 - 1) <= 0.25
    facility = kb.ask(point.workload).best
    assert facility.co2_kg / gpu.co2_kg == pytest.approx(
        (1 + kb.policy("node-other-power-fraction")) * kb.policy("datacenter-pue"))
    assert facility.co2_kg / 8_930_000 > 2
