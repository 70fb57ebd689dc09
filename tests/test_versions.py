"""Versions that mean something: `gpukb lint --base REV` against a temporary git repository."""

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import gpukb
from gpukb.cli import app
from gpukb.contrib.lint import lint
from gpukb.knowledge.versions import bump, bump_level, changelog_has, diff
from kbfiles import add_changelog, edit_entry, git, kb_version, make_repo, remove_entry, set_kb_version

runner = CliRunner()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


def _codes(result) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in result.problems:
        out.setdefault(p.code, []).append(str(p))
    return out


def test_an_unchanged_checkout_passes_against_its_base(repo):
    result = lint(repo, base="HEAD")
    assert not [p for p in result.problems if p.code.startswith("V")]
    assert not any(n.startswith("since HEAD") for n in result.notes)


def test_a_change_without_version_bumps_fails_then_passes_once_bumped(repo):
    old = kb_version(repo)
    edit_entry(repo, "h100-sxm-80gb", lambda g: g.update(notes=g["notes"] + " Checked again."))
    result = lint(repo, base="HEAD")
    codes = _codes(result)
    (entry,) = codes["V101"]
    assert entry.startswith("kb/gpus/h100-sxm-80gb.yaml:")
    v = gpukb.load_kb(repo).gpus["h100-sxm-80gb"].version
    assert entry.endswith(f"V101 version: 'h100-sxm-80gb' changed since HEAD (notes) but its version is still {v}: "
                          f"raise it to {v + 1} (a patch change)")
    (manifest,) = codes["V102"]
    want = bump(old, "patch")
    assert manifest.startswith("kb/manifest.yaml:")
    assert (f"kb/ or rules/ changed since HEAD but the KB version is {old} (base {old}): this is a patch change, "
            f"so set version: {want} and add it to CHANGELOG.md") in manifest
    assert any(f"this calls for a patch bump of the KB version ({old} → {want})" in n for n in result.notes)

    edit_entry(repo, "h100-sxm-80gb", lambda g: g.update(version=v + 1))
    set_kb_version(repo, want)
    (changelog,) = _codes(lint(repo, base="HEAD"))["V103"]
    assert changelog == (f"CHANGELOG.md:1:1: V103 CHANGELOG.md has no entry for the KB version {want}: "
                         f"add a heading '## [{want}]' saying what changed")

    add_changelog(repo, want, "Re-checked the H100 SXM datasheet figures.")
    result = lint(repo, base="HEAD")
    assert result.errors == [], result.errors
    git(repo, "commit", "-qam", "bump")
    assert lint(repo, base="HEAD~1").errors == []


def test_a_patch_bump_is_not_enough_for_a_changed_number(repo):
    old = kb_version(repo)
    v = gpukb.load_kb(repo).gpus["h100-sxm-80gb"].version
    edit_entry(repo, "h100-sxm-80gb", lambda g: g.update(memory="96 GB", version=v + 1))
    set_kb_version(repo, bump(old, "patch"))
    add_changelog(repo, bump(old, "patch"))
    (problem,) = _codes(lint(repo, base="HEAD"))["V102"]
    assert (f"{old} → {bump(old, 'patch')} is a patch bump, but this is a minor change "
            f"(gpus:h100-sxm-80gb v{v}→v{v + 1}: memory): set version: {bump(old, 'minor')} or later") in problem


