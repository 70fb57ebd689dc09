"""Safe, bounded YAML loading that remembers where every key and item came from.

PyYAML's SafeLoader builds the data; the node tree of the same parse gives 1-based line and
column for each path, so a validation error can name the exact line. Duplicate keys, which
YAML loaders silently merge, are reported here.

kb/ and rules/ come from strangers' pull requests, so a file is refused before it can cost much:
a file larger than MAX_FILE_BYTES, holding more than MAX_NODES values or nesting deeper than
MAX_NESTING, a symbolic link leading out of the checkout, and anchors or aliases (the KB has no
use for them, and they are how a small file expands to billions of values). Numbers that are not
finite or larger than expressions allow (expr.MAX_MAGNITUDE), and control characters in text, are
located errors too.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml: every file takes the pure-Python loader
    CParser = None

from ..core import safepath
from ..core.errors import Problem
from ..core.positions import Loc, Located
from ..core.terminal import CONTROL
from ..language.expr import MAX_MAGNITUDE

MAX_FILE_BYTES = 256 * 1024  # six times the largest file today (the article's claims, 41 kB)
MAX_NODES = 20_000           # values (scalars, lists, mappings) in one file; the largest has ~1,300
MAX_NESTING = 32             # lists and mappings inside each other; rules nest 6 deep


class _Refused(yaml.YAMLError):
    """The file is refused as a whole, at `mark`."""

    def __init__(self, mark: yaml.Mark | None, code: str, message: str):
        super().__init__(message)
        self.mark, self.code, self.message = mark, code, message


class _Bounds:
    """Refuses anchors, aliases, deep nesting and too many values while composing, and records
    non-finite numbers and control characters while constructing: mixed into a safe loader."""

    nodes = 0
    depth = 0
    found: list[tuple[yaml.Mark, str, str]]

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node:
        event = self.peek_event()  # type: ignore[attr-defined]
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise _Refused(event.start_mark, "E006", f"YAML anchors and aliases are not allowed (found '{event.anchor}'): "
                                                     "write the value out")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Refused(event.start_mark, "E005", f"more than {MAX_NODES:,} values in one file: split it")
        self.depth += 1
        try:
            if self.depth > MAX_NESTING:
                raise _Refused(event.start_mark, "E005", f"nested more than {MAX_NESTING} levels deep")
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self.depth -= 1

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        value = super().construct_yaml_float(node)  # type: ignore[misc]
        if not math.isfinite(value) or abs(value) > MAX_MAGNITUDE:
            self.found.append((node.start_mark, "E013", f"{node.value!r} is not a finite number of at most "
                                                        f"{MAX_MAGNITUDE:g}"))
        return value

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        if len(node.value) > 80:  # refused before Python converts it: thousands of digits take long
            self.found.append((node.start_mark, "E013", f"an integer of {len(node.value):,} digits"))
            return 0
        value = super().construct_yaml_int(node)  # type: ignore[misc]
        if abs(value) > MAX_MAGNITUDE:
            self.found.append((node.start_mark, "E013", f"{node.value} is larger than {MAX_MAGNITUDE:g}"))
        return value

    def construct_yaml_str(self, node: yaml.ScalarNode) -> str:
        value = super().construct_yaml_str(node)  # type: ignore[misc]
        if match := CONTROL.search(value):
            self.found.append((node.start_mark, "E014", f"text holds the control character U+{ord(match[0]):04X}: "
                                                        "remove it"))
        return value




class _BoundedLoader(_Bounds, yaml.SafeLoader):
    """PyYAML's pure-Python SafeLoader, bounded: the reference, and every error's wording."""

    def __init__(self, stream: str):
        yaml.SafeLoader.__init__(self, stream)
        self.found = []


class _FastLoader(_Bounds, Composer, CParser or object, SafeConstructor, Resolver):  # type: ignore[misc]
    """The same loader with libyaml's scanner and parser (C) under PyYAML's own composer and
    constructor: the same events make the same nodes, checks and data, five times faster.
    load_located falls back to _BoundedLoader for any file this one does not load cleanly."""

    def __init__(self, stream: str):
        CParser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self.found = []


for _loader in (_BoundedLoader, _FastLoader):
    _loader.add_constructor("tag:yaml.org,2002:float", _Bounds.construct_yaml_float)
    _loader.add_constructor("tag:yaml.org,2002:int", _Bounds.construct_yaml_int)
    _loader.add_constructor("tag:yaml.org,2002:str", _Bounds.construct_yaml_str)


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


def _read(path: Path, display: str, root: Path | None) -> tuple[str | None, list[Problem]]:
    """The file's text, or why it is refused: outside the checkout, too large, not UTF-8."""
    if root is not None and not safepath.inside(path, Path(root)):
        return None, [Problem(display, 1, 1, "E005", "a symbolic link leading out of the checkout: "
                                                     "kb/ and rules/ hold their files themselves")]
    try:  # a regular file only, opened without blocking (a FIFO or a device is refused, never waited on)
        raw = safepath.read_bytes(path, MAX_FILE_BYTES)
    except safepath.RefusedPath as refused:
        return None, [Problem(display, 1, 1, "E005", f"{refused}: kb/ and rules/ hold their YAML files "
                                                     "themselves")]
    if len(raw) > MAX_FILE_BYTES:
        return None, [Problem(display, 1, 1, "E005", f"larger than {MAX_FILE_BYTES:,} bytes: split it")]
    try:
        return raw.decode("utf-8"), []
    except UnicodeDecodeError as exc:
        return None, [Problem(display, 1, 1, "E001", f"not UTF-8 text (byte {exc.start}): save the file as UTF-8")]


