"""The registry of entry kinds: one place that says what kb/ and rules/ hold.

The loader reads each kind's folder into its model, reference checks follow `refs`, lint, version
diffs, `gpukb explain` and `gpukb impact` iterate `KINDS`. Adding an entry kind means one `Kind`
here plus its pydantic model and YAML files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .rules import Rule
from .schema import (
    FRAMEWORK_TERMS,
    Claim,
    Dtype,
    Framework,
    Gpu,
    Interconnect,
    Measurement,
    Model,
    Optimizer,
    Policy,
    Rhetoric,
    Source,
    System,
    Term,
)


@dataclass(frozen=True)
class Ref:
    """A field of an entry that names another entry: `field` may be dotted ("price.source")."""

    field: str
    target: str  # a Kind.name

    def values(self, entry: Any) -> list[tuple[tuple[str | int, ...], str]]:
        """(location inside the entry, referenced id) for every id the field holds; a list on the way
        ("cloud_prices.source") is followed into each of its items."""
        found: list[tuple[tuple[str | int, ...], Any]] = [((), entry)]
        for part in self.field.split("."):
            step: list[tuple[tuple[str | int, ...], Any]] = []
            for loc, value in found:
                items = list(enumerate(value)) if isinstance(value, list | tuple) else [(None, value)]
                for i, item in items:
                    got = getattr(item, part, None)
                    if got is not None:
                        step.append(((*loc, part) if i is None else (*loc, i, part), got))
            found = step
        out: list[tuple[tuple[str | int, ...], str]] = []
        for loc, value in found:
            out += [((*loc, i), v) for i, v in enumerate(value)] if isinstance(value, list | tuple) else [(loc, value)]
        return out


def _common(*more: Ref) -> tuple[Ref, ...]:
    return (Ref("sources", "sources"), Ref("claims", "claims"), *more)


@dataclass(frozen=True)
class Kind:
    name: str          # plural, as the folder: "gpus"; also the KnowledgeBase attribute
    singular: str      # "gpu": how one entry is named in messages, `gpukb explain`, schema file names
    folder: str        # where its files live, relative to the checkout
    model: type[BaseModel]
    refs: tuple[Ref, ...] = ()
    keyed: bool = True  # entries have ids (rhetoric does not)
    shown: tuple[str, ...] = ()  # fields `gpukb explain` prints for kinds without a richer view

    def label(self, entry_id: str) -> str:
        return f"{self.name}:{entry_id}"


KINDS: tuple[Kind, ...] = (
    Kind("sources", "source", "kb/sources", Source, (Ref("superseded_by", "sources"),),
         shown=("title", "publisher", "kind", "url", "path", "as_of")),
    Kind("claims", "claim", "kb/claims", Claim, (Ref("evidence", "sources"), Ref("superseded_by", "claims"))),
    Kind("gpus", "gpu", "kb/gpus", Gpu, _common(Ref("superseded_by", "gpus"), Ref("scale_up", "interconnects"),
                                               Ref("pcie", "interconnects"), Ref("price.source", "sources"),
                                               Ref("cloud_prices.source", "sources"),
                                               Ref("memory_source", "sources"), Ref("devices_source", "sources"))),
    Kind("systems", "system", "kb/systems", System,
         _common(Ref("superseded_by", "systems"), Ref("gpu", "gpus"), Ref("fabric", "interconnects"),
                 Ref("prices.source", "sources")),
         shown=("name", "kind", "provider", "gpu", "gpus_per_node", "fabric", "peer_to_peer", "network_bandwidth",
                "network", "host_memory", "prices", "notes")),
    Kind("models", "model", "kb/models", Model, _common(Ref("superseded_by", "models"))),
    Kind("interconnects", "interconnect", "kb/interconnects", Interconnect,
         _common(Ref("superseded_by", "interconnects")), shown=("name", "kind", "bandwidth", "quoted", "notes")),
    Kind("dtypes", "dtype", "kb/dtypes", Dtype, _common(Ref("superseded_by", "dtypes")),
         shown=("name", "bits", "training", "inference", "flops_field", "notes")),
    Kind("optimizers", "optimizer", "kb/optimizers", Optimizer, _common(Ref("superseded_by", "optimizers")),
         shown=("name", "state_bytes", "states", "notes")),
    Kind("policies", "policy", "kb/policies", Policy, _common(Ref("superseded_by", "policies"), Ref("gpus", "gpus")),
         shown=("title", "value", "unit", "reason")),
    Kind("frameworks", "framework", "kb/frameworks", Framework,
         _common(Ref("superseded_by", "frameworks"), *(Ref(f"{t}.sources", "sources") for t in FRAMEWORK_TERMS),
                 Ref("scheduler.sources", "sources"), Ref("training_layout.sources", "sources")),
         shown=("name", "tasks", "default_for", "default_reason", "default_reason_zh", *FRAMEWORK_TERMS,
                "training_layout")),
    Kind("measurements", "measurement", "kb/measurements", Measurement,
         _common(Ref("superseded_by", "measurements"), Ref("source", "sources")),
         shown=("title", "quantity", "value", "unit", "setup", "locator", "quote", "unstated")),
    Kind("rhetoric", "rhetoric", "kb/rhetoric", Rhetoric, keyed=False),
    Kind("glossary", "term", "kb/glossary", Term, _common(Ref("superseded_by", "glossary")),
         shown=("en", "zh", "avoid_zh", "note")),
    Kind("rules", "rule", "rules", Rule, _common(Ref("superseded_by", "rules"))),
)
BY_NAME: dict[str, Kind] = {k.name: k for k in KINDS}
KEYED: tuple[Kind, ...] = tuple(k for k in KINDS if k.keyed)
