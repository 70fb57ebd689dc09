"""The pull-request workflow and the pre-commit hooks keep their promises."""

import os
import re
import shlex
import stat
import subprocess
import tomllib
from pathlib import Path

import yaml

from gpukb.knowledge.kinds import KINDS
from kbfiles import REPO

WORKFLOW = REPO / ".github" / "workflows" / "pr.yml"


def test_the_workflow_runs_pull_requests_read_only_without_secrets():
    text = WORKFLOW.read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    code = "\n".join(line.split(" #")[0] for line in text.splitlines() if not line.lstrip().startswith("#"))
    triggers = data.get("on", data.get(True))  # PyYAML reads the bare key `on` as a boolean
    assert set(triggers) == {"pull_request"} and "pull_request_target" not in code
    assert data["permissions"] == {"contents": "read"}
    assert "secrets." not in code and "write" not in str(data["permissions"])
    for job in data["jobs"].values():
        assert "permissions" not in job
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout"):
                assert step["with"]["persist-credentials"] is False
    runs = "\n".join(step.get("run", "") for job in data["jobs"].values() for step in job["steps"])
    assert re.search(r'gpukb lint --format github --base "\$BASE"', runs)
    assert ".ci/run" in runs and "python -m pytest" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "mkdocs build --strict -f site/mkdocs.yml" in runs
    assert 'gpukb impact --base "$BASE"' in runs and '>> "$GITHUB_STEP_SUMMARY"' in runs
    assert 'gpukb validate --root . --base "$BASE"' in runs  # accuracy may not get worse than the base's
    bases = [step["env"]["BASE"] for job in data["jobs"].values() for step in job["steps"] if "BASE" in step.get("env", {})]
    assert bases and set(bases) == {"${{ github.event.pull_request.base.sha }}"}


def test_pre_commit_validates_every_kind_against_its_schema():
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hooks = [h for repo in config["repos"] for h in repo["hooks"]]
    schema_hooks = {h["files"]: h["args"][1] for h in hooks if h["id"] == "check-jsonschema"}
    for kind in KINDS:
        if kind.name != "rules":
            assert schema_hooks[rf"^{kind.folder}/.*\.ya?ml$"] == f"kb/schema/{kind.singular}.schema.json"
    assert schema_hooks[r"^rules/.*\.ya?ml$"] == "kb/schema/rule.schema.json"
    assert {"yamllint", "ruff", "gpukb-lint"} <= {h["id"] for h in hooks}
    for path in schema_hooks.values():
        assert (REPO / path).is_file(), path


CI_RUN = REPO / ".ci" / "run"


def _readme_test_command() -> str:
    """The one command the README gives for running the tests."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"Run the tests.*?```bash\n(.*?)\n```", text, re.S)
    assert block, "the README gives the test command in a bash block after 'Run the tests'"
    (command,) = block[1].strip().splitlines()
    return command


def test_ci_runs_the_readme_test_command_last_and_cannot_mask_its_status():
    lines = [line.strip() for line in CI_RUN.read_text(encoding="utf-8").splitlines()]
    commands = [line for line in lines if line and not line.startswith("#")]
    options = {o for line in commands if line.startswith("set ") for o in shlex.split(line)[1:]}
    assert {"-euo", "pipefail"} <= options or {"-e", "-o", "pipefail"} <= options
    assert commands[-1] == _readme_test_command() == "pip install '.[test,docs]' && python -m pytest"
    assert not commands[-2].endswith("\\"), "the test command is a line of its own"
    for word in ("trap", "set +e", "alias ", "exit", "|| true", "|| :", "function "):
        assert word not in "\n".join(commands), f"{word!r} could change the script's exit status"


def test_ci_run_exits_with_pytests_status(tmp_path: Path):
    """.ci/run with stand-ins for apt-get, venv, pip and python: pytest's failure is the script's."""
    (tmp_path / ".ci").mkdir()
    script = tmp_path / ".ci" / "run"
    script.write_text(CI_RUN.read_text(encoding="utf-8"), encoding="utf-8")
    fake = tmp_path / "bin"
    fake.mkdir()
    stand_ins = {
        "sudo": '"$@"',
        "apt-get": "exit 0",
        "pip": "exit 0",
        "python3": 'mkdir -p .venv/bin && touch .venv/bin/activate',
        "python": '[ "$1 $2" = "-m pytest" ] && exit 3; exit 0',
    }
    for name, body in stand_ins.items():
        (fake / name).write_text(f"#!/bin/sh\n{body}\n", encoding="utf-8")
        (fake / name).chmod(stat.S_IRWXU)
    env = {**os.environ, "PATH": f"{fake}:/usr/bin:/bin"}
    result = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert result.returncode == 3, result.stdout + result.stderr


def test_the_tests_run_on_the_lowest_and_highest_supported_python():
    spec = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    low, high = re.fullmatch(r">=3\.(\d+),<3\.(\d+)", spec).groups()  # type: ignore[union-attr]
    job = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["tests"]
    assert job["strategy"]["matrix"]["python"] == [f"3.{low}", f"3.{int(high) - 1}"]
    assert job["container"] == "python:${{ matrix.python }}-bookworm"
    assert "CI" not in job.get("env", {}), ".ci/run sets CI itself"


def test_the_readme_fits_a_few_screens_and_its_links_resolve():
    """The README is the two commands, the journeys and where the reference lives: at most 150 lines."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    for target in re.findall(r"\]\(([^)#]+)", text):
        if not target.startswith("http"):
            assert (REPO / target).exists(), target
    assert (REPO / "site" / "docs" / "guide" / "index.md").is_file() and (REPO / "benchmarks" / "README.md").is_file()
