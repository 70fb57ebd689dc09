"""Escaping and small Markdown builders for the generated pages.

Knowledge-base text is data, never markup: `esc` turns it into Markdown that renders as exactly
that text, whatever it holds (HTML, a script, Markdown emphasis or link syntax). It is safe in
paragraphs, table cells, headings, link text and inside raw HTML elements alike.
"""

from __future__ import annotations

import html
import math
import posixpath
import re
from collections.abc import Iterable, Sequence
from urllib.parse import quote, urlsplit

# Characters that mean something to Markdown (or its extensions) or HTML anywhere in a line.
_INLINE = frozenset("\\`*_{}[]<>#|&~^")
# Characters that start block syntax (lists, quotes, admonitions, setext rules) at a line's start.
_LEADING = frozenset("-+=!?:.%")
_LIST_NUMBER = re.compile(r"^(\d+)([.)])")
# Titles end up in <title>, the navigation and attributes through MkDocs' templates, which do not
# escape; they also unescape entities there (Jinja's striptags). So titles never hold these.
_TITLE_SAFE = str.maketrans({"<": "‹", ">": "›", "&": "＆", '"': "”", "'": "’", "`": "‘", "\\": "＼"})


def plain(text: object) -> str:
    """Collapse all whitespace (newlines included) to single spaces."""
    return " ".join(str(text).split())


def _entities(text: str) -> str:
    out = "".join(f"&#{ord(ch)};" if ch in _INLINE else ch for ch in text)
    if out[:1] in _LEADING:
        out = f"&#{ord(out[0])};" + out[1:]
    return _LIST_NUMBER.sub(lambda m: f"{m[1]}&#{ord(m[2])};", out, count=1)


def esc(text: object) -> str:
    """Markdown that renders as the literal text, on one line."""
    return _entities(plain(text))


def esc_spaced(text: object) -> str:
    """Like `esc`, but spaces are kept as they are (for preformatted text); newlines become spaces."""
    return "".join(f"&#{ord(ch)};" if ch in _INLINE else ch for ch in str(text).replace("\n", " "))


def html_text(text: object) -> str:
    """Escape for HTML contexts that Markdown never sees (SVG, <pre>): newlines are kept."""
    return html.escape(str(text), quote=True)


def title_text(text: object) -> str:
    """A page or navigation title: plain text with no character that HTML or Jinja would act on."""
    return plain(text).translate(_TITLE_SAFE)


def css_token(text: object) -> str:
    """A CSS class fragment made only of [a-z0-9-]."""
    return re.sub(r"[^a-z0-9-]+", "-", str(text).lower()).strip("-") or "x"


def anchor(text: object) -> str:
    """An HTML id made only of characters that need no escaping anywhere."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", str(text)).strip("-") or "x"


def rel(from_page: str, to_page: str, fragment: str | None = None) -> str:
    """A relative Markdown link target from one docs-relative page to another (MkDocs rewrites it)."""
    target = "" if to_page == from_page else posixpath.relpath(to_page, posixpath.dirname(from_page) or ".")
    return target + (f"#{anchor(fragment)}" if fragment else "") or "#"


def link(text_md: str, from_page: str, to_page: str, fragment: str | None = None) -> str:
    """[text](target): `text_md` must already be Markdown (escaped)."""
    return f"[{text_md}]({rel(from_page, to_page, fragment)})"


# Characters a URL keeps as they are; everything else (parentheses, brackets, quotes, angle
# brackets, backslashes, spaces) is percent-encoded, so a link target cannot end early in Markdown
# or break out of an HTML attribute.
_URL_SAFE = "/:?#@!$&*+,;=%-._~"


def href(url: object) -> str | None:
    """A link target for a URL from the knowledge base: http(s) only (None otherwise), encoded so
    that it is one Markdown link destination and one HTML attribute value whatever it holds."""
    text = str(url)
    try:
        scheme = urlsplit(text).scheme.lower()
    except ValueError:
        return None
    if scheme not in ("http", "https"):
        return None
    return quote(text, safe=_URL_SAFE)


def external(text_md: str, url: object) -> str:
    """[text](url) for a URL from the knowledge base; just the text when it is not a web address."""
    target = href(url)
    return f"[{text_md}]({target})" if target else text_md


def code(text: object) -> str:
    """Inline code for any text. A backtick span (Markdown escapes its content) with a fence longer
    than any run of backticks inside; text with a pipe, which a table would split, is a <code>
    element with escaped content instead."""
    text = plain(text)
    if "|" in text or not text:
        return f"<code>{esc_spaced(text) or '&#32;'}</code>"
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def badge(value: object, family: str, label: object = None) -> str:
    """A coloured label, e.g. a claim's verdict or a finding's severity: coloured by `value`, reading `label`
    (the value in the page's language) where given."""
    shown = value if label is None else label
    return f'<span class="gpukb-badge gpukb-{css_token(family)}-{css_token(value)}">{esc(shown)}</span>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    """A Markdown table; cells are Markdown already (escaped), and may not span lines."""
    rows = [list(r) for r in rows]
    align = align or "l" * len(headers)
    rule = ["---:" if a == "r" else ":---:" if a == "c" else "---" for a in align]
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join(rule) + " |"]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"table row has {len(row)} cells, expected {len(headers)}")
        cells = [c.replace("\n", " ") or " " for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def stacked_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str | None = None) -> str:
    """A table that fits its column (stylesheets/gpukb.css): compact where there is room, and where there is
    not (a phone) one card per row, each cell under its header's name (`data-label`). Cells are Markdown
    (escaped), parsed by md_in_html, so links are site links; headers are our own plain words."""
    kinds = [{"r": ' class="gpukb-num"', "c": ' class="gpukb-center"'}.get(a, "") for a in align or "l" * len(headers)]
    labels = [html_text(plain(h)) for h in headers]
    head = "".join(f"<th{k}>{label}</th>" for label, k in zip(labels, kinds, strict=True))
    lines = ['<div class="gpukb-table" markdown="1">', '<table class="gpukb-stack" markdown="1">',
             f'<thead markdown="1"><tr markdown="1">{head}</tr></thead>', '<tbody markdown="1">']
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"table row has {len(row)} cells, expected {len(headers)}")
        cells = "".join(f'<td{k} data-label="{label}" markdown="span">{c.replace(chr(10), " ") or " "}</td>'
                        for c, label, k in zip(row, labels, kinds, strict=True))
        lines.append(f'<tr markdown="1">{cells}</tr>')
    return "\n".join([*lines, "</tbody>", "</table>", "</div>"])


def si(value: float) -> str:
    """Engineering notation for large constants: 100e9, 80e9, 1e9, 4096."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == 0 or abs(value) < 1e6:
        return f"{value:g}"
    exponent = 3 * math.floor(math.log10(abs(value)) / 3)
    return f"{value / 10**exponent:g}e{exponent}"
