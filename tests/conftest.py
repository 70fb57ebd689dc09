from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import gpukb

REPO = Path(__file__).resolve().parent.parent
# tests load the knowledge base from its files and leave the user's cache folder alone (kbcache
# has tests of its own, in folders of theirs)
os.environ["GPUKB_NO_CACHE"] = "1"
# The command line wraps every line to the terminal (80 columns when unknown). Tests that read what a command
# says see it on a wide terminal, one sentence a line; the tests of wrapping set COLUMNS themselves. The consoles
# are made first: one made while COLUMNS is set keeps that width for good, one made without it reads it when asked.
os.environ.pop("COLUMNS", None)  # a worker inherits the controller's
import gpukb.cli.common  # noqa: E402

os.environ["COLUMNS"] = "300"

# Property tests judge answers, never time: no per-example deadline and no health check that times
# data generation, so a loaded CI machine cannot fail them (a test that needs a bound states it).
settings.register_profile("gpukb", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gpukb")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The site's tests first: they share one worker (--dist loadfile: one file, one worker, so its strict
    builds run once) and take about a third of the suite; pytest-xdist hands out files in this order, so
    the other worker runs everything else alongside them instead of idling at the end."""
    items.sort(key=lambda item: item.path.name != "test_site.py")


@pytest.fixture(scope="session")
def kb() -> gpukb.KnowledgeBase:
    return gpukb.load_kb()


@pytest.fixture()
def checkout(tmp_path: Path) -> Path:
    """A private copy of the repository's kb/ and rules/ that a test may break."""
    for top in ("kb", "rules"):
        shutil.copytree(REPO / top, tmp_path / top)
    return tmp_path


@pytest.fixture()
def workers(monkeypatch: pytest.MonkeyPatch) -> list[subprocess.Popen[str]]:
    """Every process subprocess.Popen starts during the test (sweep workers), as started."""
    started: list[subprocess.Popen[str]] = []
    popen = subprocess.Popen

    def recording(*args: Any, **kwargs: Any) -> subprocess.Popen[str]:
        started.append(popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(subprocess, "Popen", recording)
    return started