def test_cli_lint_base_prints_annotations(repo):
    edit_entry(repo, "rtx-4090-24gb", lambda g: g.update(tdp="500 W"))
    result = runner.invoke(app, ["lint", str(repo), "--base", "HEAD", "--format", "github"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert any(x.startswith("::error file=kb/gpus/rtx-4090-24gb.yaml,line=") and "title=V101::version: " in x
               for x in lines)
    assert any(x.startswith("::error file=kb/manifest.yaml,") and "title=V102::" in x for x in lines)
    assert any(x.startswith("::notice title=gpukb lint::since HEAD: 1 entry changed; this calls for a minor bump")
               for x in lines)
    text = runner.invoke(app, ["lint", str(repo), "--base", "no-such-rev"])
    assert text.exit_code == 1 and "V100 cannot read the base revision: unknown git revision 'no-such-rev'" in text.output


def test_the_bump_each_change_calls_for(checkout, tmp_path):
    base = gpukb.load_kb(checkout)
    head_root = tmp_path / "head"
    for top in ("kb", "rules"):
        shutil.copytree(checkout / top, head_root / top)

    def changes():
        return diff(base, gpukb.load_kb(head_root))

    assert changes().level is None and not changes().changed
    edit_entry(head_root, "remedy.lora", lambda r: r.update(title=r["title"] + " (adapters)"))
    assert changes().level == "patch"  # wording
    edit_entry(head_root, "reserve-fraction", lambda p: p.update(value=0.2))
    v = base.policies["reserve-fraction"].version
    assert changes().level == "minor" and f"policies:reserve-fraction v{v}→v{v}: value" in changes().reasons("minor")
    text = (head_root / "kb/gpus/l4-24gb.yaml").read_text(encoding="utf-8")
    (head_root / "kb/gpus/l4-copy.yaml").write_text(text.replace("id: l4-24gb", "id: l4-copy"), encoding="utf-8")
    added = [c for c in changes().changes if c.change == "added"]
    assert [(c.label, c.level) for c in added] == [("gpus:l4-copy", "minor")]
    remove_entry(head_root, "l4-24gb")
    for path in (head_root / "kb/systems").glob("*.yaml"):  # the machines that hold it leave with it
        if "gpu: l4-24gb\n" in path.read_text(encoding="utf-8"):
            path.unlink()
    l4 = base.gpus["l4-24gb"].version
    assert changes().level == "major" and f"gpus:l4-24gb removed (was v{l4})" in changes().reasons("major")


def test_formatting_and_comments_alone_are_a_patch(checkout, tmp_path):
    base = gpukb.load_kb(checkout)
    head_root = tmp_path / "head"
    for top in ("kb", "rules"):
        shutil.copytree(checkout / top, head_root / top)
    path = head_root / "kb/gpus/l4-24gb.yaml"
    path.write_text(path.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    d = diff(base, gpukb.load_kb(head_root))
    assert d.changes == [] and d.level == "patch"
    assert d.other == [("files changed without changing any entry: kb/gpus/l4-24gb.yaml", "patch")]


def test_semver_helpers(tmp_path):
    assert bump("0.1.0", "patch") == "0.1.1" and bump("0.1.3", "minor") == "0.2.0" and bump("0.9.1", "major") == "1.0.0"
    assert bump_level("0.1.0", "0.1.1") == "patch" and bump_level("0.1.0", "0.2.0") == "minor"
    assert bump_level("0.1.0", "1.0.0") == "major" and bump_level("0.2.0", "0.1.9") is None
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## [0.2.0] - 2026-12-01\n\n## 0.1.0\n", encoding="utf-8")
    assert changelog_has(tmp_path, "0.2.0") and changelog_has(tmp_path, "0.1.0") and not changelog_has(tmp_path, "0.1.1")


def test_the_repository_changelog_has_the_current_version(kb):
    assert changelog_has(Path(__file__).resolve().parent.parent, kb.version)


def test_any_revision_syntax_names_the_base_and_unknown_text_is_not_echoed_as_a_command(repo):
    assert not [p for p in lint(repo, base=":/base").problems if p.code.startswith("V")]  # a commit by its message
    hostile = lint(repo, base="x\x1b]0;t\x07 --upload-pack=touch")
    message = next(p.message for p in hostile.problems if p.code == "V100")
    assert "\x1b" not in message and "git fetch" not in message
    assert "git fetch origin main`" in next(p.message for p in lint(repo, base="origin/main").problems if p.code == "V100")
