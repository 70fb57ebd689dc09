"""JSON as every reader parses it: `NaN` and `Infinity` are not JSON (RFC 8259), and a strict parser (jq,
JSON.parse, Go, Rust) rejects the whole document for one of them.

Every JSON gpukb writes goes through `dumps`: a number that is not finite becomes null, and each place that
can hold one says why beside it (validate's `reason`, a summary's missing median); `allow_nan=False` makes
one that slipped through a loud error here rather than a document nobody can read.
"""

from __future__ import annotations

import json
import math
from typing import Any


def finite(value: Any) -> Any:
    """`value` with every float that is not finite replaced by None, in dicts, lists and tuples at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def dumps(value: Any, **options: Any) -> str:
    """json.dumps of `value` with non-finite numbers as null, never `NaN` or `Infinity`."""
    return json.dumps(finite(value), allow_nan=False, **options)