def _positions(node: yaml.Node | None) -> tuple[dict[Loc, tuple[int, int]], list[tuple[Loc, yaml.Node]]]:
    positions: dict[Loc, tuple[int, int]] = {}
    dups: list[tuple[Loc, yaml.Node]] = []
    if node is not None:
        positions[()] = (node.start_mark.line + 1, node.start_mark.column + 1)
        _walk(node, (), positions, dups)
    return positions, dups


def _fast(text: str) -> tuple[Any, dict[Loc, tuple[int, int]]] | None:
    """(data, positions) through libyaml, or None where the file has anything to report: then
    the pure-Python loader reads it again, so every error, refusal and its position reads as it did."""
    loader = _FastLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except Exception:  # any refusal or error is reported by the reference loader
        return None
    finally:
        loader.dispose()
    if loader.found:
        return None
    positions, dups = _positions(node)
    return None if dups else (data, positions)


def load_located(path: Path, display: str, root: Path | None = None) -> tuple[Located | None, list[Problem]]:
    """Parse one YAML file safely; on a syntax error or a refused file return the problem instead
    of raising. With `root`, a file whose real path lies outside it is refused."""
    text, refused = _read(path, display, root)
    if text is None:
        return None, refused
    if CParser is not None:
        fast = _fast(text)
        if fast is not None:
            return Located(display, *fast), []
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        line, col = (exc.mark.line + 1, exc.mark.column + 1) if exc.mark else (1, 1)
        return None, [Problem(display, line, col, exc.code, exc.message)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return None, [Problem(display, line, col, "E001", f"YAML syntax: {exc.problem or exc}")]
    except yaml.YAMLError as exc:
        return None, [Problem(display, 1, 1, "E001", f"YAML: {exc}")]
    except RecursionError:  # a fallback only: MAX_NESTING stops nesting long before Python's limit
        return None, [Problem(display, 1, 1, "E005", f"nested more than {MAX_NESTING} levels deep")]
    finally:
        loader.dispose()
    positions, dups = _positions(node)
    problems = [
        Problem(display, n.start_mark.line + 1, n.start_mark.column + 1, "E002",
                f"duplicate key '{loc[-1]}' (YAML would silently keep only the last)", ".".join(map(str, loc)))
        for loc, n in dups
    ]
    problems += [Problem(display, mark.line + 1, mark.column + 1, code, message) for mark, code, message in loader.found]
    return Located(display, data, positions), problems
