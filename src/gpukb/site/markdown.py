"""Markdown written for the repository (README, CHANGELOG, CONTRIBUTING), made to fit the site.

Everything here walks a file line by line with `lines`, which knows whether each line is inside a
code fence, so no transformation ever touches code.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from .text import anchor, esc_spaced, href, rel

_FENCE = re.compile(r"^ *(`{3,}|~{3,})")


def _roles(markdown: str) -> Iterator[tuple[str, str]]:
    """Each line with its role: `text`, `open` (a fence starting a code block), `code` or `close`.
    A fence closes only with the same character, at least as long as the one that opened it."""
    opened: str | None = None
    for line in markdown.splitlines():
        match = _FENCE.match(line)
        if opened is None:
            if match:
                opened = match[1]
            yield line, "open" if match else "text"
        elif match and match[1][0] == opened[0] and len(match[1]) >= len(opened) and not line.strip()[len(match[1]):]:
            opened = None
            yield line, "close"
        else:
            yield line, "code"


def lines(markdown: str) -> Iterator[tuple[str, bool]]:
    """Each line with whether it is inside a fenced code block: the opening fence line counts as
    outside (it starts the block), the closing one as inside (it ends it)."""
    for line, role in _roles(markdown):
        yield line, role in ("code", "close")


# --- repository Markdown, sanitised ---------------------------------------------------------------
#
# README.md, CHANGELOG.md and CONTRIBUTING.md arrive through pull requests like kb/ does, so they are
# rendered under the rules of knowledge-base text (site.text): no raw HTML, no entity, no attribute list,
# and no link or image but to an http(s) address, another page of the site or an anchor. The output is
# rebuilt rather than filtered: every `[`, `]`, `<`, `&`, `{` and backtick in it is one gpukb wrote (a link
# with a checked target, a code span, an entity) and every fence is written out whole, so however
# Python-Markdown and pymdownx.superfences read a construct, no markup of the file's own survives.

# Characters that start markup Markdown or HTML would act on; outside code they become entities.
_ACTIVE = frozenset("<&[]{`")
_SEPARATORS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # line ends Markdown does not see as such
_DEFINITION = re.compile(r"""^ {0,3}\[([^\[\]]+)\]:[ \t]*(\S+)(?:[ \t]+(?:"[^"]*"|'[^']*'|\([^)]*\)))?[ \t]*$""")
_AUTOLINK = re.compile(r"<(https?://[^\s<>]*)>", re.IGNORECASE)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_LANG = re.compile(r"[ \t]*\.?([\w#+.-]+)")
_QUOTED_FENCE = re.compile(r"^([ >]*)~(?=~~)")  # a fence inside a block quote: superfences would open it


def _entity(char: str) -> str:
    return f"&#{ord(char)};"


def _code(content: str) -> str:
    """A code span for any text: a plain backtick span where nothing in it could act as markup should
    Markdown end the span elsewhere; otherwise a <code> element with every active character an entity."""
    content = " ".join(content.split())
    if content and not _ACTIVE & set(content) and "|" not in content and "\\" not in content:
        return f"`{content}`"
    return f"<code>{esc_spaced(content) or '&#32;'}</code>"


def _run(text: str, i: int, char: str) -> int:
    j = i
    while j < len(text) and text[j] == char:
        j += 1
    return j - i


def _closing_backticks(text: str, start: int, length: int) -> int | None:
    """Where a run of exactly `length` backticks starts at or after `start`, before a blank line."""
    i = start
    while i < len(text):
        if text.startswith("\n\n", i):
            return None
        if text[i] == "`":
            run = _run(text, i, "`")
            if run == length:
                return i
            i += run
        else:
            i += 1
    return None


def _bracket_end(text: str, i: int) -> int | None:
    """The `]` that closes the `[` at i (nesting, escapes and code spans respected), before a blank line."""
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c == "\\":
            j += 2
            continue
        if c == "`":
            run = _run(text, j, "`")
            close = _closing_backticks(text, j + run, run)
            j = j + run if close is None else close + run
            continue
        if text.startswith("\n\n", j):
            return None
        depth += c == "["
        depth -= c == "]"
        if depth == 0:
            return j
        j += 1
    return None


