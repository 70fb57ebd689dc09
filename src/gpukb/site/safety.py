"""The last check on every page's HTML before MkDocs writes it: nothing in it can run script.

The generator escapes knowledge-base text and rebuilds repository Markdown (site.text, site.markdown);
this check does not trust either. It reads the HTML Python-Markdown made of a page, as a browser would
(entities decoded), and names every element, attribute or address that could run script or leave the
site for anything but a web page: site/hooks.py fails the build on any, naming the page.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

# Elements that run, embed or redirect: none belongs in a page's content.
FORBIDDEN_ELEMENTS = frozenset({
    "script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "form", "meta", "link", "style",
    "template", "portal", "noscript", "foreignobject", "animate", "set", "animatetransform", "animatemotion", "handler",
})
# Attributes holding an address the browser follows or loads.
URL_ATTRIBUTES = frozenset({"href", "src", "xlink:href", "action", "formaction", "poster", "background", "cite", "data",
                            "srcset", "ping", "lowsrc", "dynsrc", "longdesc", "manifest", "codebase", "archive"})
FORBIDDEN_ATTRIBUTES = frozenset({"srcdoc", "http-equiv"})
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f]+")  # what a browser drops from an address before reading its scheme
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
_STYLE = re.compile(r"url\s*\(|expression\s*\(|javascript:|@import|behaviou?r\s*:", re.IGNORECASE)


def unsafe_address(value: str) -> bool:
    """Whether an address has a scheme other than http(s): javascript:, data:, vbscript:, file:, ..."""
    scheme = _SCHEME.match(_IGNORED.sub("", value))
    return scheme is not None and scheme[1].lower() not in ("http", "https")


def _addresses(name: str, value: str) -> list[str]:
    """The addresses an attribute holds: srcset lists several, each before its width or density."""
    if name != "srcset":
        return [value]
    return [part.split()[0] for part in value.split(",") if part.split()]


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag.lower() in FORBIDDEN_ELEMENTS:
            self.found.append(f"a <{tag}> element")
        for name, value in attrs:
            name, value = name.lower(), value or ""
            if name.startswith("on") or name in FORBIDDEN_ATTRIBUTES:
                self.found.append(f"a {name} attribute on <{tag}>")
            elif name in URL_ATTRIBUTES and any(unsafe_address(address) for address in _addresses(name, value)):
                self.found.append(f"{name}={value[:60]!r} on <{tag}>")
            elif name == "style" and _STYLE.search(value):
                self.found.append(f"style={value[:60]!r} on <{tag}>")

    handle_startendtag = handle_starttag


def unsafe_html(html: str) -> list[str]:
    """Everything in `html` that could run script or load a non-web address, in words; [] when none."""
    checker = _Checker()
    checker.feed(html)
    checker.close()
    return checker.found
