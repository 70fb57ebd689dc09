"""Versions that mean something: compare the working tree's kb/ and rules/ with a git revision.

`gpukb lint --base REV` fails when an entry's content changed but its `version` did not rise,
when kb/ or rules/ changed without a new KB version in kb/manifest.yaml, when that version bump
is smaller than the change calls for, and when CHANGELOG.md has no entry for the new version.

The bump a change calls for (the policy in CONTRIBUTING.md):
- patch: wording and provenance only — titles, names, notes, reasons, explanations, quotes,
  sources and claims cited, rule tests, formatting, the article text;
- minor: new entries, or a changed number, condition, expression or status: answers may change;
- major: an entry (id) removed, or a field removed or renamed in an entry kind's schema.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core import safepath
from ..core.errors import BaseRevisionError, Problem
from .kb import KnowledgeBase
from .kinds import KEYED
from .yamlpos import load_located

Level = Literal["patch", "minor", "major"]
LEVELS: tuple[Level, ...] = ("patch", "minor", "major")
CHANGELOG = "CHANGELOG.md"
MANIFEST = "kb/manifest.yaml"
# Entry fields whose change cannot alter an answer's numbers or choices: a patch-level change.
WORDING_FIELDS = frozenset({
    "title", "title_zh", "name", "notes", "reason", "reason_zh", "text_en", "explain", "explain_zh",
    "description", "publisher", "url", "path", "as_of",
    "sources", "evidence", "claims", "tests", "section", "section_en", "quote_zh", "quoted", "states",
    "architecture", "memory_type", "family", "superseded_by",
    # a measurement's provenance: where and how the source says it, not the value compared
    "setup", "framework", "locator", "quote", "unstated", "flop_accounting", "unit_as_published",
})


# --- reading a revision -------------------------------------------------------------------------


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, check=False)
    except FileNotFoundError:
        raise BaseRevisionError("git is not installed") from None


def _extract(data: bytes, dest: Path) -> None:
    """Unpack git's tar output: plain files and folders below `dest` only."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
            tar.extractall(dest, filter="data")
            return
        for member in tar.getmembers():
            target = (dest / member.name).resolve()
            if not (member.isfile() or member.isdir()) or not target.is_relative_to(dest.resolve()):
                raise BaseRevisionError(f"unexpected entry in git archive: {member.name}")
        tar.extractall(dest)  # every member was checked above


# A plain branch or tag name, which `git fetch origin NAME` can fetch as it is.
_REF_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


def _commit(root: Path, rev: str) -> str:
    """The commit `rev` names. Resolved in two steps, so that any revision syntax works (`:/text`
    too, which an appended `^{commit}` would become part of); `--end-of-options` keeps a revision
    starting with '-' from being read as an option."""
    found = _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
    object_id = found.stdout.decode().strip()
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{object_id}^{{commit}}") if not found.returncode else found
    if found.returncode or commit.returncode:
        hint = (f" (fetch it first, e.g. `git fetch origin {rev.removeprefix('origin/')}`)"
                if _REF_NAME.fullmatch(rev) and ".." not in rev else " (name a commit, branch or tag of this repository)")
        raise BaseRevisionError(f"unknown git revision {_quoted(rev)}{hint}")
    return commit.stdout.decode().strip()


def _quoted(text: str) -> str:
    """The user's text in quotes, printable: control characters shown as escapes."""
    return "'" + text.encode("unicode_escape").decode("ascii").replace("'", "\\'") + "'"


@contextmanager
def revision_tree(root: Path, rev: str) -> Iterator[Path | None]:
    """kb/ and rules/ of `root` as they were at git revision `rev`, extracted to a temporary
    directory (None if the revision has no kb/). Uses `git archive`; nothing in `root` changes."""
    root = Path(root).resolve()
    top = _git(root, "rev-parse", "--show-toplevel")
    if top.returncode:
        raise BaseRevisionError(f"{root} is not inside a git repository: {top.stderr.decode().strip()}")
    toplevel = Path(top.stdout.decode().strip()).resolve()
    sha = _commit(root, rev)  # the resolved commit: never pass user text on as git arguments
    prefix = root.relative_to(toplevel).as_posix()
    paths = [f"{prefix}/{top_dir}" if prefix != "." else top_dir for top_dir in ("kb", "rules")]
    present = [p for p in paths if _git(toplevel, "cat-file", "-e", f"{sha}:{p}").returncode == 0]
    dest = Path(tempfile.mkdtemp(prefix="gpukb-base-"))
    try:
        if not any(p.endswith("kb") for p in present):
            yield None
            return
        archive = _git(toplevel, "archive", "--format=tar", sha, "--", *present)
        if archive.returncode:
            raise BaseRevisionError(f"git archive {rev} failed: {archive.stderr.decode().strip()}")
        _extract(archive.stdout, dest)
        yield dest / prefix if prefix != "." else dest
    finally:
        shutil.rmtree(dest, ignore_errors=True)


