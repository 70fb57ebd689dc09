"""The pull-request workflow and the pre-commit hooks keep their promises."""

import re

import yaml

from gpukb.kinds import KINDS
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
