"""Energy and emissions of a training run: the grid a workload's `region` names, and a published footprint
read the way its source counted it.

The arithmetic is a rule, rec.energy.training (rules/recommendations/energy-training.yaml): GPU-hours ×
board power (TDP × policy training-gpu-power-fraction), the rest of the node (node-other-power-fraction),
the data centre (datacenter-pue), then the grid's intensity. This module supplies the intensity: one
policy per region, `grid-intensity-<ISO 3166 code>`, in gCO₂/kWh with its source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..core.errors import KBDefectError, WorkloadError

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase

GRID_POLICY = "grid-intensity-"
# the region of a workload that names none; policy grid-intensity-us gives the reason (the largest share
# of the world's data-centre electricity) and the answer names it in the resolved workload
DEFAULT_REGION = "us"
# what a published energy figure counts -> the value of rec.energy.training that counts the same
Scope = Literal["gpu", "node", "facility"]
SCOPE_VALUE: dict[str, str] = {"gpu": "gpu_kwh", "node": "it_kwh", "facility": "energy_kwh"}


def regions(kb: KnowledgeBase) -> list[str]:
    """The region codes the knowledge base has a grid intensity for."""
    return sorted(pid.removeprefix(GRID_POLICY) for pid, p in kb.policies.items()
                  if pid.startswith(GRID_POLICY) and p.status != "deprecated")


def grid(kb: KnowledgeBase, region: str | None) -> tuple[str, str, float]:
    """(region, its policy id, gCO₂ per kWh) for a workload's region, or the default's."""
    code = region or DEFAULT_REGION
    pid = GRID_POLICY + code
    if pid not in kb.policies or kb.policies[pid].status == "deprecated":
        known = ", ".join(regions(kb)) or "none"
        if region is None:
            raise KBDefectError(f"kb/policies/ lacks {pid}, the grid intensity of the default region")
        raise WorkloadError("region", f"no grid intensity for '{region}' in kb/policies/ (regions: {known})")
    return code, pid, kb.policy(pid)
