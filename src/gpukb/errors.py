"""Errors that point at the place to fix: file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .codes import CODES, Severity

if TYPE_CHECKING:
    from .positions import Loc, Located


class GpukbError(Exception):
    """The root of every error gpukb raises on purpose: catch this to catch them all."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in kb/ or rules/, located as precisely as the YAML allows."""

    file: str
    line: int
    column: int
    code: str  # a key of codes.CODES
    message: str
    field: str = ""

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"lint code {self.code} is not in gpukb.codes.CODES")

    @property
    def severity(self) -> Severity:
        return CODES[self.code].severity

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    def __str__(self) -> str:
        where = f" {self.field}:" if self.field else ""
        return f"{self.file}:{self.line}:{self.column}: {self.code}{where} {self.message}"


def located(doc: Located, loc: Loc, code: str, message: str, *, prefix: Loc = (), field: str | None = None) -> Problem:
    """The one way to build a problem at a place in a YAML document: `loc` inside the entry at `prefix`
    (the document itself by default); the field reads `loc` joined with dots unless `field` says otherwise."""
    line, column = doc.where(prefix + tuple(loc))
    return Problem(doc.file, line, column, code, message, ".".join(map(str, loc)) if field is None else field)


class KBError(GpukbError):
    """The knowledge base (kb/ or rules/) is invalid; holds every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.column, p.code))
        super().__init__("\n".join(str(p) for p in self.problems))


class WorkloadError(GpukbError, ValueError):
    """A workload the engine cannot answer; the message names the field."""

    def __init__(self, field: str, message: str):
        self.field = field
        super().__init__(f"{field}: {message}")


class KBDefectError(GpukbError):
    """A defect of the knowledge base that shows only when answering (a policy the engine reads is
    missing, no rule is active): fix kb/ or rules/, not the workload."""

    def __init__(self, message: str):
        super().__init__(f"knowledge-base defect: {message}")


class EngineError(GpukbError, RuntimeError):
    """The rules misbehaved at run time (e.g. the firing bound was hit)."""


# What ask() raises for a workload it cannot answer: the workload's fault, the knowledge base's, the rules'.
ASK_ERRORS = (WorkloadError, KBDefectError, EngineError)


class BaseRevisionError(GpukbError):
    """The base revision of `--base` cannot be read (not a git checkout, unknown revision, ...)."""
