"""`gpukb schema [--check]`: the JSON Schemas generated from the models, in kb/schema/."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from ..core.terminal import clean
from .common import err


def schema(
    root: Annotated[Path, typer.Argument(help="checkout whose kb/schema/ to write or check")] = Path("."),
    check: Annotated[bool, typer.Option(help="fail if kb/schema/ is out of date instead of writing")] = False,
) -> None:
    """Write the JSON Schemas generated from the models to kb/schema/."""
    from ..knowledge.loader import json_schemas

    if not (root / "kb" / "manifest.yaml").is_file():  # never create kb/schema/ where there is no knowledge base
        err.print(clean(f"error: no knowledge base at {root} (kb/manifest.yaml is missing): run in a checkout or name one"),
                  markup=False, highlight=False)
        raise typer.Exit(2)
    folder = root / "kb" / "schema"
    stale = []
    for name, document in json_schemas().items():
        text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
        path = folder / f"{name}.schema.json"
        if check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        for path in stale:
            err.print(f"{path}: out of date; run `gpukb schema`", markup=False)
        raise typer.Exit(1)
