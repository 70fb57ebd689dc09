import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_ruff_clean():
    if shutil.which("ruff") is None:
        # ruff comes with the test extra; CI installs it, so there a missing ruff is a failure
        if os.environ.get("CI"):
            pytest.fail("ruff is not installed (CI is set, so the style check must run)")
        pytest.skip("ruff is installed with the test extra")
    result = subprocess.run(["ruff", "check", "src", "tests"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


EVALUATION = ("engine/engine", "engine/trace", "estimate/resolve", "estimate/pipeline", "estimate/planner")
PACKAGE = REPO / "src" / "gpukb"


def _runtime_imports(path: Path) -> set[str]:
    """The gpukb modules (by file name) a module imports when imported (not under TYPE_CHECKING, not in functions)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.level:
            if node.module:
                found.add(node.module.rpartition(".")[2])
            else:
                found |= {alias.name for alias in node.names}
    return found


@pytest.mark.parametrize("module", EVALUATION)
def test_evaluation_modules_need_the_knowledge_base_only_for_types(module):
    assert "kb" not in _runtime_imports(PACKAGE / f"{module}.py")


def test_the_knowledge_base_module_imports_no_evaluation_module_when_loaded():
    assert not _runtime_imports(PACKAGE / "knowledge" / "kb.py") & {name.rpartition("/")[2] for name in EVALUATION}
