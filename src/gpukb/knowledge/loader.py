"""Read kb/ and rules/ into a validated, cross-referenced KnowledgeBase.

Every problem is collected (not only the first) and reported as file:line:column with the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..core import safepath
from ..core.errors import KBError, Problem, located
from ..core.messages import PYDANTIC_ZH, message, pydantic_message
from .architecture import count_parameters
from .citations import cite
from .joins import COMBINATIONS_POLICY, PATTERNS_POLICY, WITHOUT_POLICIES, check_joins
from .kb import KnowledgeBase
from .kinds import BY_NAME, KEYED, KINDS, Kind
from .rules import STAGES, CompiledRule, compile_rule
from .schema import Manifest, Rhetoric
from .yamlpos import Loc, Located, load_located

_UNION_TAGS = {"str", "int", "float", "bool", "list", "dict", "none"}


def _pydantic_problems(err: ValidationError, doc: Located, prefix: Loc) -> list[Problem]:
    problems = []
    seen: set[tuple[int, int, str]] = set()
    for item in err.errors():
        # a value failing every member of a union yields one error per member: report it once
        item_loc = tuple(item["loc"])
        while item_loc and str(item_loc[-1]).split("[")[0] in _UNION_TAGS:
            item_loc = item_loc[:-1]
        line, col = doc.where(prefix + item_loc)
        # missing fields all sit at their entry's position: each is reported, other errors once per place
        key = (line, col, ".".join(map(str, item_loc)) if item["type"] == "missing" else "")
        if key in seen:
            continue
        seen.add(key)
        field = ".".join(str(p) for p in item_loc) or "(entry)"
        if item["type"] == "extra_forbidden":
            problems.append(located(doc, item_loc, "E011", message("kb_unknown_field"), prefix=prefix, field=field))
        elif item["type"] == "missing":
            problems.append(located(doc, item_loc, "E012", message("kb_missing_field"), prefix=prefix, field=field))
        else:  # pydantic's own checks have Chinese; a validator's ValueError keeps its English under the summary
            said = pydantic_message(item)
            detail = said if item["type"] in PYDANTIC_ZH else said.text("en")
            problems.append(located(doc, item_loc, "E010", detail, prefix=prefix, field=field))
    return problems


class _Reader:
    """Accumulates entries and problems while reading one checkout."""

    def __init__(self, root: Path):
        self.root = root
        self.problems: list[Problem] = []
        self.entries: dict[str, dict[str, Any]] = {k.name: {} for k in KEYED}
        self.rhetoric: list[Rhetoric] = []
        self.where: dict[tuple[str, str], tuple[str, int]] = {}  # (kind, id) -> (file, line)
        self.docs: dict[tuple[str, str], tuple[Located, Loc]] = {}
        # ids of entries already reported as invalid, and kinds whose folder was refused: a reference to them
        # is not a second problem (a broken GPU entry is one error, not one more per system that holds it)
        self.reported: dict[str, set[str]] = {k.name: set() for k in KEYED}
        self.unread: set[str] = set()

    def display(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix()

    def read(self, path: Path) -> Located | None:
        doc, problems = load_located(path, self.display(path), self.root)
        self.problems += problems
        return doc

    def items(self, doc: Located) -> list[tuple[Loc, Any]]:
        if isinstance(doc.data, list):
            return [((i,), item) for i, item in enumerate(doc.data)]
        if isinstance(doc.data, dict):
            return [((), doc.data)]
        self.problems.append(located(doc, (), "E003", "expected an entry (mapping) or a list of entries"))
        return []

    def add(self, kind: Kind, doc: Located) -> None:
        for prefix, raw in self.items(doc):
            if not isinstance(raw, dict):
                self.problems.append(located(doc, (), "E003", "expected a mapping", prefix=prefix))
                continue
            try:
                entry = kind.model.model_validate(raw)
            except ValidationError as err:
                self.problems += _pydantic_problems(err, doc, prefix)
                if kind.keyed and isinstance(raw.get("id"), str):
                    self.reported[kind.name].add(raw["id"])
                continue
            if not kind.keyed:
                self.rhetoric.append(entry)
                continue
            self._register(kind.name, entry, doc, prefix)

    def _register(self, kind: str, entry: Any, doc: Located, prefix: Loc) -> None:
        line, _column = doc.where(prefix + ("id",))
        previous = self.where.get((kind, entry.id))
        if previous:
            self.problems.append(located(doc, ("id",), "E020",
                                         f"duplicate id '{entry.id}' (first defined at {previous[0]}:{previous[1]})",
                                         prefix=prefix))
            return
        self.where[(kind, entry.id)] = (doc.file, line)
        self.docs[(kind, entry.id)] = (doc, prefix)
        self.entries[kind][entry.id] = entry

    def problem_at(self, kind: str, entry_id: str, loc: Loc, code: str, message: str) -> None:
        doc, prefix = self.docs[(kind, entry_id)]
        self.problems.append(located(doc, loc, code, message, prefix=prefix))


def _yaml_files(r: _Reader, folder: Path) -> list[Path]:
    """The YAML files under one of the checkout's folders. A folder that is a link out of the checkout is
    refused before it is walked (`kb/gpus -> /usr` would read the whole target)."""
    parts = folder.relative_to(r.root).parts
    for depth in range(1, len(parts) + 1):  # the outermost link is the one to report, once
        outer = r.root.joinpath(*parts[:depth])
        if not safepath.inside(outer, r.root):
            problem = Problem(r.display(outer), 1, 1, "E005", "a symbolic link leading out of the checkout: "
                                                              "kb/ and rules/ hold their folders themselves")
            if problem not in r.problems:
                r.problems.append(problem)
            return []
    # rglob does not enter linked folders: they are returned, for load_located to refuse; so is a FIFO or a
    # device named *.yaml (never opened, see safepath)
    return sorted(p for p in folder.rglob("*") if (p.suffix in (".yaml", ".yml") and not p.is_dir()) or
                  (p.is_symlink() and p.is_dir()))


def content_hash(root: Path) -> str:
    """sha256 of every file under kb/ and rules/ (path and bytes), to reproduce an answer."""
    digest = hashlib.sha256()
    for top in ("kb", "rules"):
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "schema" not in path.relative_to(root).parts[:2]:
                digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _check_references(r: _Reader) -> None:
    """Every id an entry names exists, in the kind its Ref says (kinds.KINDS)."""
    for kind in KEYED:
        for entry_id, entry in r.entries[kind.name].items():
            for ref in kind.refs:
                for loc, target in ref.values(entry):
                    if target in r.reported[ref.target] or ref.target in r.unread:
                        continue  # its own problem is reported already
                    if target not in r.entries[ref.target]:
                        r.problem_at(kind.name, entry_id, loc, "E030",
                                     f"unknown {BY_NAME[ref.target].singular} id '{target}'")


def _check_models(r: _Reader) -> None:
    """A model's stated parameter counts must follow from its architecture."""
    for model_id, model in r.entries["models"].items():
        total, active = count_parameters(model)
        if model.params != total:
            r.problem_at("models", model_id, ("params",), "E050",
                         f"{model.params:,} does not match the architecture's {total:,} (see gpukb.knowledge.architecture)")
        if model.active_params is not None and model.active_params != active:
            r.problem_at("models", model_id, ("active_params",), "E050",
                         f"{model.active_params:,} does not match the architecture's {active:,}")
    # `--model ORG/NAME` resolves a Hugging Face id to the one model that names it (case as the Hub ignores it)
    first: dict[str, str] = {}
    for model_id, model in sorted(r.entries["models"].items(), key=lambda kv: r.where[("models", kv[0])]):
        if model.hf_repo is None or model.status == "deprecated":
            continue
        other = first.setdefault(model.hf_repo.lower(), model_id)
        if other != model_id:
            file, line = r.where[("models", other)]
            r.problem_at("models", model_id, ("hf_repo",), "E021",
                         f"'{model.hf_repo}' is already the hf_repo of model '{other}' ({file}:{line}): "
                         "each Hugging Face repository names one model")


