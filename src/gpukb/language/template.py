"""Restricted formatter for rule `explain` sentences.

Placeholders are `{name}` or `{alias.field}` with an optional unit after a bar:
`{p.per_gpu_bytes|GB}`. Lookups go through dicts only; `str.format` is never used because it
allows attribute and index access on the values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from operator import itemgetter
from typing import Any

from ..core import fmt
from ..core.fmt import Lang
from ..core.words import offload, rl_word, value

FORMATS: dict[str, Callable[[Any], str]] = {
    "GB": fmt.gb,
    "GiB": fmt.gib,
    "TB/s": fmt.bandwidth,
    "TFLOPS": fmt.flops,
    "pct": fmt.pct,
    "x": fmt.ratio,
    "int": fmt.integer,
    "f1": lambda v: f"{v:,.1f}",
    "f2": lambda v: f"{v:,.2f}",
    "s": fmt.duration,
    "offload": lambda v: offload("en", v),
    "rl": lambda v: rl_word("en", v),
    "bound": str,  # what bounds a step (compute, memory, host): the Chinese says it in words
    "scope": str,  # what an energy figure covers (gpu, node, facility)
    "link": str,  # the link a transfer crosses, as a rule names it in English
}
# formats whose words depend on the language of the sentence
_LOCAL: dict[Lang, dict[str, Callable[[Any], str]]] = {"en": {}, "zh": {
    "s": lambda v: fmt.duration(v, "zh"),
    "offload": lambda v: offload("zh", v),
    "rl": lambda v: rl_word("zh", v),
    "bound": lambda v: value("zh", "bound", str(v)),
    "scope": lambda v: value("zh", "energy_scope", str(v)),
    "link": lambda v: value("zh", "link", str(v)),
}}
_PLACEHOLDER = re.compile(r"\{([A-Za-z][A-Za-z0-9_]*(?:\.[A-Za-z][A-Za-z0-9_]*)?)(?:\|([A-Za-z0-9/]+))?\}")


class TemplateError(ValueError):
    pass


def placeholders(template: str) -> list[tuple[str, str | None]]:
    """Check a template and return its (name, format) pairs; stray braces are errors."""
    stripped = _PLACEHOLDER.sub("", template)
    if "{" in stripped or "}" in stripped:
        raise TemplateError("braces must enclose a name like {alias.field} or {name|GB}")
    found = [(m[1], m[2]) for m in _PLACEHOLDER.finditer(template)]
    for _, name in found:
        if name is not None and name not in FORMATS:
            raise TemplateError(f"unknown format '{name}'; use one of {', '.join(FORMATS)}")
    return found


@lru_cache(maxsize=1024)
def _parts(template: str) -> tuple[tuple[str, str, str, str], ...]:
    """(literal text before, head, tail, format name) for each placeholder, then the trailing text."""
    parts, last = [], 0
    for match in _PLACEHOLDER.finditer(template):
        head, _, tail = match[1].partition(".")
        parts.append((template[last:match.start()], head, tail, match[2] or ""))
        last = match.end()
    parts.append((template[last:], "", "", ""))
    return tuple(parts)


def needs(*templates: str) -> tuple[tuple[str, str], ...]:
    """The (head, tail) of every placeholder in `templates`, once each, in order: what check_values reads."""
    return tuple(dict.fromkeys((head, tail) for template in templates for _text, head, tail, _ in _parts(template) if head))


def check_values(wanted: tuple[tuple[str, str], ...], env: Mapping[str, Any]) -> None:
    """Raise the TemplateError `render` would for a placeholder (of `needs`) without a value, without formatting."""
    for head, tail in wanted:
        value: Any = env.get(head)
        if tail:
            value = value.get(tail) if isinstance(value, dict) else None
        if value is None:
            raise TemplateError(f"no value for {{{head}{'.' + tail if tail else ''}}}")


def value_test(wanted: tuple[tuple[str, str], ...]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether every placeholder of `needs` has a value in an env: the test every firing runs, with the
    lookups done in C (operator.itemgetter) a placeholder group at a time; where it says no, check_values
    names the placeholder. A quarter of the time of check_values's loop over 20-40 placeholders."""
    plain = tuple(head for head, tail in wanted if not tail)
    nested: dict[str, list[str]] = {}
    for head, tail in wanted:
        if tail:
            nested.setdefault(head, []).append(tail)
    # (the fact alias, or None for the env itself; whether one key, for which itemgetter returns the value bare)
    groups = [(None, len(plain) == 1, itemgetter(*plain))] if plain else []
    groups += [(head, len(tails) == 1, itemgetter(*tails)) for head, tails in nested.items()]

    def test(env: Mapping[str, Any]) -> bool:
        try:
            for head, single, get in groups:
                found = get(env if head is None else env[head])
                if found is None if single else None in found:
                    return False
        except (KeyError, TypeError):  # a missing name or field, or fields asked of a value that is no fact
            return False
        return True

    return test


def render(template: str, env: Mapping[str, Any], lang: Lang = "en") -> str:
    """Fill a checked template from `env` (facts are dicts); `lang` picks the words of formats such as `s`."""
    out = []
    local = _LOCAL[lang]
    for text, head, tail, name in _parts(template):
        out.append(text)
        if not head:
            continue
        value: Any = env.get(head)
        if tail:  # dict lookups only: a fact is a dict, anything else has no fields
            value = value.get(tail) if isinstance(value, dict) else None
        if value is None:
            raise TemplateError(f"no value for {{{head}{'.' + tail if tail else ''}}}")
        show = local.get(name) or FORMATS.get(name, fmt.plain)
        out.append(show(value))
    return "".join(out)
