"""`gpukb lint`: validate kb/ and rules/, run every rule's tests and, with --base, the version rules."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..contrib.reporters import REPORTERS
from .common import FAILED, Format, page


def lint(
    root: Annotated[Path, typer.Argument(help="checkout holding kb/ and rules/")] = Path("."),
    fmt: Annotated[Format, typer.Option("--format", help="text, github (Actions annotations) or json")] = Format.text,
    base: Annotated[str | None, typer.Option(
        help="git revision to compare with: entry versions, the KB version and CHANGELOG.md must follow the changes",
    )] = None,
    strict: Annotated[bool, typer.Option(help="warnings (codes W...) fail too")] = False,
) -> None:
    """Validate kb/ and rules/ (schema, references, expression safety, dead rules, cycles, sources,
    deprecations), run every rule's tests and, with --base, check the version rules."""
    from ..contrib.lint import lint as run_lint

    result = run_lint(root, base)
    report = REPORTERS[fmt].report(result.problems, result.notes)
    if fmt is Format.text:  # for people: wrapped to the terminal; the other formats are read by machines
        page(report.rstrip("\n"))
    else:
        sys.stdout.write(report)
    if result.failed(strict):
        raise typer.Exit(FAILED)
