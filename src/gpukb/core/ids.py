"""Entry ids as traces cite them: `id@version`, built and split in one place."""

from __future__ import annotations

import difflib
import re
from collections.abc import Container, Iterable

from .messages import Message, message


def versioned(entry_id: str, version: int) -> str:
    """'req.kv-cache', 2 → 'req.kv-cache@2', the form every trace step cites."""
    return f"{entry_id}@{version}"


def split_versioned(text: str) -> tuple[str, int | None]:
    """'req.kv-cache@2' → ('req.kv-cache', 2); an id without a version → (id, None)."""
    entry_id, sep, version = text.strip().rpartition("@")
    if sep and version.isdigit():
        return entry_id, int(version)
    return text.strip(), None


def _squashed(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def near_ids(wanted: str, ids: Iterable[str], limit: int = 6) -> list[str]:
    """Ids a person may have meant, ignoring case, '-' and '.': the same id spelt otherwise, ids that
    begin with or contain what was typed (shorter first), then close spellings. `ids` comes in order
    of preference (catalog entries before measurements, say): 'h100' → the H100 variants,
    'llama2-7b' → 'llama-2-7b'."""
    order = {i: n for n, i in enumerate(dict.fromkeys(ids))}
    key = _squashed(wanted)
    if not key:
        return []
    squashed = {i: _squashed(i) for i in order}
    same = [i for i in order if squashed[i] == key]
    containing = sorted((i for i in order if key in squashed[i]),
                        key=lambda i: (not squashed[i].startswith(key), len(i), order[i]))
    by_squash = {v: i for i, v in reversed(list(squashed.items()))}
    close = [by_squash[s] for s in difflib.get_close_matches(key, list(by_squash), n=limit, cutoff=0.75)]
    return list(dict.fromkeys(same + containing + close))[:limit]


def catalog_id(wanted: str, ids: Container[str]) -> str | None:
    """The id in `ids` that `wanted` names, case aside ('H100-SXM-80GB' → 'h100-sxm-80gb': catalog
    ids are lowercase slugs), or None."""
    if wanted in ids:
        return wanted
    lowered = wanted.lower()
    return lowered if lowered in ids else None


def near_hint(wanted: str, ids: Iterable[str]) -> Message | str:
    """'; did you mean a, b?' (a Message, in either language) naming the ids near `wanted` (near_ids, in the
    order given), or ''."""
    if len(wanted) > 100:  # no id is this long, and matching a huge text would take long
        return ""
    near = near_ids(wanted, ids)
    return message("did_you_mean", ids=near) if near else ""


def did_you_mean(wanted: str, ids: Iterable[str]) -> str:
    """near_hint in English."""
    return str(near_hint(wanted, ids))
