"""The answer as the command line tells it: exit codes, sizes, what --json carries (issue 44)."""

import json
import re

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.core.errors import WorkloadError

runner = CliRunner()


def ask(*args: str, columns: int | None = None):
    from gpukb.cli import app

    return runner.invoke(app, ["ask", *args], env={"COLUMNS": str(columns)} if columns else None)


# exit codes: 0 an answer, 2 bad input, 3 valid but nothing meets it


def test_a_deadline_no_option_meets_exits_3_with_a_headline_that_says_so():
    args = ["--model", "llama-2-7b", "--task", "pretrain", "--tokens", "1T", "--gpu", "h100-sxm-80gb"]
    late = ask(*args, "--deadline-days", "0.001")
    assert late.exit_code == 3, late.output
    assert "; no option meets deadline_days 0.001 (this one takes " in " ".join(late.stdout.split())
    assert "h100-sxm-80gb" in next(line for line in late.stdout.splitlines() if line.startswith("first option"))
    as_json = ask(*args, "--deadline-days", "0.001", "--json")  # the headline on stderr, the answer on stdout
    assert as_json.exit_code == 3 and "no option meets deadline_days 0.001" in as_json.stderr
    assert json.loads(as_json.stdout)["summary"]["deadline_met"] is False
    in_time = ask(*args, "--deadline-days", "365")
    assert in_time.exit_code == 0, in_time.output
    assert "no option meets" not in in_time.stdout


def test_launch_on_a_training_task_is_bad_input_even_when_nothing_fits():
    for gpus in ([], ["--gpu", "rtx-3080-10gb", "--gpu-count", "1"]):
        result = ask("--model", "llama-2-70b", "--task", "lora", *gpus, "--launch")
        assert result.exit_code == 2, result.output
        assert "no command line for training (framework hf)" in result.stderr and not result.stdout


# sizes: one reading in every integer size field, in Python, YAML and the command line


@pytest.mark.parametrize(("text", "value"), [("4k", 4000), ("4K", 4000), ("4Ki", 4096), ("32ki", 32768),
                                             ("1M", 10**6), ("1G", 10**9), ("2T", 2 * 10**12), ("1_024", 1024),
                                             ("6.74B", 6_740_000_000), ("1.5k", 1500), ("8e3", 8000), (" 2k ", 2000)])
def test_a_size_reads_the_same_in_every_field(text: str, value: int):
    assert gpukb.Workload(model="llama-3-8b", task="full_finetune", tokens=text).tokens == value
    if value <= 65536:  # within every field's bounds
        w = gpukb.Workload(model="llama-3-8b", task="inference", seq_len=text, prompt_len=text, output_len=text,
                           batch_size=text)
        assert w.seq_len == w.prompt_len == w.output_len == w.batch_size == value
        lora = gpukb.Workload(model="llama-3-8b", task="lora", micro_batch_size=text, lora_rank=text, gpu_count=text)
        assert lora.micro_batch_size == lora.lora_rank == lora.gpu_count == value


def test_rl_sizes_read_alike():
    rl = gpukb.Workload(model="llama-3-8b", task="grpo", rollout_batch="1k", samples_per_prompt="8", prompt_len="0.5Ki",
                        response_len="1Ki")
    assert (rl.rollout_batch, rl.samples_per_prompt, rl.prompt_len, rl.response_len) == (1000, 8, 512, 1024)


@pytest.mark.parametrize(("field", "text", "says"), [
    ("seq_len", "4x", "cannot read '4x' as a whole number"), ("batch_size", "lots", "cannot read 'lots'"),
    ("prompt_len", "1.5", "'1.5' is not a whole number"), ("micro_batch_size", "0.0005k", "not a whole number"),
    ("seq_len", "4kk", "cannot read"), ("tokens", "1e999T", "too large"), ("seq_len", "20M", "less than or equal"),
])
def test_junk_in_a_size_field_is_an_error_naming_the_field(field: str, text: str, says: str):
    with pytest.raises(WorkloadError) as raised:
        gpukb.ask({"model": "llama-3-8b", "task": "inference" if field != "tokens" and field != "micro_batch_size"
                   else "full_finetune", field: text})
    assert raised.value.field == field and says in str(raised.value)


