"""Serving under load: the scheduler simulation (gpukb.estimate.loadsim) and its answers (gpukb.estimate.load)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

import gpukb
from gpukb.core.errors import WorkloadError
from gpukb.estimate import loadsim
from gpukb.estimate.loadsim import Limits, StepCost, figures, make_trace, simulate

# a Llama-3-8B-sized replica on an H100: 6.5 ms to read the weights, a token's matrices at 600 TFLOP/s
COST = StepCost(weights_s=0.0065, prefill_weights_s=0.0065, linear_s=15e9 / 6e14, logits_s=2 * 128256 * 4096 / 6e14,
                context_read_s=131072 / 2.3e12, context_flop_s=2 * 32 * 4096 / 6e14, elementwise_s=2.4e-6,
                prefill_elementwise_s=2.4e-6, tp_fixed_s=0.0, tp_token_s=0.0, floor_s=0.0, host_s=0.0,
                host_sequence_s=0.0)
ROOMY = Limits(max_num_seqs=256, max_batched_tokens=2048, kv_tokens=450_000, block_tokens=16, reserve_full=False)
BASE = {"model": "llama-3-8b", "task": "inference", "prompt_len": 512, "output_len": 256, "gpus": ["h100-sxm-80gb"]}
NAMES = ["ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "e2e_p99_s", "max_rate", "utilisation"]


def _trace(**kw: object) -> loadsim.Trace:
    args = {"prompt": 512, "output": 256, "prompt_shape": "fixed", "output_shape": "fixed", "arrival": "poisson", **kw}
    return make_trace(**args)  # type: ignore[arg-type]


def test_the_queue_grows_past_capacity() -> None:
    small = ROOMY._replace(max_num_seqs=8)  # few seats: the capacity is reached within the run's 200 requests
    capacity, batch = loadsim.capacity(COST, small, 512, 256)
    assert batch == 8
    trace = _trace()
    below = simulate(COST, small, trace, 0.5 * capacity)
    above = simulate(COST, small, trace, 2.0 * capacity)
    first, last = above.ttft[:20], above.ttft[-20:]
    assert sum(last) / 20 > 10 * sum(first) / 20  # every arrival waits longer than the one before it
    assert figures(above).ttft_p99_s > 20 * figures(below).ttft_p99_s
    # and past capacity the run takes as long as serving at capacity, however fast the requests came
    assert above.makespan_s == pytest.approx(200 / capacity, rel=0.25)


@pytest.mark.parametrize("arrival", ["poisson", "constant"])
@pytest.mark.parametrize("shape", ["fixed", "exponential", "uniform"])
def test_p99_is_never_below_p50(arrival: str, shape: str) -> None:
    trace = _trace(arrival=arrival, prompt_shape=shape, output_shape=shape)
    for share in (0.2, 0.6, 0.95):
        fig = figures(simulate(COST, ROOMY, trace, share * loadsim.capacity(COST, ROOMY, 512, 256)[0]))
        assert fig.finished
        assert fig.ttft_p99_s >= fig.ttft_p50_s > 0
        assert fig.tpot_p99_s >= fig.tpot_p50_s > 0
        assert fig.e2e_p99_s >= fig.e2e_p50_s > fig.ttft_p50_s


def test_latency_grows_with_the_rate() -> None:
    trace = _trace()
    rates = [1, 10, 30, 50]
    p99 = [figures(simulate(COST, ROOMY, trace, r)).tpot_p99_s for r in rates]
    assert p99 == sorted(p99) and p99[-1] > 1.5 * p99[0]


def test_a_run_is_the_same_for_a_seed_and_differs_for_another() -> None:
    one = simulate(COST, ROOMY, _trace(), 20)
    assert one == simulate(COST, ROOMY, _trace(), 20)
    other = simulate(COST, ROOMY, make_trace(512, 256, "fixed", "fixed", "poisson", seed=1), 20)
    assert other.ttft != one.ttft
    constant = simulate(COST, ROOMY, _trace(arrival="constant"), 20)
    assert figures(constant).ttft_p99_s < figures(one).ttft_p99_s  # evenly spaced arrivals never bunch up


def test_max_rate_is_monotone_in_the_targets() -> None:
    trace = _trace()
    ceiling = loadsim.capacity(COST, ROOMY, 512, 256)[0]
    previous = -1.0
    for tpot_ms in (8, 9, 10, 12, 15, 20, 40):
        rate = loadsim.max_rate(COST, ROOMY, trace, {"tpot_p99_s": tpot_ms / 1000, "ttft_p99_s": 0.5}, ceiling)
        assert rate >= previous
        previous = rate
    assert previous == ceiling  # loose targets: the replica's capacity
    assert loadsim.max_rate(COST, ROOMY, trace, {"tpot_p99_s": 0.001}, ceiling) == 0.0  # faster than one alone


def test_a_full_cache_preempts_on_demand_and_reserving_engines_wait_instead() -> None:
    tight = ROOMY._replace(kv_tokens=20_000)
    on_demand = simulate(COST, tight, _trace(), 20)
    reserving = simulate(COST, tight._replace(block_tokens=32, reserve_full=True), _trace(), 20)
    assert on_demand.finished and reserving.finished
    assert on_demand.preemptions > 0 and reserving.preemptions == 0
    assert figures(reserving).ttft_p99_s > figures(simulate(COST, ROOMY, _trace(), 20)).ttft_p99_s


def test_an_engine_that_prefills_alone_makes_the_decoding_requests_wait() -> None:
    """SGLang runs a new prompt in a step of its own (prefill first): the running requests' next token waits for
    it, so under load TPOT is longer and TTFT shorter than where the prompt shares the step; a lone request, which
    never meets another, takes the same times either way."""
    trace = _trace()
    alone = ROOMY._replace(separate_prefill=True)
    rate = 0.5 * loadsim.capacity(COST, ROOMY, 512, 256)[0]
    mixed, separate = figures(simulate(COST, ROOMY, trace, rate)), figures(simulate(COST, alone, trace, rate))
    assert separate.tpot_p50_s > 1.05 * mixed.tpot_p50_s
    assert separate.ttft_p50_s < mixed.ttft_p50_s
    apart = _trace(arrival="constant")  # a request every 100 s: each is done long before the next arrives
    assert figures(simulate(COST, alone, apart, 0.01)) == figures(simulate(COST, ROOMY, apart, 0.01))


def test_a_lone_request_takes_the_decode_rules_times() -> None:
    """At a rate so low that requests never meet, TTFT is the rule's prefill and TPOT its batch-1 step."""
    answer = gpukb.ask({**BASE, "request_rate": 0.001})
    option = answer.options[0]
    assert option.load is not None and option.ttft_s and option.tpot_s
    assert option.load.ttft_p50_s == pytest.approx(option.ttft_s, rel=0.02)
    assert option.load.tpot_p50_s == pytest.approx(option.tpot_s, rel=0.02)


