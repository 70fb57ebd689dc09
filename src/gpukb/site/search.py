"""What the site's search indexes: the Chinese words of a built index, for the browser to cut queries the way
the index was cut, and pages without the table headers that would fill result snippets.

Material's search plugin cuts Chinese text into words with jieba at build time and marks the cuts
with zero-width spaces; the browser builds its index by splitting at the configured separator. A
query has no such marks, so site/docs/javascripts/search-zh.js cuts it with exactly these words.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

_HAN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_TAG = re.compile(r"<[^>]*>")


def chinese_words(index: Path) -> str:
    """The index's words that hold Chinese characters, as a sorted JSON list (lower-cased, as indexed)."""
    data = json.loads(index.read_text(encoding="utf-8"))
    separator = re.compile(data["config"]["separator"])
    words = {word for doc in data["docs"] for field in ("title", "text")
             for word in separator.split(_text(doc.get(field))) if _HAN.search(word)}
    return json.dumps(sorted(words), ensure_ascii=False, separators=(",", ":"))


_THEAD = re.compile(r"<thead(?=[\s>])")


def without_table_headers(page_html: str) -> str:
    """A page's HTML with every table's header row kept out of the search index (Material skips an element marked
    data-search-exclude): a result's snippet then starts with what the page says, not "Property Value Key"."""
    return _THEAD.sub("<thead data-search-exclude", page_html)


def _text(value: object) -> str:
    """A field's words as the browser's tokenizer sees them: markup dropped, entities decoded, lower case."""
    return html.unescape(_TAG.sub(" ", str(value or ""))).lower()