def test_the_command_line_reads_sizes_as_the_workload_does():
    result = ask("--model", "llama-3-8b", "--task", "inference", "--gpu", "l4-24gb", "--seq-len", "4Ki",
                 "--batch-size", "8", "--prompt-len", "1k", "--output-len", "0.5k", "--json")
    assert result.exit_code == 0, result.output
    w = json.loads(result.stdout)["workload"]
    assert (w["seq_len"], w["batch_size"], w["prompt_len"], w["output_len"]) == (4096, 8, 1000, 500)
    junk = ask("--model", "llama-3-8b", "--task", "lora", "--seq-len", "4q")
    assert junk.exit_code == 2 and junk.stderr.startswith("error: seq_len: cannot read '4q'")


def test_a_sweep_reads_its_sequence_lengths_as_sizes():
    from gpukb.cli import app

    result = runner.invoke(app, ["sweep", "--model", "llama-2-7b", "--task", "lora", "--gpu", "l4-24gb",
                                 "--seq-len", "2Ki,1k"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["workload"]["seq_len"] for r in records] == [2048, 1000]
    junk = runner.invoke(app, ["sweep", "--model", "llama-2-7b", "--task", "lora", "--seq-len", "2Ki,4q"])
    assert junk.exit_code == 2 and "--seq-len: cannot read '4q'" in junk.stderr


# --json: the answer without the trace unless asked


def test_json_leaves_the_trace_out_unless_asked():
    args = ["--model", "llama-2-7b", "--task", "full_finetune", "--json"]
    short, full = ask(*args), ask(*args, "--trace")
    assert short.exit_code == full.exit_code == 0
    lean, whole = json.loads(short.stdout), json.loads(full.stdout)
    assert "trace" not in lean and all("trace" not in o for o in lean["options"])
    assert whole["trace"] and all(o["trace"] for o in whole["options"])
    # everything else is the same, option by option
    assert lean == {**{k: v for k, v in whole.items() if k != "trace"},
                    "options": [{k: v for k, v in o.items() if k != "trace"} for o in whole["options"]],
                    "rejected": [{k: v for k, v in o.items() if k != "trace"} for o in whole["rejected"]]}
    assert len(short.stdout) * 5 < len(full.stdout)
    alone = ask("--model", "llama-2-7b", "--task", "full_finetune", "--trace")
    assert alone.exit_code == 2 and "--trace goes with --json" in alone.stderr


# one ranking, named the same in the headline and the table


def test_latency_targets_rank_by_fewest_gpus_and_the_headline_and_table_say_so():
    w = {"model": "llama-3-70b", "task": "inference", "batch_size": 16, "prompt_len": 2000, "output_len": 500,
         "ttft_ms": 500, "tpot_ms": 40}
    answer = gpukb.ask(w)
    counts = [o.count for o in answer.options]
    assert counts == sorted(counts) and answer.options[0].tokens_per_s < max(o.tokens_per_s for o in answer.options)
    first = answer.options[0]
    assert answer.summary.headline.startswith(
        f"first option (fewest GPUs that meet the latency targets): {first.count} x {first.gpu} — ")
    assert "ms per output token" in answer.summary.headline  # its deciding figure
    result = ask("--model", "llama-3-70b", "--task", "inference", "--batch-size", "16", "--prompt-len", "2000",
                 "--output-len", "500", "--ttft-ms", "500", "--tpot-ms", "40")
    assert result.exit_code == 0, result.output
    assert "Options, fewest GPUs that meet the latency targets first" in result.stdout
    assert "fastest first" not in result.stdout


# the assumptions in view: the header names the framework, the parameter count and the energy scope


def test_the_header_names_the_framework_and_why_when_it_is_the_default():
    default = ask("--model", "llama-3-8b", "--task", "lora", "--gpu", "h100-sxm-80gb")
    assert default.exit_code == 0, default.output
    head = " ".join(default.stdout.split("first option")[0].split())
    assert "Assumed: framework hf, the default for lora (kb/frameworks: Fine-tuning is most often run" in head
    given = ask("--model", "llama-3-8b", "--task", "lora", "--gpu", "h100-sxm-80gb", "--framework", "torchtune")
    assert "Assumed: framework torchtune (given)" in given.stdout
    assert "model 8.0B parameters, from kb/models" in given.stdout


def test_the_header_names_the_config_json_the_parameters_were_counted_from(tmp_path):
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
              "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
              "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 8192,
              "tie_word_embeddings": True, "torch_dtype": "bfloat16"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    result = ask("--model", str(path), "--task", "lora", "--gpu", "h100-sxm-80gb")
    assert result.exit_code == 0, result.output
    params = gpukb.ask({"model": str(path), "task": "lora", "gpus": ["h100-sxm-80gb"]}).workload.params
    text = "".join(result.stdout.split())  # a path wider than a line folds inside itself
    assert "".join(f"model {params / 1e9:,.1f}B parameters, counted from {path}".split()) in text


def test_the_header_and_the_energy_line_name_the_energy_scope_asked_for():
    args = ["--model", "llama-2-7b", "--task", "pretrain", "--tokens", "100B", "--gpu", "h100-sxm-80gb"]
    facility = " ".join(ask(*args).stdout.split())
    assert "energy scope: the facility (whole servers x PUE 1.58), grid us" in facility
    assert "Energy and CO₂ (facility, grid us;" in facility
    gpus = ask(*args, "--energy-scope", "gpu")
    assert gpus.exit_code == 0, gpus.output
    text = " ".join(gpus.stdout.split())
    assert "energy scope: GPUs only (as model cards count), grid us" in text
    assert "Energy and CO₂ (GPUs only, grid us;" in text
    assert "PUE 1.2" in " ".join(ask(*args, "--pue", "1.2").stdout.split())
    assert ask(*args, "--energy-scope", "rack").exit_code == 2


def test_every_line_of_a_plain_answer_keeps_to_80_columns():
    from rich.cells import cell_len

    for args in (["--model", "llama-2-70b", "--task", "pretrain", "--tokens", "2T", "--deadline-days", "30"],
                 ["--model", "llama-3-70b", "--task", "inference", "--batch-size", "32", "--launch"],
                 ["--model", "qwen2.5-7b", "--task", "lora", "--lang", "zh"]):
        result = ask(*args, columns=80)
        assert result.exit_code == 0, result.output
        wide = [line for line in result.stdout.splitlines() if cell_len(line.rstrip()) > 80]
        assert not wide, wide


def test_launch_writes_llama_cpp_and_trtllm_serve_lines_for_their_frameworks():
    from launchtext import launch_block

    cpp = ask("--model", "llama-3-8b", "--task", "inference", "--gpu", "rtx-4090-24gb", "--framework", "llama.cpp",
              "--precision", "int4", "--batch-size", "4", "--launch")
    assert cpp.exit_code == 0, cpp.output
    command = launch_block(cpp.stdout)[1]
    assert command.startswith("hf download meta-llama/Meta-Llama-3-8B --local-dir Meta-Llama-3-8B && python "
                              "convert_hf_to_gguf.py Meta-Llama-3-8B --outtype bf16 --outfile Meta-Llama-3-8B-bf16.gguf "
                              "&& llama-quantize Meta-Llama-3-8B-bf16.gguf Meta-Llama-3-8B-Q4_0.gguf Q4_0 && ")
    assert command.endswith("llama-server -m Meta-Llama-3-8B-Q4_0.gguf -ngl all -np 4 -c 16384")
    trt = ask("--model", "llama-3-70b", "--task", "inference", "--gpu", "h100-sxm-80gb", "--framework", "tensorrt-llm",
              "--launch")
    assert trt.exit_code == 0, trt.output
    assert launch_block(trt.stdout)[1].startswith("trtllm-serve meta-llama/Meta-Llama-3-70B --tp_size 2 --pp_size 1 ")
    fp8 = ask("--model", "llama-3-8b", "--task", "inference", "--gpu", "h100-sxm-80gb", "--framework", "llama.cpp",
              "--precision", "fp8", "--launch")
    assert fp8.exit_code == 2 and "llama.cpp has no GGUF format gpukb can write for fp8 weights" in fp8.stderr


# tables that keep their word, and a summary that names an option once


def test_a_table_titled_by_a_deadline_holds_only_the_options_that_meet_it():
    result = ask("--model", "llama-2-70b", "--task", "pretrain", "--tokens", "2T", "--deadline-days", "30",
                 "--gpu", "h100-sxm-80gb", "--gpu", "l40-48gb")
    assert result.exit_code == 0, result.output
    table, rest = result.stdout.split("Options, within 30 days, fewest GPU-hours first")[1].split("Not within 30 days:")
    assert "h100-sxm-80gb" in table and "l40-48gb" not in table
    late = gpukb.ask({"model": "llama-2-70b", "task": "pretrain", "tokens": "2T", "deadline_days": 30,
                      "gpus": ["h100-sxm-80gb", "l40-48gb"]}).options[-1]
    assert late.gpu == "l40-48gb" and late.meets_deadline is False
    assert f"{late.count} x l40-48gb {late.time_to_train_s / 86400:,.1f} days" in " ".join(rest.split())


def test_a_pinned_cluster_that_meets_the_horizon_is_not_titled_as_missing_it():
    # placement all ranks by speed whatever the horizon; the table's title said "none within 30 days" under a
    # headline that the same option met it with days to spare
    args = ["--model", "llama-2-7b", "--task", "pretrain", "--tokens", "100B", "--gpu", "h100-sxm-80gb",
            "--gpu-count", "64", "--placement", "all"]
    met = ask(*args)
    assert met.exit_code == 0, met.output
    assert "days to spare" in " ".join(met.stdout.split())
    assert "Options, fastest first" in met.stdout and "none within" not in met.stdout
    late = ask(*args[:5], "10T", *args[6:])  # 10T tokens on the same 64 GPUs: far past 30 days
    assert "Options, none within 30 days: fastest first" in late.stdout, late.output


def test_a_cost_ranked_table_shows_the_cost_it_ranks_by():
    from gpukb.answer.summary import per_million_tokens

    args = ["--model", "llama-3-8b", "--task", "lora", "--objective", "cost", "--gpu", "h100-sxm-80gb",
            "--gpu", "a100-sxm-80gb", "--gpu", "l40s-48gb"]
    result = ask(*args)
    assert result.exit_code == 0, result.output
    answer = gpukb.ask({"model": "llama-3-8b", "task": "lora", "objective": "cost",
                        "gpus": ["h100-sxm-80gb", "a100-sxm-80gb", "l40s-48gb"]})
    table = result.stdout.split("cheapest first")[1].split("Error bands")[0]
    rows = [line.split() for line in table.splitlines() if line.split()[:1] in (["GPU"], *([o.gpu] for o in answer.options))]
    header = rows[0]
    assert "$/Mtok" in header
    shown = {row[0]: float(row[header.index("$/Mtok")]) for row in rows[1:]}
    costs = [per_million_tokens(o) for o in answer.options]
    assert list(shown) == [o.gpu for o in answer.options] and costs == sorted(costs)
    assert list(shown.values()) == [round(c, 2) for c in costs]
    serving = ask("--model", "llama-3-8b", "--task", "inference", "--objective", "cost", "--gpu", "h100-sxm-80gb")
    assert "TTFT" in serving.stdout and "ms/tok" in serving.stdout


def test_a_summary_names_an_option_once_whatever_it_is_best_at():
    answer = gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]})
    lines = answer.summary.lines()
    assert lines[1].startswith("fastest, cheapest and fewest GPUs: 1 x h100-sxm-80gb — $")
    assert len(lines) == 2 and lines[1].count("tokens/s") == 1
    apart = gpukb.ask({"model": "llama-3-70b", "task": "inference", "batch_size": 32, "tpot_ms": 50,
                       "gpus": ["h100-sxm-80gb", "b200-sxm-180gb", "a100-sxm-80gb"]}).summary
    names = [line.split(":")[0] for line in apart.lines()[1:]]
    assert sorted(n for name in names for n in name.replace(" and ", ", ").split(", ")) == \
        ["cheapest", "fastest", "fewest GPUs"]
    options = [line.split(": ", 1)[1].split(" — ")[0] for line in apart.lines()[1:]]
    assert len(options) == len(set(options)) == len({(p.count, p.gpu) for p in (apart.fastest, apart.cheapest,
                                                                                  apart.fewest_gpus)}) > 1


