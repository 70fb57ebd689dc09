"""Text copied into GitHub-flavoured Markdown (the report `gpukb impact` writes for CI to post), shown
as exactly that text.

Titles, messages and ids come from a pull request's kb/, rules/ and scenarios: in the report they
must not become markup (HTML, links, images, emphasis, a table cell's end), an autolink, a mention
that notifies someone (@user) or a cross-reference (#123), nor carry control or bidirectional
characters. `text` is for prose and `code` for identifiers and JSON, which a code span shows as is.
"""

from __future__ import annotations

import re

# Characters GitHub's Markdown or HTML act on anywhere in a line: numeric entities always read as text.
_ACTIVE = frozenset("\\`*_{}[]<>|&~$!")
_LEADING = frozenset("#-+=>.:%")  # block syntax at a line's start (a heading, a list, a quote, a rule)
# C0 and C1 controls, bidirectional controls, zero-width and other invisible format characters, line
# and paragraph separators: never copied, each shown as its code point.
_INVISIBLE = re.compile("[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_WORD_JOINER = "\u2060"  # invisible: after @ or # it stops a mention or reference, and shows nothing
_REFERENCE = re.compile(r"([@#])(?=\w)")  # @user, @org/team, #123, GH-123 reads as text after a joiner
_AUTOLINK = re.compile(r"(?i)(://|www\.)")


def _visible(text: str) -> str:
    return _INVISIBLE.sub(lambda m: f"U+{ord(m[0]):04X}", " ".join(str(text).split()))


def text(value: object) -> str:
    """Markdown that renders as `value` on one line (whitespace collapsed, invisible characters named)."""
    plain = _REFERENCE.sub(lambda m: m[1] + _WORD_JOINER, _visible(str(value)))
    out = "".join(f"&#{ord(ch)};" if ch in _ACTIVE else ch for ch in plain)
    out = _AUTOLINK.sub(lambda m: m[0].replace(":", "&#58;").replace(".", "&#46;"), out)
    if out[:1] in _LEADING:
        out = f"&#{ord(out[0])};" + out[1:]
    return re.sub(r"^(\d+)([.)])", lambda m: f"{m[1]}&#{ord(m[2])};", out)


def code(value: object) -> str:
    """A code span showing `value` as is (a fence longer than any backtick run in it), outside tables;
    invisible characters named, since a code span shows them raw."""
    plain = _visible(str(value))
    longest = max((len(run) for run in re.findall(r"`+", plain)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if plain.startswith("`") or plain.endswith("`") or not plain else ""
    return f"{fence}{pad}{plain}{pad}{fence}"
