"""`gpukb explain ID...`: knowledge-base entries as readable YAML, with where they come from."""

from __future__ import annotations

from typing import Annotated

import typer

from .. import load_kb
from ..core.errors import KBError
from ..core.messages import message
from .common import BAD_INPUT, LangOption, Language, RootOption, err, fail_kb, page


def explain_entry(
    entry_ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="rule, claim, GPU, model or source ids; `id@version` as a trace cites it is fine")],
    root: RootOption = None,
    lang: LangOption = Language.en,
) -> None:
    """Show knowledge-base entries and where they come from, as readable YAML."""
    from ..contrib.entry_text import describe_entry
    from ..core.ids import near_hint, split_versioned

    try:
        kb = load_kb(root)
    except KBError as error:
        fail_kb(error, lang.value)
    texts, unknown = [], False
    for wanted in entry_ids:
        entry_id, version = split_versioned(wanted)
        if kb.lookup(entry_id) is None and kb.lookup(entry_id.lower()) is not None:
            entry_id = entry_id.lower()  # ids are lowercase slugs: H100-SXM-80GB names h100-sxm-80gb
        text = describe_entry(kb, entry_id, lang.value)
        if text is None:
            unknown = True
            catalog = ("gpus", "models", "rules", "claims")  # what people look up most, suggested first
            entries = sorted(kb.entries(), key=lambda e: catalog.index(e[0].name) if e[0].name in catalog else 9)
            hint = near_hint(entry_id, (entry_id for _, entry_id, _ in entries))
            unknown_id = message("error", detail=message("unknown_entry", entry=entry_id, hint=hint))
            page(unknown_id.text(lang.value), err)
            continue
        found = kb.lookup(entry_id)
        if version is not None and found is not None and found[1].version != version:
            text += message("other_version", asked=version, has=found[1].version).text(lang.value)
        texts.append(text)
    if texts:
        page("\n---\n".join(texts))
    if unknown:
        raise typer.Exit(BAD_INPUT)