# memory as the card reports it: a plan at the card's edge is planned and said to be at the edge


def test_a_plan_at_the_cards_edge_runs_there_and_says_so(kb):
    w = {"model": "llama-3.1-8b", "task": "lora", "seq_len": 4096, "micro_batch_size": 4,
         "activation_checkpointing": False, "gpus": ["h200-sxm-141gb"], "gpu_count": 1}
    (option,) = kb.ask(w).options  # the probe's run that allocated 145.2 GB of the card's 150.8 GB
    reported = kb.gpus["h200-sxm-141gb"].memory_bytes
    edge = reported * (1 - kb.policy("edge-reserve-fraction"))
    assert option.usable_bytes == round(edge) and option.per_gpu_bytes <= edge < reported
    reserve = reported * (1 - kb.policy("reserve-fraction")) + kb.policy("runtime-overhead")
    assert option.per_gpu_bytes > reserve  # more than the usual reserve leaves: at the edge, not refused
    (finding,) = [f for f in option.findings if f.rule.startswith("bottleneck.capacity.edge@")]
    assert finding.severity == "warning" and "at the card's edge" in finding.text()
    within = kb.ask({**w, "micro_batch_size": 1}).options[0]  # room to spare: no edge, no finding
    assert within.usable_bytes == round(reserve) and not [f for f in within.findings if "edge" in f.rule]


