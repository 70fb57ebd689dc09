"""Lint results for their readers: text for people, annotations for GitHub Actions, JSON for tools.

REPORTERS maps each `gpukb lint --format` name to its reporter. Every reporter first strips control
characters from what the files said (ids, keys, values), so nothing a file holds can drive a terminal.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod

from ..core import jsontext
from ..core.errors import Problem
from ..core.terminal import clean


class Reporter(ABC):
    """Renders the problems and notes of one lint run as the text to print."""

    def report(self, problems: list[Problem], notes: list[str]) -> str:
        cleaned = [dataclasses.replace(p, file=clean(p.file), message=clean(p.message), field=clean(p.field))
                   for p in problems]
        return self.render(cleaned, [clean(note) for note in notes])

    @abstractmethod
    def render(self, problems: list[Problem], notes: list[str]) -> str:
        """The output for problems and notes already free of control characters."""


class TextReporter(Reporter):
    """One line per problem, then the counts; a clean run says so first and lists its warnings."""

    def render(self, problems: list[Problem], notes: list[str]) -> str:
        errors = [p for p in problems if not p.is_warning]
        warnings = [p for p in problems if p.is_warning]
        counts = f"{len(warnings)} warning(s)" if warnings else ""
        lines: list[str] = []
        if errors:
            lines += [str(p) for p in problems]
            lines.append(f"{len(errors)} error(s)" + (f", {counts}" if counts else ""))
        else:
            lines.append("ok: kb/ and rules/ are valid and every rule test passes" + (f"; {counts}" if counts else ""))
            lines += [str(p) for p in warnings]
        lines += [f"note: {note}" for note in notes]
        return "".join(line + "\n" for line in lines)


class GithubReporter(Reporter):
    """GitHub Actions workflow commands: an annotation per problem, errors first, a notice per note."""

    def render(self, problems: list[Problem], notes: list[str]) -> str:
        errors = [p for p in problems if not p.is_warning]
        warnings = [p for p in problems if p.is_warning]
        lines = []
        for p in errors + warnings:  # errors first: the checks summary shows the first ones
            lines.append(f"::{p.severity} file={github_escape(p.file, prop=True)},line={p.line},col={p.column},"
                         f"title={p.code}::{github_escape((p.field + ': ') if p.field else '')}"
                         f"{github_escape(p.message)}")
        lines += [f"::notice title=gpukb lint::{github_escape(note)}" for note in notes]
        return "".join(line + "\n" for line in lines)


class JsonReporter(Reporter):
    """A JSON list of the problems, each with its severity; notes are not part of it."""

    def render(self, problems: list[Problem], notes: list[str]) -> str:
        # English, as the command line's JSON always is: the Chinese message stays out
        rows = [{**{k: v for k, v in dataclasses.asdict(p).items() if k != "message_zh"}, "severity": p.severity}
                for p in problems]
        return jsontext.dumps(rows, ensure_ascii=False, indent=2) + "\n"


def github_escape(text: str, *, prop: bool = False) -> str:
    """Escape a workflow command's message (prop=False) or property value (prop=True)."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


REPORTERS: dict[str, Reporter] = {"text": TextReporter(), "github": GithubReporter(), "json": JsonReporter()}
