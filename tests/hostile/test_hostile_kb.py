"""The hostile corpus: every case is refused with its file and line, quickly, and changes nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cpu_budget import within_cpu_seconds
from hostile_cases import CASES, MANIFEST, Case

import gpukb
from gpukb import KBError
from gpukb.contrib.lint import lint

SECONDS = 5.0  # loading a checkout takes a fraction of a second; a hostile file must not take forever


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every path under root (links not followed) with its size and modification time."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            stat = path.lstat()
            out[path.relative_to(root).as_posix()] = (stat.st_size, stat.st_mtime_ns)
    return out


def _checkout(tmp_path: Path, case: Case) -> Path:
    root = tmp_path / "checkout"
    (root / "kb").mkdir(parents=True)
    (root / "kb" / "manifest.yaml").write_text(MANIFEST, encoding="utf-8")
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))  # as written: CRLF stays CRLF
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("id: secret\n", encoding="utf-8")
    for name, kind in case.links.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(outside / "secret.yaml" if kind == "file" else outside)
    return root


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_hostile_file_is_a_located_error(tmp_path, case):
    root = _checkout(tmp_path, case)
    before = _tree(root)
    with within_cpu_seconds(SECONDS, case.name), pytest.raises(KBError) as info:
        gpukb.load_kb(root)
    located = [(p.code, p.file, p.line) for p in info.value.problems]
    assert (case.code, case.file, case.line) in located, located
    assert _tree(root) == before  # no side effect: nothing written, created or touched


def test_lint_reports_a_hostile_file_instead_of_raising(tmp_path):
    root = _checkout(tmp_path, next(c for c in CASES if c.name == "billion-laughs"))
    with within_cpu_seconds(SECONDS, "lint"):
        result = lint(root, None)
    assert any(p.code == "E006" for p in result.problems)


def test_the_corpus_covers_what_the_issue_lists():
    assert len(CASES) >= 30
    assert {c.code for c in CASES} >= {"E001", "E002", "E005", "E006", "E010", "E013", "E014", "R002"}


def test_the_guide_states_the_limits_the_code_enforces():
    from gpukb.answer import workload
    from gpukb.knowledge import yamlpos
    from gpukb.language import expr

    guide = (Path(__file__).resolve().parents[2] / "CONTRIBUTING.md").read_text(encoding="utf-8")
    readme = (Path(__file__).resolve().parents[2] / "site" / "docs" / "guide" / "index.md").read_text(encoding="utf-8")
    magnitude = f"{expr.MAX_MAGNITUDE:.0e}".replace("e+", "e")  # 1e60
    for text in (f"larger than {yamlpos.MAX_FILE_BYTES:,} bytes", f"more than {yamlpos.MAX_NODES:,} values",
                 f"nested more than {yamlpos.MAX_NESTING} levels", f"at most {magnitude} in size",
                 f"raises to at most {expr.MAX_EXPONENT} in all",
                 f"between -{expr.MAX_ROUND_DIGITS} and {expr.MAX_ROUND_DIGITS}"):
        assert text in guide, text
    assert f"within a factor {workload.CUSTOM_PARAMS_TOLERANCE:g} of the count" in readme
