"""Restricted formatter for rule `explain` sentences.

Placeholders are `{name}` or `{alias.field}` with an optional unit after a bar:
`{p.per_gpu_bytes|GB}`. Lookups go through dicts only; `str.format` is never used because it
allows attribute and index access on the values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from .units import fmt_bandwidth, fmt_flops, gb, gib

FORMATS: dict[str, Callable[[Any], str]] = {
    "GB": gb,
    "GiB": gib,
    "TB/s": fmt_bandwidth,
    "TFLOPS": fmt_flops,
    "pct": lambda v: f"{100 * v:.0f}%",
    "x": lambda v: f"{v:.2f}×",
    "int": lambda v: f"{round(v):,}",
    "f1": lambda v: f"{v:,.1f}",
    "f2": lambda v: f"{v:,.2f}",
    "s": lambda v: _duration(v),
}
_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)?)(?:\|([A-Za-z0-9/]+))?\}")


class TemplateError(ValueError):
    pass


def _duration(seconds: float) -> str:
    if seconds >= 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:,.1f} h"
    if seconds >= 1:
        return f"{seconds:,.1f} s"
    return f"{seconds * 1e3:,.2f} ms"


def placeholders(template: str) -> list[tuple[str, str | None]]:
    """Check a template and return its (name, format) pairs; stray braces are errors."""
    stripped = _PLACEHOLDER.sub("", template)
    if "{" in stripped or "}" in stripped:
        raise TemplateError("braces must enclose a name like {alias.field} or {name|GB}")
    found = [(m[1], m[2]) for m in _PLACEHOLDER.finditer(template)]
    for _, fmt in found:
        if fmt is not None and fmt not in FORMATS:
            raise TemplateError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    return found


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:,.4g}"
    return str(value)


@lru_cache(maxsize=1024)
def _parts(template: str) -> tuple[tuple[str, str, str, Callable[[Any], str]], ...]:
    """(literal text before, head, tail, formatter) for each placeholder, then the trailing text."""
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(template):
        head, _, tail = match[1].partition(".")
        parts.append((template[last:match.start()], head, tail, FORMATS[match[2]] if match[2] else _show))
        last = match.end()
    parts.append((template[last:], "", "", _show))
    return tuple(parts)


def render(template: str, env: Mapping[str, Any]) -> str:
    out = []
    for text, head, tail, show in _parts(template):
        out.append(text)
        if not head:
            continue
        value: Any = env.get(head)
        if tail:  # dict lookups only: a fact is a dict, anything else has no fields
            value = value.get(tail) if isinstance(value, dict) else None
        if value is None:
            raise TemplateError(f"no value for {{{head}{'.' + tail if tail else ''}}}")
        out.append(show(value))
    return "".join(out)