def _check_joins(r: _Reader, compiled: list[CompiledRule]) -> None:
    """No rule joins more patterns, or more combinations of facts over the catalog, than the policies allow
    (gpukb.knowledge.joins): durable-rules would hold them all in every ask, and lint would run them in the rule tests."""
    policies = r.entries["policies"]
    limits = [policies[pid].value if pid in policies else WITHOUT_POLICIES[pid]
              for pid in (PATTERNS_POLICY, COMBINATIONS_POLICY)]
    for excess in check_joins(compiled, len(r.entries["gpus"]), *limits):
        r.problem_at("rules", excess.rule, ("when", excess.pattern), "R009", excess.message)


def read_checkout(root: Path) -> KnowledgeBase:
    root = Path(root)
    r = _Reader(root)
    manifest = None
    manifest_path = root / "kb" / "manifest.yaml"
    if not manifest_path.is_file():
        raise KBError([Problem("kb/manifest.yaml", 1, 1, "E004", f"no knowledge base at {root} (kb/manifest.yaml missing)")])
    doc = r.read(manifest_path)
    if doc is not None:
        try:
            manifest = Manifest.model_validate(doc.data)
        except ValidationError as err:
            r.problems += _pydantic_problems(err, doc, ())
    for kind in KINDS:
        if kind.name == "rules":
            continue
        if not safepath.inside(root / kind.folder, root):
            r.unread.add(kind.name)
        for path in _yaml_files(r, root / kind.folder):
            doc = r.read(path)
            if doc is not None:
                r.add(kind, doc)
            elif kind.keyed:  # an unreadable file: one entry per file is named after its id (kb/gpus/<id>.yaml)
                r.reported[kind.name].add(path.stem)
    rules = r.entries["rules"]
    for stage in STAGES:
        for path in _yaml_files(r, root / "rules" / stage):
            doc = r.read(path)
            if doc is None:
                continue
            before = set(rules)
            r.add(BY_NAME["rules"], doc)
            for rule_id in sorted(set(rules) - before):
                if rules[rule_id].stage != stage:
                    r.problem_at("rules", rule_id, ("stage",), "R008",
                                 f"stage '{rules[rule_id].stage}' does not match its folder rules/{stage}/")
    for path in _yaml_files(r, root / "rules"):
        if path.parent.name not in STAGES and not (path.parent == root / "rules" and path.name in STAGES):
            message = f"rules live in rules/<stage>/, stage one of {', '.join(STAGES)}"
            r.problems.append(Problem(r.display(path), 1, 1, "R008", message))
    _check_references(r)
    _check_models(r)
    compiled = []
    for rule_id, rule in rules.items():
        result, problems = compile_rule(rule)
        for loc, code, message in problems:
            r.problem_at("rules", rule_id, loc, code, message)
        if result is not None:
            compiled.append(result)
    _check_joins(r, compiled)
    if r.problems or manifest is None:
        raise KBError(r.problems)
    return KnowledgeBase(
        root=root,
        manifest=manifest,
        content_hash=content_hash(root),
        tables=r.entries,
        rhetoric=r.rhetoric,
        compiled=tuple(sorted((replace(c, citations=cite(r.entries["claims"], c.rule.claims)) for c in compiled),
                              key=lambda c: (STAGES.index(c.rule.stage), c.rule.id))),
        locations=dict(r.where),
        documents=dict(r.docs),
    )


def json_schemas() -> dict[str, dict[str, Any]]:
    """JSON Schema per entry kind: a file holds one entry or a list of them."""
    models: dict[str, type[BaseModel]] = {k.singular: k.model for k in KINDS}
    out: dict[str, dict[str, Any]] = {}
    for name, model in sorted(models.items()):
        entry = model.model_json_schema(by_alias=True)
        defs = entry.pop("$defs", {})
        defs[model.__name__] = entry
        out[name] = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"gpukb {name} file",
            "oneOf": [{"$ref": f"#/$defs/{model.__name__}"},
                      {"type": "array", "items": {"$ref": f"#/$defs/{model.__name__}"}}],
            "$defs": defs,
        }
    manifest = Manifest.model_json_schema()
    manifest["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["manifest"] = manifest
    return out
