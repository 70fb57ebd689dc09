"""`gpukb impact --base REV`: how a change to kb/ or rules/ changes the answers to canonical scenarios."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..core import safepath, safewrite
from ..core.errors import KBError
from ..core.terminal import clean
from .common import BAD_INPUT, err, fail, fail_kb, page


def impact(
    base: Annotated[str, typer.Option(help="git revision to compare with, e.g. origin/main or the PR's base commit")],
    scenarios: Annotated[Path | None, typer.Option(
        help="YAML list of {id, title, workload}; default site/scenarios.yaml, else scenarios.yaml")] = None,
    root: Annotated[Path, typer.Option(help="checkout holding kb/ and rules/")] = Path("."),
    output: Annotated[Path | None, typer.Option(help="also write the Markdown report to this file")] = None,
) -> None:
    """Markdown report for a pull request: how the answers to canonical scenarios change between
    the base revision's KB and the working tree's (best option, GPU counts, fits, findings,
    remedies, and the rules responsible)."""
    from ..contrib.impact import ImpactError, impact_report

    try:
        text = impact_report(root, base, scenarios)
    except KBError as error:
        fail_kb(error)
    except ImpactError as error:
        page(f"error: {error}", err)
        raise typer.Exit(BAD_INPUT) from None
    text = clean(text)
    if output is not None:
        try:  # never through a link: a temporary beside it, renamed into place
            safewrite.write_file(output.parent, output.name, text, replace=True)
        except safepath.RefusedPath as refusal:
            fail(ValueError(f"--output {output}: {refusal}"), BAD_INPUT)
    sys.stdout.write(text)