# --- what changed -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One entry added, removed or changed between two knowledge bases."""

    kind: str  # a kb/ folder name, or "rules"
    id: str
    change: Literal["added", "removed", "changed"]
    level: Level
    fields: tuple[str, ...] = ()  # top-level fields that differ (for "changed")
    base_version: int | None = None
    head_version: int | None = None

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.id}"

    def describe(self) -> str:
        if self.change == "added":
            return f"{self.label} added (v{self.head_version})"
        if self.change == "removed":
            return f"{self.label} removed (was v{self.base_version})"
        return f"{self.label} v{self.base_version}→v{self.head_version}: {', '.join(self.fields)}"


@dataclass
class KBDiff:
    changes: list[Change] = field(default_factory=list)
    other: list[tuple[str, Level]] = field(default_factory=list)  # (what, level) outside entries

    @property
    def changed(self) -> bool:
        return bool(self.changes or self.other)

    @property
    def level(self) -> Level | None:
        levels = [c.level for c in self.changes] + [lvl for _, lvl in self.other]
        return max(levels, key=LEVELS.index) if levels else None

    def reasons(self, level: Level, limit: int = 4) -> str:
        items = [c.describe() for c in self.changes if c.level == level] + [w for w, lvl in self.other if lvl == level]
        more = f" and {len(items) - limit} more" if len(items) > limit else ""
        return "; ".join(items[:limit]) + more


def content(entry: Any) -> dict[str, Any]:
    """An entry's meaning, without its version: SI numbers, so `80 GB` and `80e9` are the same."""
    return entry.model_dump(mode="json", by_alias=True, exclude={"version"})


def _field_level(fields: set[str]) -> Level:
    return "patch" if fields <= WORDING_FIELDS else "minor"


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for top in ("kb", "rules"):
        for path in sorted((root / top).rglob("*")):
            rel = path.relative_to(root)
            if path.is_file() and rel.parts[:2] != ("kb", "schema"):
                out[rel.as_posix()] = path.read_bytes()
    return out


MAX_SCHEMA_BYTES = 1 << 22  # the generated schemas are each well under 100 kB


def _schema_fields(root: Path) -> dict[str, set[str]]:
    """Entry kind -> its fields, from the generated kb/schema/*.schema.json."""
    out: dict[str, set[str]] = {}
    for path in sorted((root / "kb" / "schema").glob("*.schema.json")):
        if not safepath.is_regular(path):  # as _files: only regular files count (a FIFO would never answer)
            continue
        document = json.loads(safepath.read_text(path, MAX_SCHEMA_BYTES))
        name = path.name.removesuffix(".schema.json")
        props: set[str] = set(document.get("properties", {}))
        for def_name, definition in document.get("$defs", {}).items():
            props |= {f"{def_name}.{p}" for p in definition.get("properties", {})}
        out[name] = props
    return out


def diff(base: KnowledgeBase, head: KnowledgeBase) -> KBDiff:
    """Every entry added, removed or changed, with the version bump each calls for."""
    result = KBDiff()
    for kind in KEYED:
        old: dict[str, Any] = base.tables[kind.name]
        new: dict[str, Any] = head.tables[kind.name]
        for entry_id in sorted(set(old) | set(new)):
            if entry_id not in old:
                result.changes.append(Change(kind.name, entry_id, "added", "minor", head_version=new[entry_id].version))
            elif entry_id not in new:
                result.changes.append(Change(kind.name, entry_id, "removed", "major", base_version=old[entry_id].version))
            else:
                a, b = content(old[entry_id]), content(new[entry_id])
                if a != b:
                    fields = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
                    result.changes.append(Change(kind.name, entry_id, "changed", _field_level(fields), tuple(sorted(fields)),
                                                 old[entry_id].version, new[entry_id].version))
    if [r.model_dump() for r in base.rhetoric] != [r.model_dump() for r in head.rhetoric]:
        result.other.append(("kb/rhetoric/ changed", "patch"))
    if base.manifest.description != head.manifest.description or base.manifest.name != head.manifest.name:
        result.other.append((f"{MANIFEST} description", "patch"))
    old_schema, new_schema = _schema_fields(base.root), _schema_fields(head.root)
    for name in sorted(old_schema):
        gone = sorted(old_schema[name] - new_schema.get(name, set()))
        if gone:
            result.other.append((f"{name} entries lost the field(s) {', '.join(gone)} (removed or renamed)", "major"))
    if not result.changes and not result.other:
        old_files, new_files = _files(base.root), _files(head.root)
        touched = sorted(p for p in set(old_files) | set(new_files)
                         if old_files.get(p) != new_files.get(p) and p != MANIFEST)
        if touched:
            result.other.append((f"files changed without changing any entry: {', '.join(touched[:4])}"
                                 + (f" and {len(touched) - 4} more" if len(touched) > 4 else ""), "patch"))
    return result