def test_more_replicas_lower_the_p99_at_a_fixed_rate() -> None:
    one = gpukb.ask({**BASE, "request_rate": 30, "gpu_count": 1, "placement": "all"}).options[0]
    four = gpukb.ask({**BASE, "request_rate": 30, "gpu_count": 4, "placement": "all"}).options[0]
    assert (one.count, four.count) == (1, 4)
    assert one.load and four.load
    assert four.load.ttft_p99_s < one.load.ttft_p99_s and four.load.tpot_p99_s < one.load.tpot_p99_s
    assert four.load.utilisation == pytest.approx(one.load.utilisation / 4)
    assert four.load.max_rate == pytest.approx(4 * one.load.max_rate)


def test_a_rate_gets_the_replicas_it_needs_and_its_cost() -> None:
    targets = {"ttft_p99_ms": 300, "tpot_p99_ms": 12}
    single = gpukb.ask({**BASE, "request_rate": 1, **targets}).options[0]
    assert single.count == 1 and single.load
    per_replica = single.load.max_rate
    rate = 2.5 * per_replica
    option = gpukb.ask({**BASE, "request_rate": rate, **targets}).options[0]
    assert option.count == option.strategy.data_parallel == math.ceil(rate / per_replica) == 3
    assert option.load and option.load.max_rate >= rate
    assert option.load.ttft_p99_s <= 0.3 and option.load.tpot_p99_s <= 0.012
    assert option.usd_per_hour and option.usd_per_million_tokens == pytest.approx(
        option.usd_per_hour / (rate * 256 * 3600) * 1e6)
    step = next(s for s in option.trace if s.rule == "planner.load@1")
    assert "requests/s" in step.sentence and "个请求" in step.sentence_zh
    plan = next(s for s in option.trace if s.rule.startswith("planner.fewest-gpus"))
    assert "3 replicas for" in plan.sentence and "需要 3 个副本" in plan.sentence_zh


