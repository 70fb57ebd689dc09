"""The loaded knowledge base: typed entries keyed by id, plus the compiled rules."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .rules import CompiledRule, Rule
from .schema import Claim, Dtype, Gpu, Interconnect, Manifest, Model, Optimizer, Policy, Rhetoric, Source
from .yamlpos import Loc, Located

if TYPE_CHECKING:
    from .answer import Answer
    from .workload import Workload


@dataclass(frozen=True, eq=False)
class KnowledgeBase:
    root: Path
    manifest: Manifest
    content_hash: str
    sources: dict[str, Source]
    claims: dict[str, Claim]
    gpus: dict[str, Gpu]
    models: dict[str, Model]
    interconnects: dict[str, Interconnect]
    dtypes: dict[str, Dtype]
    optimizers: dict[str, Optimizer]
    policies: dict[str, Policy]
    rhetoric: list[Rhetoric]
    rules: dict[str, Rule]
    compiled: tuple[CompiledRule, ...]
    locations: dict[str, tuple[str, int]] = field(default_factory=dict)
    documents: dict[str, tuple[Located, Loc]] = field(default_factory=dict, repr=False)
    citations: dict[tuple[str, ...], Any] = field(default_factory=dict, repr=False)  # trace's cache of cited claims

    @property
    def version(self) -> str:
        return self.manifest.version

    @property
    def active_rules(self) -> tuple[CompiledRule, ...]:
        """Rules that fire: deprecated ones stay documented but never run."""
        return tuple(c for c in self.compiled if c.rule.status != "deprecated")

    def locate(self, kind: str, entry_id: str, loc: Loc = ()) -> tuple[str, int, int]:
        """file, line, column of a field of an entry (kind as in kb/ folder names, or 'rules')."""
        doc, prefix = self.documents[f"{kind}:{entry_id}"]
        line, col = doc.where(prefix + tuple(loc))
        return doc.file, line, col

    def policy(self, policy_id: str) -> float:
        return self.policies[policy_id].value

    def ask(self, workload: Workload | dict[str, Any]) -> Answer:
        from .pipeline import ask

        return ask(self, workload)

    def lookup(self, entry_id: str) -> tuple[str, Any] | None:
        """Find an entry of any kind by id: ('rule', Rule), ('claim', Claim), ..."""
        for kind, table in (("rule", self.rules), ("claim", self.claims), ("gpu", self.gpus),
                            ("model", self.models), ("source", self.sources),
                            ("interconnect", self.interconnects), ("dtype", self.dtypes),
                            ("optimizer", self.optimizers), ("policy", self.policies)):
            if entry_id in table:
                return kind, table[entry_id]
        return None
