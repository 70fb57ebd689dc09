"""Repository Markdown under attack: README.md, CHANGELOG.md and CONTRIBUTING.md are published as site
pages, and a pull request edits them. Planted markup must reach no page as anything a browser would run
or follow: each page is converted by the function that makes it, rendered by Python-Markdown with the
site's extensions, and read back as HTML (gpukb.site.safety, the check the build itself makes)."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpukb.site import pages as P
from gpukb.site.markdown import demote, indent, repository_markdown, sections
from gpukb.site.safety import unsafe_address, unsafe_html

markdown = pytest.importorskip("markdown", reason="Python-Markdown comes with the docs extra")
pytest.importorskip("pymdownx", reason="pymdown-extensions come with the docs extra")

REPO = Path(__file__).resolve().parents[2]


def _site_extensions() -> tuple[list[str], dict[str, dict[str, object]]]:
    """The Markdown extensions of site/mkdocs.yml, with their settings."""
    names, settings_ = [], {}
    for entry in yaml.safe_load((REPO / "site" / "mkdocs.yml").read_text(encoding="utf-8"))["markdown_extensions"]:
        name, config = next(iter(entry.items())) if isinstance(entry, dict) else (entry, None)
        names.append(name)
        if config:
            settings_[name] = config
    return names, settings_


EXTENSIONS, EXTENSION_CONFIGS = _site_extensions()

# Each plants script, an event handler or a non-web address a different way.
ATTACKS = [
    "<script>alert('md-xss')</script>",
    "<img src=x onerror=alert(1)>",
    '<a href="javascript:alert(1)">raw link</a>',
    "<iframe src=\"https://evil.example\"></iframe>",
    "<svg><script>alert(1)</script></svg>",
    '<div markdown="1" onclick="alert(1)">in html</div>',
    "<!--><script>alert(5)</script>-->",
    "[click](javascript:alert(1))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[vb](vbscript:msgbox(1)) [file](file:///etc/passwd)",
    "<javascript:alert(1)>",
    "[reference link][evil] and [evil]\n\n[evil]: javascript:alert(1)\n",
    "[entity](&#106;avascript:alert(1)) [hex](&#x6a;avascript:alert(1)) [named](javascript&colon;alert(1))",
    "[tab](java\tscript:alert(1)) [spaced]( javascript:alert(1)) [angle](<javascript:alert(1)>)",
    "[escaped](java\\script:alert(1)) [upper](JAVASCRIPT:alert(1))",
    "![image](javascript:alert(1)) ![svg](data:image/svg+xml,<svg onload=alert(1)>)",
    "## A heading {onclick=alert(1)}",
    "text {: onmouseover=alert(1) }",
    "  ```\n<script>alert(2)</script>\n  ```",
    "> ~~~\n```\n<script>alert(3)</script>\n```",
    "```python {onclick=alert(1)}\nx = 1\n```",
    "a\u2028<script>alert(6)</script>\x85<b onclick=alert(7)>b</b>",
    "- item\n\n      ```\n<script>alert(8)</script>\n      ```",
]
UNCLOSED = "```\n<script>alert(4)</script>\n"  # last: it turns the rest of a file into code


def _html(page_markdown: str) -> str:
    return markdown.Markdown(extensions=EXTENSIONS, extension_configs=EXTENSION_CONFIGS).convert(page_markdown)


class _Addresses(HTMLParser):
    """Every element and every href/src a browser would see (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.addresses: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.addresses += [value or "" for name, value in attrs if name in ("href", "src")]


def _assert_safe(page_markdown: str) -> None:
    rendered = _html(page_markdown)
    assert unsafe_html(rendered) == [], unsafe_html(rendered)
    seen = _Addresses()
    seen.feed(rendered)
    assert not seen.tags & {"script", "iframe", "svg", "b"}, seen.tags
    for address in seen.addresses:
        assert re.match(r"^(https?://|#|[A-Za-z0-9_./-]+(#[A-Za-z0-9_.-]*)?$)", address), address  # web or site
        assert not unsafe_address(address), address


def _planted(name: str) -> str:
    """A copy of the repository's file with every attack at its top, in its middle and at its end."""
    text = (REPO / name).read_text(encoding="utf-8")
    attacks = "\n\n".join(ATTACKS)
    heading = text.index("\n## ")
    middle = text.index("\n## ", len(text) // 2)
    return (f"{text[:heading]}\n\n{attacks}\n{text[heading:middle]}\n\n{attacks}\n{text[middle:]}\n\n{attacks}\n\n"
            f"{UNCLOSED}")


def test_planted_readme_makes_a_safe_home_page(kb):
    readme = _planted("README.md")
    for section in ("## From Python", "## Quick start", "## Reading a trace", "## How an answer is built"):
        if section in readme:  # the sections the home page includes
            readme = readme.replace(section + "\n", f"{section}\n\n" + "\n\n".join(ATTACKS) + "\n", 1)
    for lang in ("en", "zh"):
        page = P.home(P.Context.build(kb, [], lang), readme)
        assert "alert('md-xss')" in page or lang == "zh"  # shown as text (the Chinese page has no README part)
        _assert_safe(page)


def test_planted_changelog_makes_a_safe_changelog_page(kb):
    for lang in ("en", "zh"):
        page = P.changelog(P.Context.build(kb, [], lang), "0.0.0", _planted("CHANGELOG.md"))
        assert "alert('md-xss')" in page
        _assert_safe(page)


def test_planted_contributing_makes_a_safe_guide():
    for zh in (False, True):
        page = P.repository_guide(_planted("CONTRIBUTING.md"), P.REPOSITORY_PAGES, zh)
        assert "alert('md-xss')" in page
        _assert_safe(page)


def test_links_that_stay_and_links_that_become_text():
    out = repository_markdown("[a](https://example.com/x_(y)) [b](#Some-Heading) [c](CONTRIBUTING.md#versions) "
                              "[d](javascript:alert(1)) [e][r] ![f](https://img.example/f.png) ![g](docs/g.png)\n\n"
                              "[r]: http://example.org/r", P.CHANGELOG, P.REPOSITORY_PAGES)
    assert "[a](https://example.com/x_%28y%29)" in out and "[b](#Some-Heading)" in out
    assert "[c](contributing/repository.md#versions)" in out and "[e](http://example.org/r)" in out
    assert "d (`javascript:alert(1)`)" in out and "![f](https://img.example/f.png)" in out
    assert "g (`docs/g.png`)" in out and "[r]:" not in out


def test_fences_are_written_out_whole():
    """However a fence is written, it opens and closes where gpukb reads it: its code stays code."""
    for source in ("  ```\nx < y\n  ```", "```js {onclick=x}\nx < y\n```", "~~~~\nx < y\n````\n~~~~",
                   "```\nx < y"):
        rendered = _html(repository_markdown(source, P.CHANGELOG, P.REPOSITORY_PAGES))
        code = re.findall(r"<pre>(.*?)</pre>", rendered, re.S)
        assert len(code) == 1 and "x < y" in html.unescape(re.sub(r"<[^>]+>", "", code[0])), rendered
        assert "onclick" not in rendered


# Markdown structure and hostile pieces, in any order: whatever Python-Markdown makes of the mix, nothing runs.
PIECES = st.sampled_from([*ATTACKS, UNCLOSED, "```", "~~~", "`", "``", "[", "]", "(", ")", "<", ">", "&", "\\", "!",
                          "{", "}", "#", ":", "\n", "\n\n", "    ", "> ", "- ", "1. ", "|", "*", "_", "javascript:",
                          "data:", "&#106;", "&colon;", "<b>", "</b>", "https://ok.example/", "#anchor", "README.md",
                          "x", " "])


@settings(max_examples=250, deadline=None)
@given(st.lists(PIECES, max_size=30), st.sampled_from(["as is", "folded", "demoted", "in sections"]))
def test_any_mix_of_markup_renders_safely(pieces, placed):
    """Also as the pages place it: inside a collapsible block, headings demoted, cut into sections."""
    out = repository_markdown("".join(pieces), P.HOME, P.REPOSITORY_PAGES)
    if placed == "folded":
        out = '??? note "The guide"\n\n' + indent(out)
    elif placed == "demoted":
        out = demote(out)
    elif placed == "in sections":
        intro, found = sections(out)
        out = "\n\n".join([intro, *(f"## {heading}\n\n{body}" for heading, body in found.items())])
    _assert_safe(out)


def test_the_safety_check_finds_what_it_should():
    assert unsafe_html('<a href="java&#x09;script:alert(1)">x</a>') and unsafe_html("<img src=x onerror=alert(1)>")
    assert unsafe_html("<svg><a xlink:href='data:text/html,x'>y</a></svg>") and unsafe_html("<script></script>")
    assert unsafe_html('<span style="background: url(javascript:x)">') and unsafe_html('<img srcset="a.png, data:x 2x">')
    assert unsafe_html('<p><a href="../x/#y">a</a> <a href="https://x">b</a> <span style="width: 3%">c</span></p>') == []
