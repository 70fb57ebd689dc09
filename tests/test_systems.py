"""Plans are made of systems: the nodes people rent or buy, with their network, host memory and prices."""

from __future__ import annotations

import json
import math
import re

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb import WorkloadError
from gpukb.cli import app
from gpukb.contrib.checks import check_systems
from gpukb.core.units import parse_quantity
from gpukb.estimate.systems import reference_system, rental
from kbfiles import edit_entry


def test_networks_are_read_in_bits_per_second():
    assert parse_quantity("3200 Gb/s", "bandwidth") == 400e9
    assert parse_quantity("100 Gb/s", "bandwidth") == 12.5e9
    assert parse_quantity("3.35 TB/s", "bandwidth") == 3.35e12


def test_every_system_names_a_gpu_of_the_catalog_and_its_nodes(kb):
    assert len(kb.systems) >= 30
    for system in kb.systems.values():
        assert system.gpu in kb.gpus
        assert system.host_memory > 0 and system.sources
        assert system.gpus_per_node == 1 or system.fabric in kb.interconnects


def test_a_gpu_is_planned_on_the_system_that_scales_furthest(kb):
    h100 = reference_system(kb, "h100-sxm-80gb")
    assert h100 is not None and h100.network_bandwidth == max(
        s.network_bandwidth or 0 for s in kb.systems.values() if s.gpu == "h100-sxm-80gb")
    t4 = reference_system(kb, "t4-16gb")
    assert t4 is not None and t4.network_bandwidth is not None and t4.network_bandwidth <= 12.5e9  # 100 Gb/s at most


def test_a_plan_of_six_rents_a_whole_node_and_names_the_idle_gpus(kb):
    reference = reference_system(kb, "h100-sxm-80gb")
    assert reference is not None and reference.gpus_per_node == 8
    rent = rental(kb, reference, 6, 0.0)
    assert rent.nodes == 1 and rent.gpus == 8
    answer = kb.ask({"model": "llama-2-13b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 6,
                     "placement": "all"})
    (option,) = answer.options
    cost = next(s for s in option.trace if s.rule.startswith("rec.cost.training@"))
    assert "8 GPUs, 2 idle" in cost.sentence
    assert option.usd_per_hour == pytest.approx(rent.usd_per_hour)


def test_cost_is_nodes_times_a_cited_node_price(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "pretrain", "tokens": "300B", "gpus": ["h100-sxm-80gb"]})
    (option,) = answer.options
    system = kb.systems[option.system]
    assert system.gpu == "h100-sxm-80gb" and system.price is not None
    nodes = math.ceil(option.count / system.gpus_per_node)
    assert option.strategy.nodes == nodes
    assert option.usd_per_hour == pytest.approx(nodes * system.price.usd_per_node_hour)
    assert option.host_memory_bytes == round(system.host_memory)


def test_a_two_gpu_plan_rents_the_cheapest_instance_of_at_least_two_gpus(kb):
    """Clouds sell H100s in instances of 1, 2, 4 and 8: a 2-GPU plan rents a 2-GPU instance, not a whole 8-GPU
    node with 6 idle, and reports the host memory of what it rents."""
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    option = answer.options[0]
    assert option.count == 2
    system = kb.systems[option.system]
    offers = [math.ceil(2 / s.gpus_per_node) * s.price.usd_per_node_hour for s in kb.systems.values()
              if s.gpu == "h100-sxm-80gb" and s.price and s.gpus_per_node >= 2 and s.fabric == system.fabric]
    assert system.gpus_per_node == 2 and option.usd_per_hour == pytest.approx(min(offers))
    assert option.usd_per_hour < kb.systems["lambda-8x-h100-sxm"].price.usd_per_node_hour / 2
    assert option.host_memory_bytes == round(system.host_memory)


def test_per_gpu_quotes_times_the_gpus_are_the_node_prices(kb):
    """Lambda and RunPod quote a price per GPU-hour: each instance size's node price is that figure times its GPUs."""
    checked = 0
    for system in kb.systems.values():
        for price in system.prices:
            if system.provider not in ("lambda", "runpod") or not price.derived.startswith("per-GPU price is the"):
                continue
            quoted = re.search(r"\bprice: ([0-9.]+)", price.quote) or re.match(r"runpod,[^,]+,on-demand,([0-9.]+),",
                                                                              price.quote)
            assert quoted, (system.id, price.quote)
            assert float(quoted[1]) * system.gpus_per_node == pytest.approx(price.usd_per_node_hour), system.id
            checked += 1
    assert checked >= 20