# RL: a rejection stays within the GPUs allowed, and its reason is a number that does not fit


@pytest.mark.parametrize("allowed", [1, 2, 3, 16])
def test_an_rl_rejection_stays_within_the_gpus_allowed_and_names_what_does_not_fit(kb, allowed):
    w = {"model": "qwen3-8b", "task": "grpo", "rollout_batch": 128, "samples_per_prompt": 8, "prompt_len": 512,
         "response_len": 2048, "gpus": ["h100-sxm-80gb"], "gpu_count": allowed, "rl_placement": "split"}
    if allowed == 16:
        w = {**w, "model": "llama-3.1-70b"}
    answer = kb.ask(w)
    assert not [o for o in answer.options if o.count > allowed]
    (rejected,) = answer.rejected
    assert rejected.count <= allowed
    text = rejected.deciding_finding.text()  # GB needed over GB usable, or GPUs needed over those allowed
    found = re.search(r"need ([\d,.]+) GB per GPU .* on (\d+) GPUs, against ([\d,.]+) GB usable", text)
    if found:
        assert float(found[1].replace(",", "")) > float(found[3].replace(",", "")), text
        assert int(found[2]) <= allowed
    else:
        needed, limit = map(int, re.search(r"needs (\d+) GPUs, more than the (\d+) allowed", text).groups())
        assert needed > limit == allowed, text
