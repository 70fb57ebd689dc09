"""Helpers for tests that change a private copy of kb/ and rules/ the way a contributor would."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent


def entry_file(root: Path, entry_id: str) -> tuple[Path, int | None]:
    """The YAML file holding the entry with this id, and its index if the file is a list."""
    for top in ("kb", "rules"):
        for path in sorted((root / top).rglob("*.yaml")):
            if "schema" in path.relative_to(root).parts[:2]:
                continue
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("id") == entry_id:
                return path, None
            if isinstance(data, list):
                for i, item in enumerate(data):
                    if isinstance(item, dict) and item.get("id") == entry_id:
                        return path, i
    raise LookupError(f"no entry '{entry_id}' under {root}")


def edit_entry(root: Path, entry_id: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """Load the entry's file, let `change` mutate the entry, write the file back."""
    path, index = entry_file(root, entry_id)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data if index is None else data[index])
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")
    return path


def remove_entry(root: Path, entry_id: str) -> None:
    path, index = entry_file(root, entry_id)
    if index is None:
        path.unlink()
        return
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    del data[index]
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=120), encoding="utf-8")


def set_kb_version(root: Path, version: str) -> None:
    path = root / "kb" / "manifest.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["version"] = version
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")


def kb_version(root: Path) -> str:
    return str(yaml.safe_load((root / "kb" / "manifest.yaml").read_text(encoding="utf-8"))["version"])


def git(root: Path, *args: str) -> str:
    result = subprocess.run(["git", "-c", "user.name=test", "-c", "user.email=test@example.com",
                             "-c", "commit.gpgsign=false", *args], cwd=root, capture_output=True, text=True, check=True)
    return result.stdout


def make_repo(path: Path, scenarios: Path | None = None) -> Path:
    """A git repository holding a copy of kb/, rules/ and a CHANGELOG entry for the KB version."""
    path.mkdir(parents=True, exist_ok=True)
    for top in ("kb", "rules"):
        shutil.copytree(REPO / top, path / top)
    version = kb_version(path)
    (path / "CHANGELOG.md").write_text(f"# Changelog\n\n## [{version}]\n\nThe first knowledge base.\n", encoding="utf-8")
    if scenarios is not None:
        (path / "site").mkdir()
        shutil.copy(scenarios, path / "site" / "scenarios.yaml")
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "base")
    return path


def add_changelog(root: Path, version: str, text: str = "What changed.") -> None:
    path = root / "CHANGELOG.md"
    old = path.read_text(encoding="utf-8")
    head, _, rest = old.partition("\n## ")
    path.write_text(f"{head}\n## [{version}]\n\n{text}\n\n## {rest}", encoding="utf-8")
