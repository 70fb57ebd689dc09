"""The machines a plan runs on: per GPU type, the system whose nodes it is laid out on, and the one it rents.

A GPU type is planned on its *reference system*: of the systems in kb/systems that hold it (and that the
workload allows), the one that scales furthest — the fastest network between nodes, then the most GPUs a node,
then a known price, then the lowest. Its node size, network, fabric and host memory are what the planner and
the rules read, so a multi-node plan of PCIe cards pays for its 100 Gb/s Ethernet and an offload plan is held
to the node's memory.

Once the plan's GPU count is known, the system to *rent* is the cheapest priced one that runs the same plan:
for one node, any system of the same GPU with at least that many GPUs on the same fabric (one GPU needs no
fabric); past one node, a system with the same node size and fabric and a network at least as fast. A plan
of 6 GPUs rents a whole 8-GPU node and names the 2 idle GPUs. Serving replicas share no traffic (a load balancer
splits the requests), so they rent any system whose nodes hold whole replicas, network or none: six one-GPU
replicas may be six one-GPU instances.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase
    from ..knowledge.schema import NodePrice, System

# Per knowledge base and (GPU type, systems allowed): its systems by id, each with its lowest price. Sorting
# the catalog's 86 systems and taking each one's lowest price again for every plan was a fifth of a
# single-GPU ask's planner and grew with the catalog; the systems never change once loaded.
_HELD: WeakKeyDictionary[KnowledgeBase, dict[tuple[str, tuple[str, ...]], tuple[tuple[System, NodePrice | None], ...]]] = (
    WeakKeyDictionary())


def _held(kb: KnowledgeBase, gpu: str, allowed: tuple[str, ...]) -> tuple[tuple[System, NodePrice | None], ...]:
    known = _HELD.get(kb)
    if known is None:
        known = _HELD.setdefault(kb, {})
    key = (gpu, allowed)
    found = known.get(key)
    if found is None:
        found = known[key] = tuple((s, s.price) for sid, s in sorted(kb.systems.items())
                                   if s.gpu == gpu and s.status != "deprecated" and (not allowed or sid in allowed))
    return found


def systems_of(kb: KnowledgeBase, gpu: str, allowed: tuple[str, ...] = ()) -> list[System]:
    """The systems that hold this GPU type (only those allowed, when the workload names systems), by id."""
    return [s for s, _ in _held(kb, gpu, allowed)]


def reference_system(kb: KnowledgeBase, gpu: str, allowed: tuple[str, ...] = ()) -> System | None:
    """The system a GPU type is planned on: the one that scales furthest (see the module's docstring)."""
    return max(systems_of(kb, gpu, allowed), default=None, key=lambda s: (
        s.network_bandwidth or 0.0, s.gpus_per_node, s.price is not None,
        -(s.price.usd_per_node_hour if s.price else 0.0), s.id))


@dataclass(frozen=True)
class Rental:
    """The nodes a plan rents: which system, how many nodes, and what they cost an hour (0 when unpriced)."""

    system: System
    nodes: int

    @property
    def gpus(self) -> int:
        return self.nodes * self.system.gpus_per_node

    @property
    def usd_per_hour(self) -> float:
        return self.nodes * self.system.price.usd_per_node_hour if self.system.price else 0.0


# Per knowledge base, the rental of each (reference system, GPUs, host memory per GPU, replica, systems allowed): a
# plan compares its GPU type's every system (RunPod and Lambda sell 1 to 8 GPUs a node) and the answer is the same
# for the same plan in every later ask.
_RENTALS: WeakKeyDictionary[KnowledgeBase, dict[tuple[str, int, float, int, tuple[str, ...]], Rental]] = (
    WeakKeyDictionary())


def rental(kb: KnowledgeBase, reference: System, count: int, host_bytes_per_gpu: float,
           allowed: tuple[str, ...] = (), replica: int = 0) -> Rental:
    """The cheapest priced system that runs a plan of `count` GPUs laid out on `reference`, else the reference.
    `replica`: the GPUs of one serving replica where the plan is independent replicas of that many (0: one plan)."""
    known = _RENTALS.get(kb)
    if known is None:
        known = _RENTALS.setdefault(kb, {})
    key = (reference.id, count, host_bytes_per_gpu, replica, allowed)
    found = known.get(key)
    if found is None:
        found = known[key] = _cheapest(kb, reference, count, host_bytes_per_gpu, allowed, replica)
    return found


def _same_fabric(s: System, reference: System) -> bool:
    return s.fabric == reference.fabric and bool(s.peer_to_peer) >= bool(reference.peer_to_peer)


def _cheapest(kb: KnowledgeBase, reference: System, count: int, host_bytes_per_gpu: float,
              allowed: tuple[str, ...], replica: int = 0) -> Rental:
    nodes = math.ceil(count / reference.gpus_per_node)

    def nodes_needed(s: System) -> int | None:
        """The nodes of `s` that run the plan, or None where they cannot."""
        if s.host_memory < host_bytes_per_gpu * min(count, s.gpus_per_node):
            return None
        if replica and count > replica:  # whole replicas a node, each on the reference's fabric if it spans GPUs
            per_node = s.gpus_per_node // replica
            if not per_node or (replica > 1 and not _same_fabric(s, reference)):
                return None
            return math.ceil(count // replica / per_node)
        if nodes == 1:
            return 1 if s.gpus_per_node >= count and (count == 1 or _same_fabric(s, reference)) else None
        if (s.gpus_per_node == reference.gpus_per_node and s.fabric == reference.fabric
                and (s.network_bandwidth or 0.0) >= (reference.network_bandwidth or 0.0)):
            return math.ceil(count / s.gpus_per_node)
        return None

    best: tuple[float, System, int] | None = None
    for s, price in _held(kb, reference.gpu, allowed):  # by id, so the first of equal prices has the least id
        if price is not None and (need := nodes_needed(s)) is not None:
            usd = need * price.usd_per_node_hour  # Rental.usd_per_hour
            if best is None or (usd, need) < (best[0], best[2]):  # at one price, fewer nodes
                best = (usd, s, need)
    return Rental(reference, nodes) if best is None else Rental(best[1], best[2])