def test_replicas_for_a_rate_span_nodes_that_have_no_network_and_rent_them_by_the_replica() -> None:
    # replicas share no traffic: a one-GPU pod with no network between pods still serves a rate with many pods,
    # where the replicas were held to one pod and the A40 rejected; one-GPU 4090 replicas rent small pods, as no
    # priced node of the reference's size (the unpriced 8-GPU server) exists
    kb = gpukb.load_kb()
    work = {"model": "llama-3.1-8b", "task": "inference", "request_rate": 10, "prompt_len": 1000, "output_len": 200,
            "ttft_p99_ms": 1000, "tpot_p99_ms": 50}
    (a40,) = gpukb.ask({**work, "gpus": ["a40-48gb"]}).options
    pod = kb.systems["runpod-1x-a40"]
    assert a40.system == pod.id and pod.network_bandwidth is None and pod.gpus_per_node == 1
    assert a40.count == a40.strategy.data_parallel > 1 and a40.load and a40.load.max_rate >= 10
    assert pod.price and a40.usd_per_hour == pytest.approx(a40.count * pod.price.usd_per_node_hour)
    (rtx,) = gpukb.ask({**work, "gpus": ["rtx-4090-24gb"]}).options
    pod = kb.systems[rtx.system or ""]
    assert rtx.strategy.tensor_parallel == 1 and rtx.count > 4 and pod.provider == "runpod" and pod.price
    assert rtx.usd_per_hour == pytest.approx(math.ceil(rtx.count / pod.gpus_per_node) * pod.price.usd_per_node_hour)
    one = kb.systems["runpod-1x-rtx-4090"]
    # a training plan of the same card still rents one node of the reference's fabric, never loose pods
    train = gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["rtx-4090-24gb"], "gpu_count": 6,
                       "placement": "all"}).options[0]
    assert train.system != one.id


def test_a_rate_no_option_meets_is_nothing_fits_with_the_nearest_miss() -> None:
    answer = gpukb.ask({**BASE, "gpus": ["h100-sxm-80gb", "l4-24gb"], "request_rate": 5, "tpot_p99_ms": 2})
    assert not answer.options
    assert {o.gpu for o in answer.rejected} == {"h100-sxm-80gb", "l4-24gb"}
    for option in answer.rejected:
        assert option.load is not None and option.load.max_rate == 0
        assert option.deciding_finding and option.deciding_finding.rule == "planner.load@1"
    assert answer.summary is not None and answer.summary.nothing_fits
    assert all("no rate meets the targets" in m.fix for m in answer.summary.nearest_misses)


def test_a_gpu_count_too_small_for_the_rate_names_the_count_that_carries_it() -> None:
    answer = gpukb.ask({**BASE, "request_rate": 50, "tpot_p99_ms": 15, "gpu_count": 1})
    assert not answer.options and answer.summary is not None
    nearest = answer.summary.nearest_misses[0]
    assert nearest.gpu == "h100-sxm-80gb" and nearest.change["gpu_count"] > 1
    fixed = gpukb.ask({**BASE, "request_rate": 50, "tpot_p99_ms": 15, **nearest.change}).options[0]
    assert fixed.count == nearest.change["gpu_count"] and fixed.load and fixed.load.max_rate >= 50


def test_the_json_carries_exactly_the_contracts_load_fields() -> None:
    answer = gpukb.ask({**BASE, "request_rate": 10})
    option = json.loads(answer.model_dump_json())["options"][0]
    assert list(option["load"]) == NAMES
    assert option["load"]["max_rate"] > 10  # no targets: the capacity of the replicas, where the queue stays bounded
    assert "load" not in json.loads(gpukb.ask(BASE).model_dump_json())["options"][0]