def test_pcie_cards_across_nodes_do_not_lead_large_training_when_nvlink_fits(kb):
    for workload in ({"model": "qwen2.5-32b", "task": "full_finetune"}, {"model": "gpt3-175b", "task": "pretrain"},
                     {"model": "gpt3-175b", "task": "pretrain", "tokens": "300B"}):
        first = kb.ask(workload).options[0]
        fabric = kb.interconnects[kb.systems[first.system].fabric] if first.system else None
        assert first.strategy.nodes == 1 or (fabric is not None and fabric.kind == "scale_up"), (workload, first.gpu)


def test_a_multi_node_pcie_plan_is_never_more_compute_efficient_than_one_nvlink_node_of_h100s(kb):
    h100 = kb.ask({"model": "qwen2.5-32b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"], "gpu_count": 8,
                   "placement": "all"}).options[0]
    for gpu in ("t4-16gb", "a10-24gb", "l40s-48gb"):
        answer = kb.ask({"model": "qwen2.5-32b", "task": "full_finetune", "gpus": [gpu]})
        for option in answer.options:
            if option.strategy.nodes > 1:
                assert option.mfu is not None and h100.mfu is not None and option.mfu <= h100.mfu, (gpu, option.mfu)


def test_the_network_between_nodes_is_the_systems(kb):
    answer = kb.ask({"model": "qwen2.5-32b", "task": "full_finetune", "gpus": ["t4-16gb"]})
    (option,) = answer.options
    system = kb.systems[option.system]
    assert option.strategy.nodes > 1
    step = next(s for s in option.trace if s.rule.startswith("bottleneck.interconnect.step@"))
    link = next(v["value"] for v in step.values if v["name"] == "link_bandwidth")
    assert link == pytest.approx(system.network_bandwidth / system.gpus_per_node)


def test_an_offload_plan_never_needs_more_host_memory_than_its_system_has(kb):
    for workload in ({"model": "llama-2-70b", "task": "full_finetune", "objective": "gpus"},
                     {"model": "llama-2-13b", "task": "full_finetune", "gpus": ["rtx-4090-24gb"], "gpu_count": 4}):
        for option in kb.ask(workload).options:
            if option.strategy.offload != "none" and option.system:
                plan = next(s for s in option.trace if s.rule.startswith("planner.fewest-gpus@"))
                host = next(v["value"] for v in plan.values if v["name"] == "host_bytes")
                per_node = min(option.count, kb.systems[option.system].gpus_per_node)
                assert host * per_node <= kb.systems[option.system].host_memory, (option.gpu, option.system)


def test_a_system_without_a_network_keeps_its_plans_to_one_node(kb):
    boxed = next(s for s in kb.systems.values() if s.network_bandwidth is None and s.gpus_per_node > 1)
    answer = kb.ask({"model": "llama-2-70b", "task": "full_finetune", "systems": [boxed.id]})
    for option in (*answer.options, *answer.rejected):
        assert option.count <= boxed.gpus_per_node


def test_systems_restrict_the_candidates_and_the_rental(kb):
    p4d = next(s for s in kb.systems.values() if s.gpu == "a100-sxm-40gb" and s.price is not None)
    answer = kb.ask({"model": "llama-2-7b", "task": "lora", "systems": [p4d.id]})
    assert {o.gpu for o in (*answer.options, *answer.rejected)} == {"a100-sxm-40gb"}
    assert answer.options[0].system == p4d.id
    assert answer.workload.systems == (p4d.id,)


@pytest.mark.parametrize(("systems", "field"), [(["no-such-machine"], "systems.0"),
                                                (["aws-p5-48xlarge", "aws-p5-48xlarge"], "systems.1")])
def test_unknown_or_repeated_systems_name_the_field(kb, systems, field):
    with pytest.raises(WorkloadError) as caught:
        kb.ask({"model": "llama-2-7b", "task": "lora", "systems": systems})
    assert caught.value.field == field


def test_systems_and_gpus_that_share_no_gpu_are_refused(kb):
    with pytest.raises(WorkloadError) as caught:
        kb.ask({"model": "llama-2-7b", "task": "lora", "systems": ["aws-p5-48xlarge"], "gpus": ["t4-16gb"]})
    assert caught.value.field == "systems"


def test_lint_catches_a_network_as_a_fabric_and_a_price_its_quote_does_not_hold(checkout):
    priced = next(s for s in gpukb.load_kb().systems.values() if s.prices and not s.prices[0].derived)

    def break_it(entry: dict) -> None:
        entry["fabric"] = "infiniband-ndr"
        entry["prices"][0]["usd_per_node_hour"] = 12345.67

    edit_entry(checkout, priced.id, break_it)
    problems = [p for p in check_systems(gpukb.load_kb(checkout)) if priced.id in p.file]
    assert {p.message.split(":")[0].split(" ")[0] for p in problems} == {"fabric", "the"}
    assert {p.code for p in problems} == {"Y102"}


