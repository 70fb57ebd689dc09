"""Text from kb/ and rules/ (and from users) made safe to show in a terminal.

A GPU name holding `\\e]0;...\\a` would retitle the terminal, `\\r` overwrite a line, and a
bidirectional override reorder what is shown. The loader refuses such characters in YAML (E014);
the command line also strips them from everything it prints, whatever its origin.
"""

from __future__ import annotations

import re
import unicodedata

# C0 and C1 control characters except tab and newline, and the bidirectional embeddings,
# overrides and isolates.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def clean(text: object) -> str:
    """`text` without control characters."""
    return CONTROL.sub("", str(text))


def invisible(text: str) -> str | None:
    """The first character of `text` that shows nothing, or None: zero-width spaces and joiners, direction marks
    (U+200E, U+200F), the byte-order mark, soft hyphens, line and paragraph separators (U+2028, U+2029), every
    format (Cf) and separator (Zl, Zp) character. Two names differing only by one print alike."""
    return next((c for c in text if unicodedata.category(c) in ("Cf", "Zl", "Zp")), None)


def hanging(text: str, width: int, indent: int = 2) -> str:
    """`text` folded to `width` terminal cells, its continuations indented by `indent` (a hanging indent): at
    spaces where the words allow, inside a word (Chinese text has no spaces) where one is wider than a line."""
    from rich.cells import cell_len

    body = text.lstrip(" ")
    lines, line = [], text[: len(text) - len(body)]  # a line's own indent stays
    for word in body.split(" "):
        candidate = f"{line} {word}" if line.strip() else line + word
        if cell_len(candidate) <= width or (not line.strip() and cell_len(word) <= width - indent):
            line = candidate
            continue
        if cell_len(word) <= width - indent:  # the word starts the next line
            lines.append(line)
            line = " " * indent + word
            continue
        for char in (" " if line.strip() else "") + word:  # a word wider than a line folds where it reaches the edge
            if cell_len(line + char) > width:
                lines.append(line)
                line = " " * indent + char.strip()
            else:
                line += char
    lines.append(line)
    return "\n".join(lines)