@pytest.mark.parametrize(("fields", "field", "words"), [
    ({"request_rate": 0}, "request_rate", "plausible range"),
    ({"request_rate": 1e9}, "request_rate", "plausible range"),
    ({"request_rate": True}, "request_rate", "expected a number"),
    ({"arrival": "bursty", "request_rate": 1}, "arrival", "poisson"),
    ({"ttft_p99_ms": 100}, "ttft_p99_ms", "only with request_rate"),
    ({"request_rate": 1, "batch_size": 8}, "batch_size", "use request_rate"),
    ({"request_rate": 1, "ttft_ms": 100}, "ttft_ms", "ttft_p50_ms"),
    ({"request_rate": 1, "tpot_p50_ms": 20, "tpot_p99_ms": 10}, "tpot_p99_ms", "below the P50"),
    ({"request_rate": 1, "prompt_shape": "normal"}, "prompt_shape", "exponential"),
    ({"num_prompts": 1000}, "num_prompts", "only with request_rate"),
    ({"request_rate": 1, "num_prompts": 0}, "num_prompts", "greater than 0"),
    ({"request_rate": 1, "num_prompts": 20_000}, "num_prompts", "2500"),
])
def test_bad_load_fields_are_named(fields: dict[str, object], field: str, words: str) -> None:
    with pytest.raises(WorkloadError) as err:
        gpukb.ask({**BASE, **fields})
    assert err.value.field == field and words in str(err.value)


def test_load_needs_lengths_and_an_inference_task() -> None:
    with pytest.raises(WorkloadError, match="prompt_len"):
        gpukb.ask({"model": "llama-3-8b", "task": "inference", "request_rate": 1})
    with pytest.raises(WorkloadError, match="request_rate"):
        gpukb.ask({"model": "llama-3-8b", "task": "lora", "request_rate": 1})


def test_an_engine_without_a_scheduler_model_says_so() -> None:
    answer = gpukb.ask({**BASE, "framework": "llama.cpp", "request_rate": 1})
    assert not answer.options
    assert "no continuous-batching scheduler" in answer.rejected[0].findings[0].message


def test_validate_predicts_the_published_load_tests() -> None:
    from gpukb.estimate.validation import check_point
    kb = gpukb.load_kb()
    points = {m.quantity: check_point(kb, m) for m in kb.measurements.values()
              if m.workload.get("request_rate") == 4 and m.source == "surajssd-gist-vllm-llama-3.3-70b-a100-tp4"}
    assert set(points) == {"ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "request_throughput"}
    assert all(point.ratio is not None and point.ratio > 0 for point in points.values())
    # the tail of the first token's wait is the queue's, and the simulation has it within 25%
    assert points["ttft_p99_s"].ratio == pytest.approx(1, abs=0.25)
    assert points["request_throughput"].ratio == pytest.approx(1, abs=0.25)


def test_sglang_s_published_load_test_is_predicted_end_to_end() -> None:
    """SGLang v0.3.0's online benchmark (4 and 8 requests/s): every median is predicted, the end-to-end latency
    too, and going from 4 to 8 requests/s lengthens the predicted TPOT, as the prompts' steps of their own pause
    the running requests more often; less than measured, the host's time between v0.3.0's steps being unmodelled."""
    from gpukb.estimate.validation import check_point
    kb = gpukb.load_kb()
    points = {m.id: check_point(kb, m) for m in kb.measurements.values()
              if m.source == "sglang-benchmark-vllm-060-readme"}
    assert len(points) == 12 and {p.quantity for p in points.values()} == {"ttft_p50_s", "tpot_p50_s", "e2e_p50_s"}
    assert all(p.ratio is not None and p.predicted for p in points.values())
    for run in ("8b-a100", "70b-h100-tp4"):
        four, eight = (points[f"sglang-v0.3.0-llama-3.1-{run}-sharegpt-rps{r}-tpot-p50-s"] for r in (4, 8))
        assert four.predicted and eight.predicted and four.measured and eight.measured
        assert 1.1 * four.predicted < eight.predicted < eight.measured / four.measured * four.predicted


def test_the_load_tests_are_within_the_issue_s_bands() -> None:
    """Over every published load test: the median error of P50 TPOT and of throughput within 20%, of each P99
    within 30% (issue 46's bar); P50 TTFT, still short at 4 requests/s, within 25%."""
    from gpukb.estimate.validation import validate
    v = validate(gpukb.load_kb())
    load = {q: v.by_quantity[q] for q in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "request_throughput")}
    assert all(s.points >= 2 for s in load.values())
    assert load["tpot_p50_s"].median_error <= 0.20 and load["request_throughput"].median_error <= 0.20
    assert load["ttft_p99_s"].median_error <= 0.30 and load["tpot_p99_s"].median_error <= 0.30
    assert load["ttft_p50_s"].median_error <= 0.25


