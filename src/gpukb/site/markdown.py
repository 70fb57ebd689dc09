"""Markdown written for the repository (README, CHANGELOG, CONTRIBUTING), made to fit the site.

Everything here walks a file line by line with `lines`, which knows whether each line is inside a
code fence, so no transformation ever touches code.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .text import code, rel

_FENCE = re.compile(r"^ *(`{3,}|~{3,})")


def lines(markdown: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is inside a fenced code block: the opening fence line counts as
    outside (it starts the block), the closing one as inside (it ends it). A fence closes only with
    the same character, at least as long as the one that opened it."""
    opened: str | None = None
    for line in markdown.splitlines():
        match = _FENCE.match(line)
        if opened is None:
            if match:
                opened = match[1]
            yield line, False
        else:
            if match and match[1][0] == opened[0] and len(match[1]) >= len(opened) and not line.strip()[len(match[1]):]:
                opened = None
            yield line, True


_LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")


def repository_markdown(markdown: str, here: str, pages: dict[str, str]) -> str:
    """Markdown written for the repository, placed on page `here`: links to repository files that have
    a page on the site point at it; links to other repository files become plain text (the site has
    no copy of them). Code fences are left alone."""

    def fix(match: re.Match[str]) -> str:
        bang, text, target = match.groups()
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:|^#", target):
            return match[0]
        path, _, fragment = target.partition("#")
        page = pages.get(path.removeprefix("./"))
        if page is not None and not bang:
            return f"[{text}]({rel(here, page, fragment or None)})"
        return f"{text} ({code(target)})" if text else code(target)

    out = [line if fenced else _LINK.sub(fix, line) for line, fenced in lines(markdown)]
    return list_indents("\n".join(out))


_ITEM = re.compile(r"^([-*+]|\d{1,9}[.)])( +)\S")


def list_indents(markdown: str) -> str:
    """Re-indent list items' continuation lines the way Python-Markdown reads them.

    GitHub continues a list item at the column its text starts (3 spaces after "1. ", 2 after "- ");
    Python-Markdown wants 4 spaces per level, or a code block inside an item ends the list and the
    numbering restarts. Lines are shifted, never reflowed, so anything else reads as before.
    """
    out: list[str] = []
    stack: list[tuple[int, int]] = []  # (content column in the input, content column in the output)
    for line, fenced in lines(markdown):
        if not line.strip():
            out.append("")
            continue
        indent = len(line) - len(line.lstrip(" "))
        if not fenced:
            while stack and indent < stack[-1][0]:
                stack.pop()
        new_indent = stack[-1][1] + indent - stack[-1][0] if stack else indent
        text = line.lstrip(" ")
        out.append(" " * max(new_indent, 0) + text)
        if not fenced and (item := _ITEM.match(text)):
            stack.append((indent + len(item[1]) + len(item[2]), max(new_indent, 0) + 4))
    return "\n".join(out)


def sections(markdown: str) -> tuple[str, dict[str, str]]:
    """(text before the first `## `, {heading: body}) of a Markdown file, ignoring code fences."""
    intro: list[str] = []
    found: dict[str, list[str]] = {}
    current: list[str] = intro
    for line, fenced in lines(markdown):
        if not fenced and line.startswith("## "):
            current = found.setdefault(line[3:].strip(), [])
            continue
        if not fenced and line.startswith("# ") and current is intro:
            continue
        current.append(line)
    return "\n".join(intro).strip(), {k: "\n".join(v).strip() for k, v in found.items()}


def demote(markdown: str) -> str:
    """Headings one level down, so an included file sits under a page's title."""
    return "\n".join("#" + line if not fenced and line.startswith("#") else line for line, fenced in lines(markdown))


def indent(markdown: str, spaces: int = 4) -> str:
    """Every non-blank line indented (the body of a collapsible block)."""
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else "" for line in markdown.splitlines())
