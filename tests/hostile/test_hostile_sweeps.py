"""Hostile sweeps: a working folder holding a module of the standard library's name, a workload that
reads the workers' own input, a worker that dies, a sweep asking for a million processes, and files
of workloads nested 100,000 deep or holding a 5,000-digit number. Process-level cases run in a
child process with a time limit."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from child import run_child
from cpu_budget import within_cpu_seconds
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.estimate import sweeps
from gpukb.knowledge import kbcache

runner = CliRunner()
GOOD = {"model": "llama-2-7b", "task": "inference", "gpus": ["l4-24gb"]}
# sweeps._across: the workers themselves, even where a machine of one CPU would answer in-process.
# The child, their caller, runs isolated (-I) on this process's import path less its working folder,
# so it imports the gpukb under test and nothing from its own folder or PYTHONPATH.
ACROSS = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); from gpukb.estimate.sweeps import _across; "
          "print(json.dumps(list(_across(json.loads(sys.argv[2]), 2, None))))")


@pytest.fixture()
def env(tmp_path: Path, kb: gpukb.KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A child's environment (and this process's) whose workers read a private copy of the knowledge
    base written here, instead of each parsing its files."""
    cache = tmp_path / "cache"
    monkeypatch.delenv("GPUKB_NO_CACHE")
    monkeypatch.setenv("GPUKB_CACHE_DIR", str(cache))
    _, fresh = kbcache.read(gpukb.packaged_root())
    assert fresh is not None
    kbcache.write(fresh, kb)
    child = {k: v for k, v in os.environ.items() if not k.startswith("GPUKB_")}
    return {**child, "GPUKB_CACHE_DIR": str(cache)}


def _across(workloads: list[dict], cwd: Path, env: dict[str, str]) -> list[dict]:
    done = run_child(["-I", "-c", ACROSS, json.dumps(sweeps._import_path()), json.dumps(workloads)], cwd, env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_module_in_the_working_folder_or_pythonpath_never_runs_in_a_worker(tmp_path: Path,
                                                                           env: dict[str, str]) -> None:
    marker = tmp_path / "ran"
    planted = f"open({str(marker)!r}, 'a').write('imported\\n')\nfrom importlib import import_module\n"
    folder, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    for where in (folder, elsewhere):
        where.mkdir()
        (where / "json.py").write_text(planted, encoding="utf-8")
        (where / "sitecustomize.py").write_text(planted, encoding="utf-8")
    records = _across([GOOD, GOOD], folder, {**env, "PYTHONPATH": str(elsewhere)})
    assert [r["best"]["gpu"] for r in records] == ["l4-24gb", "l4-24gb"]
    assert not marker.exists()


def test_a_workload_reading_dev_stdin_loses_no_other_workload(tmp_path: Path, env: dict[str, str]) -> None:
    """/dev/stdin once read the rest of its worker's input: the other workloads came back as 'worker
    exited'. Thirty long unknown names fill more than a pipe read's buffer after it."""
    unknown = [{"model": f"no-such-model-{i}-" + "x" * 1000, "task": "lora"} for i in range(30)]
    workloads = [GOOD, {"model": "/dev/stdin", "task": "lora"}, *unknown, GOOD]
    records = _across(workloads, tmp_path, env)
    assert [r["index"] for r in records] == list(range(len(workloads)))
    assert records[1]["error"].startswith("ConfigError: model: /dev/stdin")
    assert all(r["error"].startswith("WorkloadError: ") and f"no-such-model-{i}-" in r["error"]
               for i, r in enumerate(records[2:-1]))
    assert records[0]["best"]["gpu"] == records[-1]["best"]["gpu"] == "l4-24gb"


def test_a_worker_that_dies_costs_one_record_and_is_replaced(env: dict[str, str],
                                                             workers: list[subprocess.Popen[str]]) -> None:
    """A crash in C (SIGKILL here, once the worker has answered) ends its worker: the workload it was on
    gets an error record, a new worker answers the rest of its share."""
    workloads = [dict(GOOD, seq_len=1024 + i) for i in range(24)]
    records = []
    for record in sweeps._across(workloads, 2, None):
        records.append(record)
        if len(records) == 1:
            workers[0].kill()
    died = [r for r in records if "error" in r]
    assert [r["index"] for r in records] == list(range(24))
    assert len(died) <= 1 and all("the worker process died answering it (killed by SIGKILL)" in r["error"] for r in died)
    last_of_its_share = max(range(0, 24, 2))  # one a worker in turn: 24 // (2 workers * 8) < 2
    assert len(workers) == 2 + sum(r["index"] < last_of_its_share for r in died)  # replaced when work is left
    assert all(r["best"]["gpu"] == "l4-24gb" for r in records if "error" not in r)


def test_processes_are_capped_at_the_cpus_and_the_workloads(env: dict[str, str], workers: list[subprocess.Popen[str]],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweeps, "cpus", lambda: 2)
    assert len(list(gpukb.sweep([GOOD] * 3, processes=10**6))) == 3 and len(workers) == 2
    monkeypatch.setattr(sweeps, "cpus", lambda: 8)
    workers.clear()
    assert len(list(gpukb.sweep([GOOD] * 3, processes=10**6))) == 3 and len(workers) == 3
    monkeypatch.setattr(sweeps, "cpus", lambda: 1)
    workers.clear()
    assert len(list(gpukb.sweep([GOOD] * 3, processes=10**6))) == 3 and not workers  # answered in-process
    assert 1 <= sweeps.cpus() <= (os.cpu_count() or 1)


@pytest.mark.parametrize(("text", "where", "says"), [
    ('{"model": ' + "[" * 100_000 + "]" * 100_000 + ', "task": "lora"}', ":2:42:", "model: nested more than 32 levels deep"),
    ("[" * 100_000, ":2:33:", "nested more than 32 levels deep"),
    ('{"model": "llama-2-7b", "task": "lora", "seq_len": ' + "9" * 5000 + "}", ":2:", "seq_len: an integer of 5,000 digits"),
    ('{"model": "llama-2-7b", "task": "lora", "gpus": [' + "1" * 5000 + "]}", ":2:", "gpus[0]: an integer of 5,000 digits"),
    ('{"model": "llama-2-7b", "task": "pretrain", "tokens": 1' + "0" * 5000 + ".5}", ":2:",
     "tokens: 1000000000000000000000000000000000000000... is not a finite number"),
    ('{"workload": {"model": "llama-2-7b", "task": "lora", "seq_len": NaN}}', ":2:", "workload.seq_len: NaN is not a finite"),
])
def test_a_hostile_line_of_json_lines_is_refused_at_its_line_in_time(tmp_path: Path, text: str, where: str,
                                                                    says: str) -> None:
    path = tmp_path / "workloads.jsonl"
    path.write_text('{"model": "llama-2-7b", "task": "lora"}\n' + text + "\n", encoding="utf-8")
    with within_cpu_seconds(2.0, "reading the file"), pytest.raises(sweeps.SweepFileError) as refused:
        sweeps.read_workloads(path)
    assert str(refused.value).startswith(f"{path}{where}") and says in str(refused.value)
    result = runner.invoke(app, ["sweep", "--file", str(path)])
    assert result.exit_code == 2 and f"{path}{where}" in result.output and "Traceback" not in result.output