# --- the version rules --------------------------------------------------------------------------


def parse_semver(text: str) -> tuple[int, int, int]:
    major, minor, patch = (int(x) for x in text.split("."))
    return major, minor, patch


def bump(version: str, level: Level) -> str:
    major, minor, patch = parse_semver(version)
    if level == "major":
        return f"{major + 1}.0.0"
    if level == "minor":
        return f"{major}.{minor + 1}.0"
    return f"{major}.{minor}.{patch + 1}"


def bump_level(old: str, new: str) -> Level | None:
    """The level of the step from old to new; None if new is not greater."""
    a, b = parse_semver(old), parse_semver(new)
    if b <= a:
        return None
    if b[0] > a[0]:
        return "major"
    if b[1] > a[1]:
        return "minor"
    return "patch"


def changelog_has(root: Path, version: str) -> bool:
    path = root / CHANGELOG
    if not path.is_file():
        return False
    pattern = re.compile(rf"^##\s+\[?v?{re.escape(version)}\]?(\s|$)", re.MULTILINE)
    return bool(pattern.search(path.read_text(encoding="utf-8")))


def _manifest_line(root: Path) -> tuple[int, int]:
    doc, _ = load_located(root / MANIFEST, MANIFEST)
    return doc.where(("version",)) if doc is not None else (1, 1)


def check_versions(base: KnowledgeBase, head: KnowledgeBase, rev: str) -> tuple[list[Problem], list[str]]:
    """V101/V102/V103 problems, and notes saying what changed and which bump it calls for."""
    d = diff(base, head)
    problems: list[Problem] = []
    for c in d.changes:
        if c.change == "changed" and (c.head_version or 0) <= (c.base_version or 0):
            problems.append(head.problem(c.kind, c.id, ("version",), "V101",
                                         f"'{c.id}' changed since {rev} ({', '.join(c.fields)}) but its version is "
                                         f"still {c.head_version}: raise it to {(c.base_version or 0) + 1} "
                                         f"(a {c.level} change)"))
    old, new = base.version, head.version
    notes: list[str] = []
    level = d.level
    line, col = _manifest_line(head.root)
    if level is not None:
        wanted = bump(old, level)
        why = d.reasons(level)
        notes.append(f"since {rev}: {len(d.changes)} entr{'y' if len(d.changes) == 1 else 'ies'} changed; "
                     f"this calls for a {level} bump of the KB version ({old} → {wanted}): {why}")
        got = bump_level(old, new)
        if got is None:
            problems.append(Problem(MANIFEST, line, col, "V102",
                                    f"kb/ or rules/ changed since {rev} but the KB version is {new} (base {old}): "
                                    f"this is a {level} change, so set version: {wanted} and add it to {CHANGELOG}",
                                    "version"))
        elif LEVELS.index(got) < LEVELS.index(level):
            problems.append(Problem(MANIFEST, line, col, "V102",
                                    f"{old} → {new} is a {got} bump, but this is a {level} change ({why}): "
                                    f"set version: {wanted} or later", "version"))
    elif bump_level(old, new) is None and new != old:
        problems.append(Problem(MANIFEST, line, col, "V102", f"the KB version went down: {old} → {new}", "version"))
    if new != old and not changelog_has(head.root, new):
        problems.append(Problem(CHANGELOG, 1, 1, "V103",
                                f"{CHANGELOG} has no entry for the KB version {new}: add a heading '## [{new}]' "
                                "saying what changed"))
    return problems, notes