def test_the_plot_fits_the_terminal_and_marks_the_knee(tmp_path: Path) -> None:
    from xml.dom.minidom import parse

    from gpukb.contrib.loadchart import svg, terminal
    from gpukb.estimate.load import curve
    drawn = curve(gpukb.ask({**BASE, "request_rate": 20}))
    assert drawn is not None and drawn.rates[0] < drawn.knee < drawn.rates[-1]
    assert drawn.ttft_p99_s[-1] > drawn.ttft_p99_s[0] and all(
        hi >= lo for lo, hi in zip(drawn.tpot_p50_s, drawn.tpot_p99_s, strict=True))
    for width in (60, 80, 140):
        text = terminal(drawn, width)
        assert max(len(line) for line in text.splitlines()) <= min(width, 100)
        assert text.count("|") >= 2 * 8 and "knee" in text
    assert "拐点" in terminal(drawn, 80, "zh")
    (tmp_path / "plot.svg").write_text(svg(drawn))
    assert len(parse(str(tmp_path / "plot.svg")).getElementsByTagName("polyline")) == 4
    assert curve(gpukb.ask(BASE)) is None


def test_ask_plots_only_with_a_rate(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from gpukb.cli.main import app
    args = ["ask", "--task", "inference", "--model", "llama-3-8b", "--prompt-len", "512", "--output-len", "256",
            "--gpu", "h100-sxm-80gb"]
    refused = CliRunner().invoke(app, [*args, "--plot"])
    assert refused.exit_code != 0 and "--request-rate" in refused.output
    drawn = CliRunner().invoke(app, [*args, "--request-rate", "20", "--plot-svg", str(tmp_path / "p.svg")])
    assert drawn.exit_code == 0 and (tmp_path / "p.svg").read_text().startswith("<svg")


def test_a_replica_too_slow_at_any_rate_gets_more_tensor_parallelism() -> None:
    w = {"model": "llama-3.1-70b", "task": "inference", "prompt_len": 1000, "output_len": 300, "request_rate": 5,
         "tpot_p99_ms": 25, "gpus": ["h100-sxm-80gb"]}
    pinned = gpukb.ask({**w, "tensor_parallel": 2})
    assert not pinned.options and pinned.rejected[0].load and pinned.rejected[0].load.max_rate == 0
    option = gpukb.ask(w).options[0]
    assert option.strategy.tensor_parallel > 2 and option.load and option.load.tpot_p99_s <= 0.025
    plan = next(s for s in option.trace if s.rule.startswith("planner.fewest-gpus"))
    assert "at any request rate" in plan.sentence and "任何请求速率" in plan.sentence_zh


def test_percentiles_interpolate_between_ranks() -> None:
    values = tuple(float(v) for v in range(1, 101))  # 1..100
    assert loadsim.percentile(values, 50) == pytest.approx(50.5)
    assert loadsim.percentile(values, 99) == pytest.approx(99.01)
    assert loadsim.percentile((3.0,), 99) == 3.0 and math.isnan(loadsim.percentile((), 50))


@pytest.mark.parametrize(("framework", "gpu", "seqs", "tokens", "block", "reserve"), [
    ("vllm", "h100-sxm-80gb", 1024, 8192, 16, False),  # 70 GiB or more, not an A100
    ("vllm", "a100-sxm-80gb", 256, 2048, 16, False),  # vLLM keeps the A100 on the small budget
    ("vllm", "l4-24gb", 256, 2048, 16, False),
    ("sglang", "h100-sxm-80gb", 2048, 8192, 1, False),
    ("sglang", "l4-24gb", 2048, 2048, 1, False),  # under 35 GiB
    ("tensorrt-llm", "h100-sxm-80gb", 2048, 8192, 32, True),
])
def test_each_engine_schedules_with_its_own_defaults(framework: str, gpu: str, seqs: int, tokens: int, block: int,
                                                    reserve: bool) -> None:
    option = gpukb.ask({**BASE, "framework": framework, "gpus": [gpu], "request_rate": 1}).options[0]
    step = next(s for s in option.trace if s.rule == "planner.load@1")
    values = {v["name"]: v["value"] for v in step.values}
    assert (values["max_num_seqs"], values["max_batched_tokens"]) == (seqs, tokens)
    assert values["kv_tokens"] % block == 0 and values["kv_tokens"] > 10_000
    assert ("reserved whole per request" in step.sentence) == reserve


def test_long_prompts_simulate_fewer_requests_and_stay_bounded() -> None:
    assert loadsim.requests_for(512) == 200 and loadsim.requests_for(65_536) == 50
    trace = make_trace(100_000, 100, "fixed", "fixed", "poisson")
    assert len(trace.arrivals) == 50
    run = simulate(COST, ROOMY, trace, 0.5)
    assert run.finished and run.requests == 50 and len(run.ttft) == 50
    # a prompt past the whole cache never runs: the run ends instead of waiting for ever
    stuck = simulate(COST, ROOMY._replace(kv_tokens=50_000), trace, 0.5)
    assert not stuck.finished and not stuck.ttft


def test_a_benchmark_run_of_more_prompts_is_simulated_whole() -> None:
    """num_prompts is the run's length, as a benchmark's --num-prompts: that many requests are simulated (fewer only
    past LONG_PROMPT, as for the default), and a longer run from an idle server lets the queue build further."""
    assert loadsim.requests_for(512, 1200) == 1200 and loadsim.requests_for(65_536, 1200) == 300
    assert loadsim.requests_for(65_536, 20) == 20  # never more than the benchmark sent
    assert len(make_trace(512, 256, "fixed", "fixed", "poisson", wanted=1200).arrivals) == 1200
    near = 0.9 * loadsim.capacity(COST, ROOMY, 512, 256)[0]
    short, long = (figures(simulate(COST, ROOMY, _trace(wanted=n), near)) for n in (200, 2000))
    assert long.ttft_p99_s > short.ttft_p99_s
    workload = {**BASE, "request_rate": 10, "prompt_shape": "exponential", "output_shape": "exponential"}
    default, asked = gpukb.ask(workload), gpukb.ask({**workload, "num_prompts": 1200})
    step = next(s for s in asked.options[0].trace if s.rule == "planner.load@1")
    assert "Simulated over 1200 requests" in step.sentence and "模拟 1200 个请求" in step.sentence_zh
    assert asked.workload.num_prompts == 1200 and default.workload.num_prompts is None
    assert "num_prompts" not in json.loads(default.model_dump_json())["workload"]
    assert asked.options[0].load != default.options[0].load
    from typer.testing import CliRunner

    from gpukb.cli import app

    said = CliRunner().invoke(app, ["ask", "--model", "llama-3-8b", "--task", "inference", "--gpu", "h100-sxm-80gb",
                                    "--prompt-len", "512", "--output-len", "256", "--request-rate", "10",
                                    "--num-prompts", "1.2k", "--json"])  # a count reads as every other size does
    assert said.exit_code == 0, said.output
    assert json.loads(said.stdout)["workload"]["num_prompts"] == 1200


def test_a_sweep_record_carries_the_load() -> None:
    from gpukb.estimate.sweeps import record
    workload = {**BASE, "request_rate": 10}
    row = record(0, workload, gpukb.ask(workload))
    assert list(row["best"]["load"]) == NAMES and row["best"]["load"]["utilisation"] < 1


def test_the_load_step_shows_what_a_decode_step_spends_on_tensor_parallelism() -> None:
    """Over tensor parallelism the all-reduces of each step are in the trace: two a layer, each the decode rule's
    latency, the same figure the simulated steps pay."""
    tp4 = {"model": "llama-3.1-70b", "task": "inference", "framework": "vllm", "prompt_len": 213, "output_len": 214,
           "gpus": ["a100-pcie-80gb"], "gpu_count": 4, "tensor_parallel": 4, "placement": "all", "request_rate": 1}
    option = gpukb.ask(tp4).options[0]
    assert option.strategy.tensor_parallel == 4
    load = next(s for s in option.trace if s.rule == "planner.load@1")
    decode = next(s for s in option.trace if s.rule.startswith("rec.throughput.decode"))
    terms = {v["name"]: v["value"] for v in load.values}
    rule = {v["name"]: v["value"] for v in decode.values}
    assert terms["step_tp_allreduce_s"] == pytest.approx(2 * 80 * rule["allreduce_s"])
    # a token's hidden state, 2 x 3/4 of it over each link, twice a layer, at the rate NCCL counts for PCIe 4.0 x16
    # (24 GB/s of its 31.5): not the datasheet's rate, and no NVLink (the A100 PCIe bridge joins two cards)
    assert rule["link"] == pytest.approx(31.5e9 * 0.762)
    assert terms["step_tp_token_s"] == pytest.approx(2 * 80 * 8192 * 2 * 2 * 3 / 4 / (31.5e9 * 0.762))
    assert terms["step_weights_s"] == pytest.approx(rule["weight_bytes_read"] / rule["read_rate"])
    assert "all-reduces (two a layer) add" in load.sentence and "all-reduce（每层两次）" in load.sentence_zh
    assert "while the GPU waits" not in load.sentence  # the V1 engine overlaps its host's work with the GPU's
    v0 = next(s for s in gpukb.ask({**tp4, "framework": "vllm-v0"}).options[0].trace if s.rule == "planner.load@1")
    v0_terms = {v["name"]: v["value"] for v in v0.values}
    host = v0_terms["step_host_s"] + v0_terms["step_host_per_sequence_s"] * v0_terms["batch"]
    assert v0_terms["step_host_s"] == pytest.approx(8.47e-3) and v0_terms["batch"] == 256
    assert f"the engine's host works {host * 1000:,.1f} ms between steps while the GPU waits" in v0.sentence
    assert f"两步之间主机还要工作 {host * 1000:,.1f} ms，GPU 空等" in v0.sentence_zh
    single = next(s for s in gpukb.ask({**BASE, "request_rate": 1}).options[0].trace if s.rule == "planner.load@1")
    assert {v["name"]: v["value"] for v in single.values}["step_tp_allreduce_s"] == 0.0
    assert "all-reduce" not in single.sentence and "A decode step reads the weights in" in single.sentence


def test_the_host_s_time_between_steps_adds_to_every_simulated_step() -> None:
    """A lone request's tokens each take the GPU's step and the host's time after it; the closed-form decode runs
    (between arrivals) and the stepwise prefill agree on it."""
    host, per_sequence = 0.008, 2e-4
    waiting = dataclasses.replace(COST, host_s=host, host_sequence_s=per_sequence)
    trace = _trace(arrival="constant")
    alone, slow = figures(simulate(COST, ROOMY, trace, 0.01)), figures(simulate(waiting, ROOMY, trace, 0.01))
    assert slow.tpot_p50_s == pytest.approx(alone.tpot_p50_s + host + per_sequence, rel=1e-6)
    assert slow.ttft_p50_s == pytest.approx(alone.ttft_p50_s + host + per_sequence, rel=1e-6)
    # where the floor decides a step, the host's time still follows it
    floored = dataclasses.replace(waiting, floor_s=0.02)
    assert figures(simulate(floored, ROOMY, trace, 0.01)).tpot_p50_s == pytest.approx(0.02 + host + per_sequence,
                                                                                        rel=1e-6)
    # many sequences at once: each step pays the host's time for every one of them
    busy = simulate(dataclasses.replace(waiting, host_s=0.0), ROOMY, _trace(), 50)
    assert figures(busy).tpot_p50_s > figures(simulate(COST, ROOMY, _trace(), 50)).tpot_p50_s + 10 * per_sequence
    assert loadsim.capacity(waiting, ROOMY, 512, 256)[0] < loadsim.capacity(COST, ROOMY, 512, 256)[0]
