"""Errors that point at the place to fix: file, line and field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .codes import CODES, SUMMARY_ZH, Severity
from .messages import Message, message, with_field

if TYPE_CHECKING:
    from .fmt import Lang
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
    message_zh: str = ""  # the same message in Chinese, where the loader can write it (pydantic's checks)

    def __post_init__(self) -> None:
        if self.code not in CODES:
            raise ValueError(f"lint code {self.code} is not in gpukb.core.codes.CODES")

    @property
    def severity(self) -> Severity:
        return CODES[self.code].severity

    @property
    def is_warning(self) -> bool:
        return self.severity == "warning"

    def __str__(self) -> str:
        where = f" {self.field}:" if self.field else ""
        return f"{self.file}:{self.line}:{self.column}: {self.code}{where} {self.message}"

    def text(self, lang: Lang = "en") -> str:
        """In Chinese: the place, the code, the field and the message in Chinese; where the loader has no
        Chinese for it, what kind of problem the code is, then its own detail on the next line (it quotes the
        file's values and ids as they are)."""
        if lang != "zh" or (not self.message_zh and self.code not in SUMMARY_ZH):
            return str(self)
        where = f"{self.file}:{self.line}:{self.column}: {self.code}{f' {self.field}' if self.field else ''}："
        return where + (self.message_zh or f"{SUMMARY_ZH[self.code]}\n    {self.message}")


def located(doc: Located, loc: Loc, code: str, message: str | Message, *, prefix: Loc = (),
            field: str | None = None) -> Problem:
    """The one way to build a problem at a place in a YAML document: `loc` inside the entry at `prefix`
    (the document itself by default); the field reads `loc` joined with dots unless `field` says otherwise.
    A Message gives the problem its Chinese too."""
    line, column = doc.where(prefix + tuple(loc))
    zh = message.text("zh") if isinstance(message, Message) else ""
    return Problem(doc.file, line, column, code, str(message), ".".join(map(str, loc)) if field is None else field, zh)


class KBError(GpukbError):
    """The knowledge base (kb/ or rules/) is invalid; holds every problem found."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(problems, key=lambda p: (p.file, p.line, p.column, p.code))
        super().__init__("\n".join(str(p) for p in self.problems))


class WorkloadError(GpukbError, ValueError):
    """A workload the engine cannot answer; the message names the field. Given a Message (gpukb.core.messages),
    `text(lang)` writes it in either language; a plain string stays as written."""

    def __init__(self, field: str, message: str | Message):
        self.field = field
        self.message = message
        super().__init__(f"{field}: {message}")

    def text(self, lang: Lang = "en") -> str:
        if isinstance(self.message, Message):
            return with_field(self.field, self.message.text(lang), lang)
        return str(self)


class Invalid(ValueError):
    """A workload validator's error as a Message, for pydantic to carry to parse_workload; `field` is the
    field it names where the validator sees the whole workload."""

    def __init__(self, field: str, key: str, **values: object):
        self.field = field
        self.message = message(key, **values)
        super().__init__(with_field(field, str(self.message)) if field else str(self.message))


class KBDefectError(GpukbError):
    """A defect of the knowledge base that shows only when answering (a policy the engine reads is
    missing, no rule is active): fix kb/ or rules/, not the workload."""

    def __init__(self, detail: str | Message):
        self.message = message("kb_defect", detail=detail)
        super().__init__(str(self.message))

    def text(self, lang: Lang = "en") -> str:
        return self.message.text(lang)


class EngineError(GpukbError, RuntimeError):
    """The rules misbehaved at run time (e.g. the firing bound was hit)."""

    def text(self, lang: Lang = "en") -> str:
        return message("engine_failed", detail=str(self)).text(lang)


# What ask() raises for a workload it cannot answer: the workload's fault, the knowledge base's, the rules'.
ASK_ERRORS = (WorkloadError, KBDefectError, EngineError)


class BaseRevisionError(GpukbError):
    """The base revision of `--base` cannot be read (not a git checkout, unknown revision, ...)."""
