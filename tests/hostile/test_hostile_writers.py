"""What gpukb writes (kb/schema, probe entries, reports, sweeps, the cache): never through a symbolic link,
never outside its folder, through a temporary renamed into place, never replacing an entry silently, and
leaving no temporary behind once its writer is gone. Commands run in a child process with a time limit."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from child import run_child

import gpukb
from gpukb.contrib.scenarios import ScenarioError, load_scenarios
from gpukb.core import safewrite
from gpukb.knowledge import kbcache
from gpukb.probe.probe import ProbeError, Result, entries, write

REPO = Path(__file__).resolve().parents[2]
CLI = ["-c", "from gpukb.cli.main import app; app()"]
SECRET = '{"not": "a schema"}\n'


def _dead_pid() -> int:
    """The id of a process that has ended."""
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    return int(done.stdout)


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    """A file outside the checkout that a link will point at."""
    path = tmp_path / "elsewhere" / "target.json"
    path.parent.mkdir()
    path.write_text(SECRET, encoding="utf-8")
    return path


@pytest.fixture()
def schema_checkout(tmp_path: Path) -> Path:
    root = tmp_path / "checkout"
    shutil.copytree(REPO / "kb", root / "kb")
    return root


# --- the one writer ---------------------------------------------------------------------------------


def test_the_writer_refuses_a_link_at_the_name_and_leaves_its_target(tmp_path: Path, outside: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.json").symlink_to(outside)
    for replace in (False, True):
        with pytest.raises(safewrite.RefusedWrite, match="symbolic link"):
            safewrite.write_file(tmp_path / "out", "a.json", "{}", replace=replace)
    assert outside.read_text(encoding="utf-8") == SECRET
    assert os.listdir(tmp_path / "out") == ["a.json"]  # no temporary left behind


def test_the_writer_refuses_a_folder_out_of_its_root(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "away").mkdir()
    (tmp_path / "root" / "linked").symlink_to(tmp_path / "away")
    with pytest.raises(safewrite.RefusedWrite, match="leads out of"):
        safewrite.write_file(tmp_path / "root" / "linked", "a.json", "{}", within=tmp_path / "root")
    with pytest.raises(safewrite.RefusedWrite, match="not a plain file name"):
        safewrite.write_file(tmp_path / "root", "../a.json", "{}")
    assert not os.listdir(tmp_path / "away")


def test_the_writer_never_replaces_a_file_unless_asked(tmp_path: Path) -> None:
    safewrite.write_file(tmp_path, "a.txt", "first")
    with pytest.raises(safewrite.RefusedWrite) as refused:
        safewrite.write_file(tmp_path, "a.txt", "second")
    assert refused.value.exists
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "first"
    safewrite.write_file(tmp_path, "a.txt", "third", replace=True)
    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "third"


def test_a_writers_orphaned_temporary_is_removed_on_the_next_write(tmp_path: Path) -> None:
    orphan = tmp_path / f".gpukb-tmp.{_dead_pid()}.0123abcd"
    orphan.write_bytes(b"x" * 1000)
    mine = tmp_path / f".gpukb-tmp.{os.getpid()}.89abcdef"  # a write in progress in a live process
    mine.write_bytes(b"y")
    other = tmp_path / ".gpukb-tmp.notes"  # not of the writer's naming
    other.write_bytes(b"z")
    safewrite.write_file(tmp_path, "a.txt", "data")
    assert not orphan.exists() and mine.exists() and other.exists()


# --- gpukb schema ------------------------------------------------------------------------------------


def test_schema_refuses_a_schema_file_linked_out_of_the_checkout(schema_checkout: Path, outside: Path) -> None:
    linked = schema_checkout / "kb" / "schema" / "gpu.schema.json"
    linked.unlink()
    linked.symlink_to(outside)
    checked = run_child([*CLI, "schema", "--check", str(schema_checkout)], schema_checkout, cpu_seconds=10)
    assert checked.returncode == 1
    assert f"{linked}: it is a symbolic link" in checked.stderr and "run `gpukb schema`" not in checked.stderr
    written = run_child([*CLI, "schema", str(schema_checkout)], schema_checkout, cpu_seconds=10)
    assert written.returncode == 2 and f"{linked}: it is a symbolic link" in written.stderr, written.stderr
    assert "Traceback" not in written.stderr
    assert outside.read_text(encoding="utf-8") == SECRET and linked.is_symlink()


def test_schema_refuses_a_schema_folder_linked_out_of_the_checkout(schema_checkout: Path, tmp_path: Path) -> None:
    away = tmp_path / "away"
    shutil.move(schema_checkout / "kb" / "schema", away)
    (schema_checkout / "kb" / "schema").symlink_to(away)
    before = {p.name: p.read_bytes() for p in away.iterdir()}
    (away / "gpu.schema.json").write_text(SECRET, encoding="utf-8")
    written = run_child([*CLI, "schema", str(schema_checkout)], schema_checkout, cpu_seconds=10)
    assert written.returncode == 2 and "leads out of" in written.stderr, written.stderr
    assert (away / "gpu.schema.json").read_text(encoding="utf-8") == SECRET
    assert {p.name for p in away.iterdir()} == set(before)


def test_schema_writes_regular_files_and_then_checks_clean(schema_checkout: Path) -> None:
    (schema_checkout / "kb" / "schema" / "gpu.schema.json").write_text("{}", encoding="utf-8")
    assert run_child([*CLI, "schema", "--check", str(schema_checkout)], schema_checkout,
                     cpu_seconds=10).returncode == 1
    assert run_child([*CLI, "schema", str(schema_checkout)], schema_checkout, cpu_seconds=10).returncode == 0
    assert run_child([*CLI, "schema", "--check", str(schema_checkout)], schema_checkout,
                     cpu_seconds=10).returncode == 0
    assert not [p for p in (schema_checkout / "kb" / "schema").iterdir() if p.name.startswith(".gpukb-tmp")]


# --- gpukb probe --out -------------------------------------------------------------------------------


def _result(**settings: object) -> Result:
    workload = {"task": "full_finetune", "model": "llama-3.1-8b", "seq_len": 32, "micro_batch_size": 2,
                "framework": "hf", **settings}
    return Result(workload, "cpu", "", {}, {"train_tokens_per_s": 1234.0}, {"torch": "2.5.0"}, "gpukb probe --tiny",
                  date="2026-01-02")


def test_a_second_probe_run_gets_new_ids_and_keeps_the_first(tmp_path: Path) -> None:
    first = write(_result(), tmp_path)
    text = {path: path.read_text(encoding="utf-8") for path in first}
    second = write(_result(lora_rank=8), tmp_path)  # other settings, the same shape: the same name
    assert {p.name for p in second}.isdisjoint({p.name for p in first})
    assert {path: path.read_text(encoding="utf-8") for path in first} == text
    kb = gpukb.load_kb(REPO)
    ids = set()
    for path in second:
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")):
            ids.add(entry["id"])
            assert len(entry["id"]) <= 80
    base, _, _ = entries(_result(), 2)
    assert ids == {base, f"{base}-tps"} and not ids & set(kb.measurements)
    (source,) = [p for p in second if p.parent.name == "sources"]
    assert f"kb/measurements/{base}.yaml" in source.read_text(encoding="utf-8")


def test_probe_refuses_a_link_planted_at_its_file_name(tmp_path: Path, outside: Path) -> None:
    base, _, _ = entries(_result(), 1)
    (tmp_path / "kb" / "sources").mkdir(parents=True)
    planted = tmp_path / "kb" / "sources" / f"{base}.yaml"
    planted.symlink_to(outside)
    with pytest.raises(ProbeError, match="symbolic link") as refused:
        write(_result(), tmp_path)
    assert str(planted) in str(refused.value)
    assert outside.read_text(encoding="utf-8") == SECRET
    assert not (tmp_path / "kb" / "measurements").exists()  # no half of the run written


@pytest.mark.parametrize("kind", ["file", "linked kb folder"])
def test_probe_out_naming_a_file_is_refused_before_the_run(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "out.yaml"
    if kind == "file":
        target.write_text("x", encoding="utf-8")
        says = "it is a file, not a folder"
    else:
        target.mkdir()
        (tmp_path / "away").mkdir()
        (target / "kb").mkdir()
        (target / "kb" / "measurements").symlink_to(tmp_path / "away")
        says = "leads out of"
    done = run_child([*CLI, "probe", "--task", "full_finetune", "--model", "llama-3.1-8b", "--tiny", "--device", "cpu",
                      "--out", str(target)], tmp_path, cpu_seconds=10)
    assert done.returncode == 2, done.stderr
    assert f"--out {target}" in done.stderr and says in done.stderr
    assert "PyTorch" not in done.stderr and "Traceback" not in done.stderr  # refused before anything ran


# --- --output of impact and sweep --------------------------------------------------------------------


def test_sweep_output_through_a_link_is_refused(tmp_path: Path, outside: Path) -> None:
    link = tmp_path / "answers.jsonl"
    link.symlink_to(outside)
    done = run_child([*CLI, "sweep", "--model", "llama-2-7b", "--task", "lora", "--output", str(link)], tmp_path,
                     cpu_seconds=10)
    assert done.returncode == 2 and "symbolic link" in done.stderr, done.stderr
    assert outside.read_text(encoding="utf-8") == SECRET


def test_a_sweep_writes_its_output_into_place(tmp_path: Path) -> None:
    output = tmp_path / "answers.jsonl"
    output.write_text("an older sweep\n", encoding="utf-8")
    done = run_child([*CLI, "sweep", "--model", "llama-2-7b,llama-3-8b", "--task", "lora", "--output", str(output)],
                     tmp_path, cpu_seconds=20)
    assert done.returncode == 0, done.stderr
    assert len(output.read_text(encoding="utf-8").splitlines()) == 2
    assert sorted(os.listdir(tmp_path)) == ["answers.jsonl"]


# --- the cache ---------------------------------------------------------------------------------------


def test_the_cache_removes_a_killed_writers_temporaries_on_the_next_start(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUKB_")}, "GPUKB_CACHE_DIR": str(tmp_path / "c")}
    monkeypatch.delenv("GPUKB_NO_CACHE")
    monkeypatch.setenv("GPUKB_CACHE_DIR", env["GPUKB_CACHE_DIR"])
    _, path = kbcache.read(gpukb.packaged_root())  # the private folder and its key
    assert path is not None
    dead = _dead_pid()
    orphans = [path.parent / f".gpukb-tmp.{dead}.0123abcd",
               path.parent / f"kb-{'0' * 64}.pickle.{dead}.89abcdef",  # the naming before core.safewrite
               path.parent / f"key.{dead}.00ff00ff"]
    for orphan in orphans:
        descriptor = os.open(orphan, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(b"\0" * 1_600_000)
    done = run_child(["-c", "from gpukb import packaged_root\nfrom gpukb.knowledge import kbcache\n"
                            "kbcache.read(packaged_root())"], tmp_path, env)
    assert done.returncode == 0, done.stderr
    assert not [orphan for orphan in orphans if orphan.exists()]
    assert (path.parent / "key").exists()


# --- site/scenarios.yaml through the bounded loader ----------------------------------------------------

LAUGHS = "\n".join(["a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
                    *(f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]" for i in range(8))])


def test_a_billion_laughs_scenario_file_is_refused_at_its_first_anchor(tmp_path: Path) -> None:
    path = tmp_path / "scenarios.yaml"
    path.write_text(f"- id: laughs\n  title: laughs\n  workload:\n    {LAUGHS.replace(chr(10), chr(10) + '    ')}\n",
                    encoding="utf-8")
    done = run_child(["-c", "import sys\nfrom gpukb.contrib.scenarios import load_scenarios, ScenarioError\n"
                            "try:\n    load_scenarios(sys.argv[1])\nexcept ScenarioError as e:\n    print(e)",
                      str(path)], tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"{path}:4:" in done.stdout and "E006" in done.stdout and "anchors and aliases" in done.stdout
    with pytest.raises(ScenarioError, match="E002"):
        (tmp_path / "dup.yaml").write_text("- id: a\n  id: b\n  title: t\n  workload: {task: lora}\n", encoding="utf-8")
        load_scenarios(tmp_path / "dup.yaml")
