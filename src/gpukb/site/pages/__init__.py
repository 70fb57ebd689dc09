"""One module per page family; each function returns Markdown (or SVG) for MkDocs. Page paths and
cross-references live in gpukb.site.links, repository Markdown handling in gpukb.site.markdown."""

from __future__ import annotations

from ..links import *  # noqa: F403  (page paths are part of this package's interface)
from ..links import Context, Role
from ..markdown import list_indents, repository_markdown
from ..markdown import sections as readme_sections
from .article import article, claim
from .gpus import gpu, gpu_chart, gpus_index, inline_chart
from .home import home
from .models import TASKS, kv_bytes_per_token, model, models_index
from .reference import changelog, glossary, interconnects, policies, precisions, repository_guide, sources, systems
from .rules import rule, rules_index
from .scenarios import esc_pre, render_step, scenario, scenario_trace, scenarios_index
from .tree import decision_tree, diagram
from .validation import accuracy_svg, validation

__all__ = [
           "TASKS",
           "Context",
           "Role",
           "accuracy_svg",
           "article",
           "changelog",
           "claim",
           "decision_tree",
           "diagram",
           "esc_pre",
           "glossary",
           "gpu",
           "gpu_chart",
           "gpus_index",
           "home",
           "inline_chart",
           "interconnects",
           "kv_bytes_per_token",
           "list_indents",
           "model",
           "models_index",
           "policies",
           "precisions",
           "readme_sections",
           "render_step",
           "repository_guide",
           "repository_markdown",
           "rule",
           "rules_index",
           "scenario",
           "scenario_trace",
           "scenarios_index",
           "sources",
           "systems",
           "validation",
]
