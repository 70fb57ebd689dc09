"""Safe YAML loading that remembers where every key and item came from.

PyYAML's SafeLoader builds the data; the node tree of the same parse gives 1-based line and
column for each path, so a validation error can name the exact line. Duplicate keys, which
YAML loaders silently merge, are reported here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import Problem

Loc = tuple[str | int, ...]


@dataclass
class Located:
    """Data from one YAML file plus a map from path to (line, column)."""

    file: str
    data: Any
    positions: dict[Loc, tuple[int, int]] = field(default_factory=dict)

    def where(self, loc: Loc) -> tuple[int, int]:
        """Position of `loc`, or of its nearest ancestor that has one."""
        loc = tuple(loc)
        while loc:
            if loc in self.positions:
                return self.positions[loc]
            loc = loc[:-1]
        return self.positions.get((), (1, 1))


def _walk(node: yaml.Node, path: Loc, out: dict[Loc, tuple[int, int]], dups: list[tuple[Loc, yaml.Node]]) -> None:
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                dups.append((path + (key,), key_node))
            seen.add(key)
            out[path + (key,)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _walk(value_node, path + (key,), out, dups)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            out[path + (index,)] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _walk(item, path + (index,), out, dups)


def load_located(path: Path, display: str) -> tuple[Located | None, list[Problem]]:
    """Parse one YAML file safely; on a syntax error return the problem instead of raising."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, [Problem(display, 1, 1, "E001", f"not UTF-8 text (byte {exc.start}): save the file as UTF-8")]
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return None, [Problem(display, line, col, "E001", f"YAML syntax: {exc.problem or exc}")]
    except yaml.YAMLError as exc:
        return None, [Problem(display, 1, 1, "E001", f"YAML: {exc}")]
    finally:
        loader.dispose()
    positions: dict[Loc, tuple[int, int]] = {}
    dups: list[tuple[Loc, yaml.Node]] = []
    if node is not None:
        positions[()] = (node.start_mark.line + 1, node.start_mark.column + 1)
        _walk(node, (), positions, dups)
    problems = [
        Problem(display, n.start_mark.line + 1, n.start_mark.column + 1, "E002",
                f"duplicate key '{loc[-1]}' (YAML would silently keep only the last)", ".".join(map(str, loc)))
        for loc, n in dups
    ]
    return Located(display, data, positions), problems
