"""Files that are not files: a FIFO, a device, a NUL byte or an overlong name where a path is read, and
kind folders that are links out of the checkout. Each is a located error, never a hang or a walk of
the link's target; the cases that could hang run in a subprocess with a time limit."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cpu_budget import within_cpu_seconds

import gpukb
from gpukb import KBError, WorkloadError
from gpukb.answer.launch import model_reference
from gpukb.core import safepath
from gpukb.estimate.sweeps import SweepFileError, read_workloads
from gpukb.knowledge.hfconfig import ConfigError
from launchtext import launch_block

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "tests" / "fixtures" / "hf" / "llama-2-7b" / "config.json"
LIMIT = 20.0  # seconds for a whole gpukb process; a hang would run until killed
FAST = 2.0  # seconds for a refusal in this process


def _gpukb(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gpukb ARGS` in a fresh process, killed (and the test failed) past LIMIT."""
    env = {**os.environ, "GPUKB_CACHE_DIR": os.environ.get("GPUKB_CACHE_DIR", str(cwd / ".cache"))}
    try:
        return subprocess.run([sys.executable, "-c", "from gpukb.cli import app; app()", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"gpukb {' '.join(args)} still ran after {LIMIT} s")


def _refused_quickly(workload: dict[str, object], *says: str) -> WorkloadError:
    gpukb.load_kb()  # loaded once per process: not the refusal's time
    started = time.perf_counter()
    with pytest.raises(WorkloadError) as caught:
        gpukb.ask(workload)
    assert time.perf_counter() - started < FAST
    assert caught.value.field == "model"
    for word in says:
        assert word in str(caught.value)
    return caught.value


# --- a model's config path ---------------------------------------------------------------------------


def test_a_fifo_named_config_json_is_refused_not_waited_on(tmp_path):
    (tmp_path / "model").mkdir()
    os.mkfifo(tmp_path / "model" / "config.json")
    os.mkfifo(tmp_path / "pipe.json")
    for ref in ("model", "model/config.json", "pipe.json"):
        result = _gpukb("ask", "--model", ref, "--task", "inference", cwd=tmp_path)
        assert result.returncode == 2, result.stderr
        assert "FIFO" in result.stderr and "model:" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null", "/dev/stdin", "/dev/tty"])
def test_a_device_is_refused(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device} here")
    _refused_quickly({"model": device, "task": "inference"}, device, "not a regular file")


def test_a_nul_byte_is_a_config_error_naming_the_field():
    error = _refused_quickly({"model": "models/ll\0ama/config.json", "task": "inference"}, "NUL byte")
    assert isinstance(error, ConfigError) and "\0" not in str(error)


def test_overlong_names_are_config_errors(tmp_path):
    name = "x" * 300
    _refused_quickly({"model": f"{tmp_path}/{name}/config.json", "task": "inference"}, "300 bytes", "255")
    _refused_quickly({"model": f"{tmp_path}/{name}", "task": "inference"}, "300 bytes")
    with pytest.raises(safepath.RefusedPath, match="at most 4,096"):
        safepath.read_bytes("/".join(["y" * 200] * 30), 10)


@pytest.mark.parametrize("char", ["\u202e", "\u2066", "\u200b", "\x1b", "\x85", "\n", "\x7f", "\ufeff"])
def test_a_name_that_would_not_print_as_itself_is_refused(tmp_path, char):
    """Control and bidirectional characters would be stripped when the launch line is printed, which would
    then name another folder: such a folder is refused before anything is read or quoted."""
    folder = tmp_path / f"model{char}s"
    folder.mkdir()
    shutil.copy(CONFIG, folder / "config.json")
    error = _refused_quickly({"model": str(folder), "task": "inference"}, f"U+{ord(char):04X}", "rename it")
    assert char not in str(error)  # the message shows it escaped


def test_a_folder_that_starts_with_a_dash_is_never_an_option(tmp_path, monkeypatch):
    folder = tmp_path / "--trust-remote-code"
    folder.mkdir()
    shutil.copy(CONFIG, folder / "config.json")
    monkeypatch.chdir(tmp_path)
    for ref in ("./--trust-remote-code/config.json", "./--trust-remote-code", "--trust-remote-code/config.json"):
        answer = gpukb.ask({"model": ref, "task": "inference", "gpus": ["h100-sxm-80gb"]})
        for engine, line in answer.best.launch.items():
            words = shlex.split(line)
            assert "--trust-remote-code" not in words, (engine, line)
            named = words[words.index("serve") + 1] if engine == "vllm" else words[words.index("--model-path") + 1]
            assert named == "./--trust-remote-code"
            assert os.path.samefile(named, folder)
    result = _gpukb("ask", "--model", "./--trust-remote-code/config.json", "--task", "inference", "--launch",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    comment, command = launch_block(result.stdout)  # the option it is for, then the line to paste
    assert comment.startswith("# ") and shlex.split(command)[2] == "./--trust-remote-code"


@pytest.mark.parametrize("name", ["a b", "$(touch pwned)", "it's", "-x y", "ü-名", "`id`", "a\\b"])
def test_the_quoted_launch_line_names_the_folder(tmp_path, name):
    folder = tmp_path / name
    folder.mkdir()
    shutil.copy(CONFIG, folder / "config.json")
    answer = gpukb.ask({"model": str(folder), "task": "inference", "gpus": ["h100-sxm-80gb"]})
    words = shlex.split(answer.best.launch["vllm"])
    assert words[:3] == ["vllm", "serve", str(folder)] and not (tmp_path / "pwned").exists()


def test_the_launch_line_names_the_folder_read():
    class W:
        config_file = "-x/config.json"

    assert model_reference(W(), None) == "./-x"  # type: ignore[arg-type]
    W.config_file = "/abs/-x/config.json"
    assert model_reference(W(), None) == "/abs/-x"  # type: ignore[arg-type]
    W.config_file = "hf:org/name"
    assert model_reference(W(), None) == "org/name"  # type: ignore[arg-type]


# --- a checkout's folders and files ------------------------------------------------------------------


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    root.mkdir()
    for top in ("kb", "rules"):
        shutil.copytree(REPO / top, root / top)
    return root


@pytest.mark.parametrize(("folder", "target"), [("kb/gpus", "/usr"), ("kb/gpus", "/"), ("rules", "/usr"),
                                                ("rules/requirements", "/"), ("kb/models", "outside")])
def test_a_kind_folder_linked_out_of_the_checkout_is_refused_before_walking(tmp_path, folder, target):
    root = _checkout(tmp_path)
    shutil.rmtree(root / folder)
    if target == "outside":
        (tmp_path / "outside").mkdir()
        (tmp_path / "outside" / "secret.yaml").write_text("id: secret\n")
        target = str(tmp_path / "outside")
    (root / folder).symlink_to(target)
    with within_cpu_seconds(FAST * 2, "loading a checkout whose folder links out"), pytest.raises(KBError) as caught:
        gpukb.load_kb(root)  # walking /usr would take far longer
    problems = caught.value.problems
    assert [(p.file, p.code) for p in problems] == [(folder, "E005")], str(caught.value)
    assert "leading out of the checkout" in problems[0].message


def test_a_fifo_named_like_a_yaml_file_is_refused_by_lint(tmp_path):
    root = _checkout(tmp_path)
    os.mkfifo(root / "kb" / "gpus" / "zz-pipe.yaml")
    os.mkfifo(root / "kb" / "lint.yaml.tmp")  # not a YAML file: never looked at
    result = _gpukb("lint", str(root), cwd=tmp_path)
    assert result.returncode != 0
    assert "kb/gpus/zz-pipe.yaml:1:1: E005 a FIFO (named pipe), not a regular file" in result.stdout + result.stderr


def test_a_fifo_article_is_a_lint_problem(tmp_path):
    root = _checkout(tmp_path)
    (root / "kb" / "article.zh.txt").unlink()
    os.mkfifo(root / "kb" / "article.zh.txt")
    result = _gpukb("lint", str(root), cwd=tmp_path)
    assert result.returncode != 0
    assert "kb/article.zh.txt:1:1: E040" in result.stdout + result.stderr and "FIFO" in result.stdout + result.stderr


# --- sweep and scenario files --------------------------------------------------------------------------


def test_a_fifo_sweep_file_is_refused(tmp_path):
    os.mkfifo(tmp_path / "workloads.yaml")
    result = _gpukb("sweep", "--file", "workloads.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "FIFO" in result.stderr and "Traceback" not in result.stderr


def test_sweep_and_scenario_files_with_impossible_names(tmp_path):
    from gpukb.contrib.scenarios import ScenarioError, load_scenarios

    for name, says in (("a\0b.yaml", "NUL byte"), ("c" * 256 + ".yaml", "at most 255"), ("/dev/zero", "character device")):
        with pytest.raises(SweepFileError, match=says):
            read_workloads(name)
        with pytest.raises(ScenarioError, match=says):
            load_scenarios(name)


@pytest.mark.parametrize("root", ["kb\0root", "x" * 300, "y/" * 3000])
def test_a_checkout_no_folder_can_be_is_a_kb_error(root):
    with pytest.raises(KBError, match="E004 no knowledge base at"):
        gpukb.load_kb(root)