def test_lint_names_a_gpu_no_system_holds(checkout):
    for path in (checkout / "kb" / "systems").glob("*.yaml"):
        if "gpu: t4-16gb" in path.read_text(encoding="utf-8"):
            path.unlink()
    problems = check_systems(gpukb.load_kb(checkout))
    assert [p.code for p in problems if "t4-16gb" in p.message] == ["Y101"]


def test_gpukb_list_systems_shows_every_system_with_its_network_and_price(kb):
    result = CliRunner().invoke(app, ["list", "systems"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    for system_id in kb.systems:
        assert system_id in result.stdout
    rows = json.loads(CliRunner().invoke(app, ["list", "systems", "--json"]).stdout)
    p5 = next(r for r in rows if r["id"] == "aws-p5-48xlarge")
    assert p5["gpus_per_node"] == 8 and p5["network_bandwidth"] == 400e9 and p5["usd_per_node_hour"] == 55.04


def test_ask_takes_system_flags_and_names_the_system_it_rents():
    result = CliRunner().invoke(app, ["ask", "--model", "llama-3-8b", "--task", "lora", "--system", "aws-p5-48xlarge",
                                      "--json"])
    assert result.exit_code == 0
    (option,) = json.loads(result.stdout)["options"]
    assert option["system"] == "aws-p5-48xlarge" and option["usd_per_hour"] == 55.04
    bad = CliRunner().invoke(app, ["ask", "--model", "llama-3-8b", "--task", "lora", "--system", "aws-p5"])
    assert bad.exit_code == 2 and "systems.0" in bad.output and "unknown system" in bad.output


def test_a_first_option_without_a_price_says_so_and_why(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h20-96gb"]})
    first = answer.options[0]
    assert first.system == "hgx-h20-8gpu-server" and kb.systems[first.system].price is None
    assert first.usd_per_hour is None and first.cost_usd is None
    summary = answer.summary
    assert summary is not None
    assert summary.headline.endswith(f"no price: no cited on-demand price for {first.system} or any system that runs "
                                     "this plan")
    assert f"没有价格：{first.system} 及其他能运行该方案的系统都没有注明出处的按需价格" in summary.headline_zh
    shown = json.loads(answer.model_dump_json())
    assert "no price" in shown["summary"]["headline"] and shown["options"][0]["usd_per_hour"] is None


def test_a_priced_first_option_says_nothing_of_a_missing_price(kb):
    answer = kb.ask({"model": "llama-2-7b", "task": "full_finetune", "gpus": ["h100-sxm-80gb"]})
    first = answer.options[0]
    assert first.usd_per_hour
    assert answer.summary is not None and "no price" not in answer.summary.headline


def test_the_text_answer_names_the_unpriced_system_in_both_languages():
    for lang, said in (("en", "no price"), ("zh", "没有价格")):
        result = CliRunner().invoke(app, ["ask", "--model", "llama-2-7b", "--task", "inference", "--gpu",
                                          "rtx-4090d-24gb", "--lang", lang], env={"COLUMNS": "200"})
        assert result.exit_code == 0
        head = next(line for line in result.stdout.splitlines() if said in line)
        assert "rtx-4090d-8gpu-server" in head


def test_rtx_5090_plans_rent_runpod_pods_at_their_catalog_price(kb):
    for count, system, usd in ((1, "runpod-1x-rtx-5090", 0.99), (2, "runpod-2x-rtx-5090", 1.98)):
        answer = kb.ask({"model": "llama-2-7b", "task": "inference", "gpus": ["rtx-5090-32gb"], "gpu_count": count,
                         "placement": "all"})
        (option,) = answer.options
        price = kb.systems[system].price
        assert option.system == system and price is not None and price.source == "skypilot-catalog-runpod-vms-v8"
        assert option.usd_per_hour == pytest.approx(usd) and f",{usd:.2f},{usd:.2f}," in price.quote
    eight = kb.systems["runpod-8x-rtx-5090"]
    assert eight.peer_to_peer is False and eight.host_memory == 368 * 2**30
    assert eight.price is not None and eight.price.usd_per_node_hour == 7.92


def test_a_pair_of_rtx_3090s_rents_the_priced_runpod_pod(kb):
    answer = kb.ask({"model": "qwen2.5-7b", "task": "lora", "gpus": ["rtx-3090-24gb"], "gpu_count": 2,
                     "placement": "all"})
    (option,) = answer.options
    assert option.system == "runpod-2x-rtx-3090" and option.usd_per_hour == pytest.approx(1.0)
    assert answer.summary is not None and "no price" not in answer.summary.headline
