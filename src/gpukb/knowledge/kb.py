"""The loaded knowledge base: typed entries keyed by (kind, id), plus the compiled rules."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from ..core.errors import Problem, located
from ..core.positions import Loc, Located
from .kinds import BY_NAME, KEYED, Kind
from .rules import CompiledRule, Rule
from .schema import (
    Claim,
    Dtype,
    Framework,
    Gpu,
    Interconnect,
    Manifest,
    Measurement,
    Model,
    Optimizer,
    Policy,
    Rhetoric,
    Source,
    System,
    Term,
)

EntryKey = tuple[str, str]  # (kind name, entry id)


@dataclass(frozen=True, eq=False)
class KnowledgeBase:
    root: Path
    manifest: Manifest
    content_hash: str
    tables: dict[str, dict[str, Any]]  # kind name -> id -> entry, for every keyed kind in kinds.KINDS
    rhetoric: list[Rhetoric]
    compiled: tuple[CompiledRule, ...]
    locations: dict[EntryKey, tuple[str, int]] = field(default_factory=dict)
    documents: dict[EntryKey, tuple[Located, Loc]] = field(default_factory=dict, repr=False)
    # what is derived from the entries once and kept with them (gpukb.answer.bands): not an init field, so a
    # KnowledgeBase made with dataclasses.replace() from another derives its own
    derived: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    # typed views of the tables, the public names of DESIGN.md
    @property
    def sources(self) -> dict[str, Source]:
        return self.tables["sources"]

    @property
    def claims(self) -> dict[str, Claim]:
        return self.tables["claims"]

    @property
    def gpus(self) -> dict[str, Gpu]:
        return self.tables["gpus"]

    @property
    def models(self) -> dict[str, Model]:
        return self.tables["models"]

    @property
    def interconnects(self) -> dict[str, Interconnect]:
        return self.tables["interconnects"]

    @property
    def systems(self) -> dict[str, System]:
        return self.tables["systems"]

    @property
    def dtypes(self) -> dict[str, Dtype]:
        return self.tables["dtypes"]

    @property
    def glossary(self) -> dict[str, Term]:
        return self.tables["glossary"]

    @property
    def optimizers(self) -> dict[str, Optimizer]:
        return self.tables["optimizers"]

    @property
    def policies(self) -> dict[str, Policy]:
        return self.tables["policies"]

    @property
    def frameworks(self) -> dict[str, Framework]:
        return self.tables["frameworks"]

    @property
    def measurements(self) -> dict[str, Measurement]:
        return self.tables["measurements"]

    @property
    def rules(self) -> dict[str, Rule]:
        return self.tables["rules"]

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def active_rules(self) -> tuple[CompiledRule, ...]:
        """Rules that fire: deprecated ones stay documented but never run."""
        return tuple(c for c in self.compiled if c.rule.status != "deprecated")

    def locate(self, kind: str, entry_id: str, loc: Loc = ()) -> tuple[str, int, int]:
        """file, line, column of a field of an entry (kind as in kinds.KINDS: 'gpus', 'rules', ...)."""
        doc, prefix = self.documents[(kind, entry_id)]
        line, col = doc.where(prefix + tuple(loc))
        return doc.file, line, col

    def problem(self, kind: str, entry_id: str, loc: Loc, code: str, message: str) -> Problem:
        """A problem at a field of an entry, e.g. kb.problem("rules", "req.x", ("when", 0, "if"), "R002", ...)."""
        doc, prefix = self.documents[(kind, entry_id)]
        return located(doc, loc, code, message, prefix=prefix)

    def policy(self, policy_id: str) -> float:
        return self.policies[policy_id].value

    # The pipeline's ask (gpukb.estimate.pipeline.ask), set by the package (gpukb/__init__.py): the pipeline
    # reads a knowledge base, so this module, the data, never imports it.
    asker: ClassVar[Callable[[KnowledgeBase, Any, bool], Any]]

    def ask(self, workload: Any, bands: bool = True) -> Any:
        """Answer a workload (a `gpukb.Workload` or a dict of its fields) with this knowledge base:
        a `gpukb.Answer`, as `gpukb.ask` does with the packaged one; `bands=False` leaves out the error
        bands (what `gpukb validate` asks: its points are what the bands are made of)."""
        return KnowledgeBase.asker(self, workload, bands)

    def entries(self) -> list[tuple[Kind, str, Any]]:
        """(kind, id, entry) for every entry with an id, kinds in registry order, ids sorted."""
        return [(kind, entry_id, self.tables[kind.name][entry_id])
                for kind in KEYED for entry_id in sorted(self.tables[kind.name])]

    def lookup(self, entry_id: str) -> tuple[Kind, Any] | None:
        """Find an entry of any kind by id (rules first, then kb/ kinds in registry order)."""
        for kind in (BY_NAME["rules"], *(k for k in KEYED if k.name != "rules")):
            if entry_id in self.tables[kind.name]:
                return kind, self.tables[kind.name][entry_id]
        return None
