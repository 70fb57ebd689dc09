"""The wheel carries kb/ and rules/, so a non-editable install answers without a checkout."""

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_the_wheel_carries_the_knowledge_base(tmp_path):
    if importlib.util.find_spec("hatchling") is None:  # it comes with the test extra, which CI installs
        if os.environ.get("CI"):
            pytest.fail("hatchling is not installed (CI is set, so this test must run)")
        pytest.skip("hatchling comes with the test extra")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", str(tmp_path), str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    (wheel,) = tmp_path.glob("gpukb-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "gpukb/_data/kb/manifest.yaml" in names
    assert "gpukb/_data/kb/article.zh.txt" in names
    assert any(n.startswith("gpukb/_data/rules/requirements/") for n in names)
    assert {f"gpukb/_data/{p.relative_to(REPO).as_posix()}" for p in (REPO / "rules").rglob("*.yaml")} <= names
