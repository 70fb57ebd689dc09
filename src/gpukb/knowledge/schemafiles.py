"""kb/schema/*.schema.json: the JSON Schemas generated from the models, checked and written (`gpukb schema`).

The files are the checkout's own: a schema file or kb/schema itself that is a symbolic link (say, to a
file outside the repository) is refused by name, never read as "out of date" nor written through.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..core import safepath, safewrite
from .loader import json_schemas

FOLDER = Path("kb") / "schema"
MAX_BYTES = 4 << 20  # the largest schema is ~60 kB


def texts() -> dict[str, str]:
    """The text of each schema file, by file name."""
    return {f"{name}.schema.json": json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
            for name, document in json_schemas().items()}


def refused(root: Path) -> list[tuple[Path, str]]:
    """(file, why) for each schema file gpukb may not write: a link, not a regular file, out of the checkout."""
    folder = root / FOLDER
    found = []
    for name in texts():
        try:
            safewrite.check_target(folder, name, within=root, replace=True)
        except safepath.RefusedPath as refusal:
            found.append((folder / name, str(refusal)))
    return found


def stale(root: Path) -> list[tuple[Path, str]]:
    """(file, why) for each schema file that is refused, missing or differs from the models."""
    found = refused(root)
    if found:
        return found
    folder = root / FOLDER
    for name, text in texts().items():
        try:
            if safepath.read_text(folder / name, MAX_BYTES) != text:
                found.append((folder / name, "out of date; run `gpukb schema`"))
        except safepath.RefusedPath as refusal:
            found.append((folder / name, f"{refusal}; run `gpukb schema`"))
    return found


def write(root: Path) -> list[tuple[Path, str]]:
    """Write every schema file under root/kb/schema/; returns (file, why) for the files refused, and then
    writes none."""
    found = refused(root)
    if found:
        return found
    folder = root / FOLDER
    for name, text in texts().items():
        try:
            safewrite.write_file(folder, name, text, within=root, replace=True)
        except safepath.RefusedPath as refusal:  # a link planted since the check
            found.append((folder / name, str(refusal)))
    return found
