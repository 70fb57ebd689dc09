"""`gpukb schema [--check]`: the JSON Schemas generated from the models, in kb/schema/."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from .common import err, page


def schema(
    root: Annotated[Path, typer.Argument(help="checkout whose kb/schema/ to write or check")] = Path("."),
    check: Annotated[bool, typer.Option(help="fail if kb/schema/ is out of date instead of writing")] = False,
) -> None:
    """Write the JSON Schemas generated from the models to kb/schema/."""
    from ..knowledge import schemafiles

    if not (root / "kb" / "manifest.yaml").is_file():  # never create kb/schema/ where there is no knowledge base
        page(f"error: no knowledge base at {root} (kb/manifest.yaml is missing): run in a checkout or name one", err)
        raise typer.Exit(2)
    # a schema file that is a link (or kb/schema leading out of the checkout) is refused by name
    problems = schemafiles.stale(root) if check else schemafiles.write(root)
    for path, why in problems:
        page(f"{path}: {why}", err)
    if problems:
        raise typer.Exit(1 if check else 2)
