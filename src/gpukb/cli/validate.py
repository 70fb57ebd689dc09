"""`gpukb validate`: predict every published measurement and compare, against the accuracy thresholds."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from .. import load_kb
from ..core import jsontext
from ..core.errors import BaseRevisionError, KBError, WorkloadError
from .common import BAD_INPUT, FAILED, err, fail_kb, out, page


class ValidateFormat(StrEnum):
    text = "text"
    json = "json"


def validate(
    fmt: Annotated[ValidateFormat, typer.Option("--format", help="text (a table) or json")] = ValidateFormat.text,
    root: Annotated[Path | None, typer.Option(help="checkout holding kb/ and rules/ (default: the packaged KB)")] = None,
    base: Annotated[str | None, typer.Option(
        help="git revision to compare with: fail if the median error grows by more than the allowed step")] = None,
) -> None:
    """Predict every published measurement in kb/measurements/ and compare: measured, predicted, ratio,
    and the rules behind each number; median error and share within ±25%, overall and per quantity; the
    error bands and their leave-one-source-out coverage. A run's energy and CO₂ (derived from its GPU-hours,
    already a point) are gated on their own, each within ±25%, outside the overall median.
    Exits 1 when the accuracy thresholds in kb/policies/ are missed (or, with --base, when the change
    makes the median error worse than the base revision's by more than the allowed step)."""
    from ..estimate import validation as v

    try:
        kb = load_kb(root)
        result = v.validate(kb)
        regression = v.against_base(kb, result, base) if base else None
    except KBError as error:
        fail_kb(error)
    except (BaseRevisionError, WorkloadError) as error:
        page(f"error: {error}", err)
        raise typer.Exit(BAD_INPUT) from None
    if fmt is ValidateFormat.json:
        data = result.to_json()
        if regression is not None:
            data["base"] = regression.to_json()
        sys.stdout.write(jsontext.dumps(data, ensure_ascii=False, indent=2) + "\n")
    else:
        page(v.render_text(result, regression, out.width).rstrip("\n"))
    if not result.passed or (regression is not None and regression.failed):
        raise typer.Exit(FAILED)
