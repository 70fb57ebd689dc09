"""One-way imports: the modules of src/gpukb form layers, and no import climbs back up.

The graph is read from the source (ast), so it holds every import a module makes: at the top,
inside functions (an import run only when called still ties the modules together) and under
`if TYPE_CHECKING:` (a type named is a dependency too; it is how a cycle hides). Importing
`gpukb.x` also initialises the package `gpukb` first; that edge is Python's, not the module's, and
is not counted, so the package may import its modules and wire them (KnowledgeBase.asker,
Answer.renderer).
"""

from __future__ import annotations

import ast
from pathlib import Path

import gpukb

SRC = Path(__file__).resolve().parents[1] / "src" / "gpukb"

Edge = tuple[str, str, int]  # importer, imported, line


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `root` (a package's __init__ is the package)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports(root: Path) -> list[Edge]:
    """Every import between the modules under `root`, wherever in a file it is written."""
    known = modules(root)
    edges = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([node.module] if node.module else [])])
                # `from p import m` imports the module p.m where there is one, else names of p itself
                submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
                targets = submodules + ([base] if len(submodules) < len(node.names) else [])
            else:
                continue
            edges += [(name, target, node.lineno) for target in targets if target in known and target != name]
    return edges


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for source, target, _ in edges:
        graph.setdefault(source, set()).add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:  # iterative, so a deep chain of imports cannot hit the recursion limit
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_import_graph_has_no_cycle():
    edges = imports(SRC)
    assert len(edges) > 100  # the graph was read, not an empty one
    found = cycles(edges)
    shown = [" ".join(f"{SRC.parent.joinpath(*s.split('.'))}:{line} imports {t}" for s, t, line in edges
                      if s in component and t in component) for component in found]
    assert not found, "\n".join(shown)


# The layers of src/gpukb, lowest first: a module may import its own layer and the ones below it.
# answer/ sits under estimate/: it is the shape (Workload in, Answer out) every estimate fills in.
# The interfaces share the top: the command line, the site, the contributor tools and the probe.
LAYERS = [("core",), ("language",), ("knowledge",), ("engine",), ("answer",), ("estimate",),
          ("cli", "site", "contrib", "probe")]


def layer_of(module: str) -> int | None:
    """The rank of a module's layer; None for the package itself (gpukb/__init__ wires the API)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for rank, folders in enumerate(LAYERS):
        if parts[1] in folders:
            return rank
    raise AssertionError(f"{module} is in no layer: put it in one of the folders of LAYERS")


def climbing(edges: list[Edge]) -> list[str]:
    """Imports from a lower layer into a higher one."""
    found = []
    for source, target, line in edges:
        low, high = layer_of(source), layer_of(target)
        if low is not None and high is not None and high > low:
            found.append(f"{source}:{line} imports {target} (layer {LAYERS[high]} above {LAYERS[low]})")
    return found


def test_every_module_lives_in_a_layer_folder():
    loose = [name for name, path in modules(SRC).items() if path.parent == SRC and path.name != "__init__.py"]
    assert not loose, f"modules outside the layer folders: {loose}"
    assert all(layer_of(name) is not None for name in modules(SRC) if name != "gpukb")


def test_no_lower_layer_imports_a_higher_one():
    assert not climbing(imports(SRC)), "\n".join(climbing(imports(SRC)))


def test_the_layer_check_catches_a_climbing_import():
    assert climbing([("gpukb.core.fmt", "gpukb.estimate.planner", 3)]) == [
        "gpukb.core.fmt:3 imports gpukb.estimate.planner (layer ('estimate',) above ('core',))"]
    assert climbing([("gpukb.estimate.planner", "gpukb.core.fmt", 3), ("gpukb.site.tree", "gpukb.contrib.figures", 1)]) == []


def test_the_cycle_finder_finds_function_local_and_type_only_imports(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .data import Data\n")
    (package / "data.py").write_text("def use():\n    from .reader import read\n    return read\n")
    (package / "reader.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .data import Data\n")
    (package / "lower.py").write_text("from . import data\n")
    assert cycles(imports(package)) == [["pkg.data", "pkg.reader"]]


def test_kb_ask_and_answer_explain_still_work_through_the_package():
    """The public API keeps its shape: load_kb(...).ask(...) and answer.explain(), wired by the package."""
    kb = gpukb.load_kb()
    answer = kb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]})
    assert isinstance(answer, gpukb.Answer) and answer.options
    assert answer.explain().startswith(f"gpukb {kb.version}")
    assert "llama-2-7b" in answer.explain(lang="zh")
    assert gpukb.ask({"model": "llama-2-7b", "task": "lora", "gpus": ["h100-sxm-80gb"]}).memory == answer.memory
