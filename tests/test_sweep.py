"""Sweeps: a grid or a file of workloads, answered in order across processes, one record per answer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.estimate import sweeps
from gpukb.estimate.sweeps import grid, read_workloads

runner = CliRunner()
GRID = grid(["llama-2-7b", "mistral-7b"], ["lora", "inference"], [2048], ["a100-sxm-80gb", "l4-24gb"])


def test_the_grid_is_every_combination_models_outermost() -> None:
    assert len(GRID) == 8
    assert GRID[0] == {"model": "llama-2-7b", "task": "lora", "seq_len": 2048, "gpus": ["a100-sxm-80gb"]}
    assert GRID[-1] == {"model": "mistral-7b", "task": "inference", "seq_len": 2048, "gpus": ["l4-24gb"]}
    assert grid(["llama-2-7b"], ["lora"]) == [{"model": "llama-2-7b", "task": "lora"}]


def test_one_process_gives_the_answers_of_ask(kb: gpukb.KnowledgeBase) -> None:
    records = list(gpukb.sweep(GRID[:3], processes=1))
    assert [r["index"] for r in records] == [0, 1, 2]
    for workload, rec in zip(GRID[:3], records, strict=True):
        answer = kb.ask(workload)
        assert rec["workload"] == workload
        assert rec["best"]["gpu"] == answer.best.gpu and rec["best"]["count"] == answer.best.count
        assert rec["best"]["tokens_per_s"] == answer.best.tokens_per_s
        assert rec["fits"] == {workload["gpus"][0]: answer.best.fits}
        assert rec["memory_bytes"] == answer.memory.total
    json.dumps(records)  # every record is plain JSON


def test_two_processes_give_the_same_records_in_input_order() -> None:
    workloads = [*GRID, {"model": "no-such-model", "task": "lora"}, GRID[0]]
    one = list(gpukb.sweep(workloads, processes=1))
    two = list(gpukb.sweep(workloads, processes=2))
    assert two == one
    assert [r["index"] for r in two] == list(range(len(workloads)))


def test_a_failed_ask_is_a_record_and_the_sweep_goes_on() -> None:
    records = list(gpukb.sweep([{"model": "no-such-model", "task": "lora"}, {"task": "cook"}, GRID[0]]))
    assert records[0]["error"].startswith("WorkloadError: ") and "no-such-model" in records[0]["error"]
    assert "error" in records[1]
    assert records[2]["best"]["gpu"] == "a100-sxm-80gb"


def test_a_workload_that_fits_nowhere_has_no_best_option() -> None:
    (rec,) = gpukb.sweep([{"model": "llama-3.1-405b", "task": "full_finetune", "gpus": ["l4-24gb"], "gpu_count": 1}])
    assert rec["best"] is None and rec["fits"] == {"l4-24gb": False}


def test_the_command_streams_json_lines_to_stdout_or_a_file(tmp_path: Path) -> None:
    args = ["sweep", "--model", "llama-2-7b,mistral-7b", "--task", "lora", "--gpu", "a100-sxm-80gb", "--gpu", "l4-24gb"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["workload"]["model"], r["workload"]["gpus"][0]) for r in lines] == [
        ("llama-2-7b", "a100-sxm-80gb"), ("llama-2-7b", "l4-24gb"), ("mistral-7b", "a100-sxm-80gb"), ("mistral-7b", "l4-24gb")]
    out = tmp_path / "sweep.jsonl"
    result = runner.invoke(app, [*args, "--output", str(out), "--processes", "2"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == lines


def test_the_command_reads_a_file_of_workloads_and_reports_errors_in_place(tmp_path: Path) -> None:
    workloads = tmp_path / "workloads.yaml"
    workloads.write_text("- {model: llama-2-7b, task: lora, gpus: [a100-sxm-80gb]}\n- {model: nope, task: lora}\n",
                         encoding="utf-8")
    result = runner.invoke(app, ["sweep", "--file", str(workloads)])
    assert result.exit_code == 0, result.output
    first, second = (json.loads(line) for line in result.stdout.splitlines())
    assert first["best"]["gpu"] == "a100-sxm-80gb" and "nope" in second["error"]
    assert "at" not in first and second["at"] == f"{workloads}:2"  # where the failed workload is
    assert f"the first from the file: {workloads}:2" in result.stderr
    assert read_workloads(workloads)[1] == {"model": "nope", "task": "lora"}


def test_the_command_refuses_half_a_grid_and_a_file_that_is_not_a_list(tmp_path: Path) -> None:
    assert runner.invoke(app, ["sweep", "--model", "llama-2-7b"]).exit_code == 2
    assert runner.invoke(app, ["sweep"]).exit_code == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: llama-2-7b\ntask: lora\n", encoding="utf-8")
    result = runner.invoke(app, ["sweep", "--file", str(bad)])
    assert result.exit_code == 2 and "expected a list of workloads" in result.output


@pytest.mark.parametrize(("name", "text", "where", "says"), [
    ("broken.yaml", "- model: llama-2-7b\n  task: [lora\n", ":3:1:", "YAML syntax"),
    ("items.yaml", "- {model: llama-2-7b, task: lora}\n- 3\n", ":2:3:", "workload 2 is not a mapping"),
    ("aliases.yaml", "- &a {model: llama-2-7b, task: lora}\n- *a\n", ":1:3:", "anchors and aliases"),
    ("broken.jsonl", '{"model": "llama-2-7b", "task": "lora"}\n{"model": \n', ":2:", "not JSON"),
    ("list.jsonl", '{"model": "llama-2-7b", "task": "lora"}\n[1]\n', ":2:1:", "one workload"),
    ("latin1.jsonl", '{"model": "llama-2-7b", "task": "lora"}\n{"model": "caf\xe9"}\n', ":2:", "not UTF-8"),
    ("big.jsonl", '{"model": "llama-2-7b", "task": "lora", "tokens": 1e61}\n', ":1:", "tokens: 1e61 is not a finite"),
])
def test_a_bad_file_of_workloads_is_refused_at_its_line(tmp_path: Path, name: str, text: str, where: str,
                                                        says: str) -> None:
    path = tmp_path / name
    path.write_bytes(text.encode("latin-1" if "latin1" in name else "utf-8"))
    result = runner.invoke(app, ["sweep", "--file", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}{where}" in result.output and says in result.output
    assert "Traceback" not in result.output
    assert "no such file" in runner.invoke(app, ["sweep", "--file", str(tmp_path / "missing.yaml")]).output
    os.mkfifo(tmp_path / "fifo.jsonl")  # refused, not waited on
    assert "not a regular file" in runner.invoke(app, ["sweep", "--file", str(tmp_path / "fifo.jsonl")]).output


def test_json_lines_and_a_sweeps_own_output_are_workloads(tmp_path: Path) -> None:
    lines = tmp_path / "workloads.jsonl"
    lines.write_text('{"model": "llama-2-7b", "task": "lora", "gpus": ["a100-sxm-80gb"]}\n\n'
                     '{"model": "llama-3-8b", "task": "inference", "gpus": ["l40s-48gb"]}\n', encoding="utf-8")
    assert [w["model"] for w in read_workloads(lines)] == ["llama-2-7b", "llama-3-8b"]
    assert sweeps.read_located_workloads(lines)[1] == [f"{lines}:1", f"{lines}:3"]  # the blank line counts
    answers = tmp_path / "answers"  # no suffix: a file that starts with `{` is JSON Lines
    result = runner.invoke(app, ["sweep", "--file", str(lines), "--output", str(answers)])
    assert result.exit_code == 0, result.output
    assert read_workloads(answers) == read_workloads(lines)


def test_a_workload_that_is_not_json_data_is_an_error_record_across_processes() -> None:
    records = list(gpukb.sweep([GRID[0], {"model": {"llama-2-7b"}, "task": "lora"}, GRID[1]], processes=2))
    assert [r["index"] for r in records] == [0, 1, 2]
    assert "error" in records[1] and records[0]["best"] and records[2]["best"]


def test_worker_processes_keep_freed_memory_unless_the_caller_says_otherwise(monkeypatch) -> None:
    """glibc reads these at start-up: the workers keep durable-rules' freed session tables in the heap
    rather than page-fault them back in for every ask; a value in the caller's environment wins."""
    seen: list[dict[str, str]] = []
    popen = subprocess.Popen

    def recording(*args, **kwargs):
        seen.append(kwargs["env"])
        return popen(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recording)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    records = list(sweeps._across(GRID[:2], 2, None))  # workers even where one CPU would answer in-process
    assert [r["index"] for r in records] == [0, 1] and len(seen) == 2
    for env in seen:
        assert env["MALLOC_MMAP_THRESHOLD_"] == str(32 << 20)
        assert env["MALLOC_TRIM_THRESHOLD_"] == "131072"


def test_workers_that_cannot_load_the_knowledge_base_say_why_once_each(tmp_path: Path, workers) -> None:
    records = list(sweeps._across(GRID[:3], 2, str(tmp_path)))
    assert [r["index"] for r in records] == [0, 1, 2] and len(workers) == 2  # none started again
    assert all(r["error"].startswith("RuntimeError: the worker process did not start (KBError: ") for r in records)
    result = runner.invoke(app, ["sweep", "--model", "llama-2-7b", "--task", "lora", "--root", str(tmp_path)])
    assert result.exit_code == 1 and "E004" in result.output and "Traceback" not in result.output


def test_an_rl_record_carries_the_step():
    (record,) = list(gpukb.sweep([{"model": "qwen2.5-7b", "task": "grpo", "rollout_batch": 64, "samples_per_prompt": 8,
                                   "prompt_len": 512, "response_len": 2048, "gpus": ["h100-sxm-80gb"]}]))
    rl = record["best"]["rl"]
    assert rl["step_time_s"] == pytest.approx(sum(rl["phases"].values()))
    assert set(rl["memory_by_role"]) == {"policy", "reference", "rollout"}