def _destination(text: str, k: int) -> tuple[str, int] | None:
    """(destination, index after the closing parenthesis) of an inline link whose `(` is at k - 1."""
    n = len(text)
    while k < n and text[k] in " \t\n":
        k += 1
    if k < n and text[k] == "<":
        end = text.find(">", k)
        if end < 0 or "\n" in text[k:end]:
            return None
        dest, k = text[k + 1:end], end + 1
    else:
        start, depth = k, 0
        while k < n and text[k] not in " \t\n":
            if text[k] == "\\":
                k += 2
                continue
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                if depth == 0:
                    break
                depth -= 1
            k += 1
        dest = text[start:min(k, n)]
    while k < n and text[k] in " \t\n":
        k += 1
    if k < n and text[k] in "\"'(":  # a title: dropped
        closer = ")" if text[k] == "(" else text[k]
        end = text.find(closer, k + 1)
        if end < 0:
            return None
        k = end + 1
        while k < n and text[k] in " \t\n":
            k += 1
    if k < n and text[k] == ")":
        return dest, k + 1
    return None


def _unescape(target: str) -> str:
    """The address a browser would follow: Markdown's backslash escapes, then HTML's entities, undone."""
    return html.unescape(re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", target)).strip()


def _label(text: str) -> str:
    return " ".join(text.lower().split())


class _Inline:
    """One block of repository Markdown outside code fences, rewritten for the site."""

    def __init__(self, here: str, pages: dict[str, str], references: dict[str, str]):
        self.here, self.pages, self.references = here, pages, references

    def target(self, raw: str, image: bool) -> str | None:
        """A checked link target: an http(s) address, a site page or an anchor; None for anything else."""
        url = _unescape(raw)
        web = href(url)
        if web is not None:
            return web
        if _SCHEME.match(re.sub(r"[\t\n\r]", "", url).lstrip("\x00- ")):
            return None  # javascript:, data:, vbscript:, file:, mailto:, ...
        path, _, fragment = url.partition("#")
        if not path:
            return f"#{anchor(fragment)}" if fragment and not image else None
        page = self.pages.get(path.removeprefix("./"))
        return rel(self.here, page, fragment or None) if page is not None and not image else None

    def link(self, text: str, i: int) -> tuple[str, int] | None:
        """The link or image starting at i (at `[` or `![`) rewritten, and where it ends; None if none."""
        image = text[i] == "!"
        opening = i + image
        close = _bracket_end(text, opening)
        if close is None:
            return None
        inner = text[opening + 1:close]
        after = close + 1
        raw: str | None = None
        if text.startswith("(", after):
            found = _destination(text, after + 1)
            if found is None:
                return None
            raw, after = found
        else:
            label = inner
            if text.startswith("[", after):
                label_end = text.find("]", after)
                if label_end < 0 or "[" in text[after + 1:label_end]:
                    return None
                label, after = (text[after + 1:label_end] or inner), label_end + 1
            raw = self.references.get(_label(label))
            if raw is None:
                return None
        words = self.render(inner)
        target = self.target(raw, image)
        if target is None:
            shown = f"{words} ({_code(raw)})" if words.strip() else _code(raw)
            return shown, after
        return f"{'!' if image else ''}[{words}]({target})", after

    def render(self, text: str) -> str:
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            c = text[i]
            if c == "\\":
                following = text[i + 1:i + 2]
                if following in _ACTIVE:
                    out.append(_entity(following))
                    i += 2
                elif following and not following.isalnum() and not following.isspace() and following.isascii():
                    out.append(c + following)
                    i += 2
                else:
                    out.append(_entity(c))
                    i += 1
            elif c == "`":
                run = _run(text, i, "`")
                close = _closing_backticks(text, i + run, run)
                if close is None:
                    out.append(_entity("`") * run)
                    i += run
                else:
                    out.append(_code(text[i + run:close]))
                    i = close + run
            elif c == "[" or (c == "!" and text.startswith("[", i + 1)):
                found = self.link(text, i)
                if found is None:
                    out.append("!" if c == "!" else _entity("["))
                    i += 1
                else:
                    out.append(found[0])
                    i = found[1]
            elif c == "<" and (auto := _AUTOLINK.match(text, i)) and (target := href(_unescape(auto[1]))):
                out.append(f"[{esc_spaced(auto[1])}]({target})")
                i = auto.end()
            elif c == "<" and text.startswith("<!--", i) and (end := text.find("-->", i + 4)) >= 0:
                i = end + 3  # a comment is for the file's readers, not the site's
            elif c in _ACTIVE:
                out.append(_entity(c))
                i += 1
            else:
                out.append(c)
                i += 1
        return "".join(out)


def _fence(opening: str, body: list[str], fence_char: str) -> list[str]:
    """A fenced code block written out whole: the same indentation on every line, a language token and
    nothing else after the opening fence, a fence longer than any run inside, and always closed, so
    pymdownx.superfences opens and closes it exactly where `lines` does."""
    ws = opening[:len(opening) - len(opening.lstrip(" "))]
    rest = opening.lstrip(" ").lstrip(fence_char)
    lang = m[1] if (m := _LANG.match(rest)) else ""
    longest = max((_run(line.lstrip(" >"), 0, "`") for line in body), default=0)
    fence = "`" * max(3, longest + 1)
    lines_out = [ws + fence + lang]
    for line in body:
        if not line.strip():
            lines_out.append("")
        elif len(line) - len(line.lstrip(" ")) < len(ws):
            lines_out.append(ws + line.lstrip(" "))  # less indented than its fence: superfences would drop the fence
        else:
            lines_out.append(line)
    return [*lines_out, ws + fence]


def normalise(markdown: str) -> str:
    """Lines as Python-Markdown splits them (at \\n only: other separators become spaces), tabs expanded
    as it expands them, no control character."""
    return _SEPARATORS.sub(" ", markdown.replace("\r\n", "\n").replace("\r", "\n")).expandtabs(4)


def sanitise(markdown: str, here: str, pages: dict[str, str]) -> str:
    """Repository Markdown as the site may show it (see the note above `_ACTIVE`)."""
    text = normalise(markdown)
    blocks: list[tuple[bool, list[str]]] = []  # (fenced, lines); a fenced block keeps its opening line first
    for line, role in _roles(text):
        if role == "open":
            blocks.append((True, [line]))
        elif role == "code":
            blocks[-1][1].append(line)
        elif role == "text":
            if not blocks or blocks[-1][0]:
                blocks.append((False, []))
            blocks[-1][1].append(line)
        else:  # the closing fence: _fence writes it again
            blocks.append((False, []))
    references: dict[str, str] = {}
    for fenced, block in blocks:
        if not fenced:
            kept = []
            for line in block:
                if definition := _DEFINITION.match(line):
                    references.setdefault(_label(definition[1]), definition[2])
                else:
                    kept.append(line)
            block[:] = kept
    inline = _Inline(here, pages, references)
    out: list[str] = []
    for fenced, block in blocks:
        if fenced:
            out += _fence(block[0], block[1:], block[0].lstrip(" ")[0])
        elif block:
            out += [_QUOTED_FENCE.sub(lambda m: m[1] + _entity("~"), line)
                    for line in inline.render("\n".join(block)).split("\n")]
    return "\n".join(out)


def repository_markdown(markdown: str, here: str, pages: dict[str, str]) -> str:
    """Markdown written for the repository, placed on page `here` and sanitised: links to repository files
    that have a page on the site point at it; links to other repository files become plain text (the
    site has no copy of them); http(s) links and images stay, any other link or image becomes text."""
    return sanitise(list_indents(normalise(markdown)), here, pages)


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
    return _trimmed(intro), {k: _trimmed(v) for k, v in found.items()}


def _trimmed(block: list[str]) -> str:
    """The lines without blank ones at either end; the first keeps its indentation (a fence's counts)."""
    start = next((i for i, line in enumerate(block) if line.strip()), len(block))
    return "\n".join(block[start:]).rstrip()


def demote(markdown: str) -> str:
    """Headings one level down, so an included file sits under a page's title."""
    return "\n".join("#" + line if not fenced and line.startswith("#") else line for line, fenced in lines(markdown))


def indent(markdown: str, spaces: int = 4) -> str:
    """Every non-blank line indented (the body of a collapsible block)."""
    pad = " " * spaces
    return "\n".join(pad + line if line.strip() else "" for line in markdown.splitlines())
