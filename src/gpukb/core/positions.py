"""Where each value of a YAML file came from: kept apart from yamlpos, so that a knowledge base
read back from kbcache does not import a YAML parser it will not use."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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
