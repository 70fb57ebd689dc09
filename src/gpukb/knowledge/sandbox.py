"""The asks a knowledge base makes by itself (a claim's figures, a measurement's workload) stay inside it.

kb/ comes from strangers' pull requests and its asks run in lint, `gpukb explain`, `gpukb validate`, the
site build and every answer's error bands. Such an ask may name a catalog model (its id, or the Hugging
Face repository of a catalog model, which is resolved offline) or a config.json inside the checkout, and
nothing else: no absolute path, no `~`, no `..`, no link leading out of the checkout (a config file of
the machine it runs on), and no `hf:` id (a download at lint time).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..core import safepath
from ..core.errors import WorkloadError
from ..core.ids import catalog_id

if TYPE_CHECKING:
    from .kb import KnowledgeBase

ONLY = "an ask of the knowledge base names a catalog model or a config.json inside the checkout"


MODEL_FIELDS = ("model", "reference_model", "reward_model", "critic_model")  # the workload fields naming a model


def sandboxed(kb: KnowledgeBase, workload: Any) -> Any:
    """The workload with each model it names checked and made to name the same thing wherever gpukb runs: a
    catalog repository becomes its id, a relative config path that path under the checkout. Raises
    WorkloadError naming the field for anything else."""
    if not isinstance(workload, dict):
        return workload  # the ask's own validation says what is wrong
    out = dict(workload)
    for name in MODEL_FIELDS:
        if isinstance(out.get(name), str):
            out[name] = _model(kb, name, out[name])
    return out


def _model(kb: KnowledgeBase, field: str, ref: str) -> str:
    if catalog_id(ref, kb.models) is not None:
        return ref
    repos = {m.hf_repo.lower(): m.id for m in kb.models.values() if m.hf_repo and m.status != "deprecated"}
    if ref.lower() in repos:
        return repos[ref.lower()]
    if ref.startswith("hf:"):
        raise WorkloadError(field, f"'{ref}' would be downloaded from the Hugging Face Hub: {ONLY}")
    if ref.startswith(("/", "~")) or "\\" in ref:
        raise WorkloadError(field, f"'{ref}' is not a path relative to the checkout: {ONLY}")
    if ".." in PurePosixPath(ref).parts:
        raise WorkloadError(field, f"'{ref}' steps out of its folder with '..': {ONLY}")
    try:
        safepath.check_name(ref)
    except safepath.RefusedPath as refused:
        raise WorkloadError(field, str(refused)) from None
    root = Path(kb.root)
    if not safepath.inside(root / ref, root):
        raise WorkloadError(field, f"'{ref}' leads out of the checkout (a symbolic link): {ONLY}")
    return str(root / ref)
