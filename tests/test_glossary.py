"""Every Chinese text of gpukb uses the glossary's terms (kb/glossary): none of the words it avoids.

The article's own sentences (claims' quote_zh, rhetoric) are quoted verbatim and not checked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import gpukb
from gpukb.core.words import TERMS, WORDS

REPO = Path(__file__).resolve().parents[1]
HAN = re.compile(r"[\u3400-\u9fff]")
VERBATIM = {"quote_zh", "sentence"}  # the article's words, as written


def _zh_strings(value: object, key: str = "") -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _zh_strings(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _zh_strings(v, key)
    elif isinstance(value, str) and key not in VERBATIM and HAN.search(value):
        yield value


def chinese_texts() -> Iterator[tuple[str, str]]:
    """(where, text) for every Chinese text gpukb writes: knowledge, rules, the program, hand-written pages."""
    for top in ("kb", "rules"):
        for path in sorted((REPO / top).rglob("*.yaml")):
            if path.parent.name in ("glossary", "rhetoric"):
                continue
            for text in _zh_strings(yaml.safe_load(path.read_text(encoding="utf-8"))):
                yield str(path.relative_to(REPO)), text
    for lang_words in (WORDS["zh"], TERMS["zh"]):
        for key, text in lang_words.items():
            yield f"words.py:{key}", text
    for path in sorted((REPO / "src" / "gpukb").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and HAN.search(node.value):
                yield f"{path.relative_to(REPO)}:{node.lineno}", node.value
    for path in sorted((REPO / "site" / "docs").rglob("*.zh.md")):
        yield str(path.relative_to(REPO)), path.read_text(encoding="utf-8")


_CODE = re.compile(r"`[^`]*`|\{[^{}]*\}|\b[\w-]+(?:[.@][\w-]+)+\b")  # code, placeholders, ids such as rec.x@3


def avoided_in(text: str, avoid: str) -> bool:
    """Whether `text` uses the avoided word: English words as whole words outside code, ids and placeholders."""
    plain = _CODE.sub(" ", text)
    if HAN.search(avoid):
        return avoid in plain
    return re.search(rf"(?<![\w/-]){re.escape(avoid)}(?![\w/-])", plain) is not None


@pytest.fixture(scope="module")
def glossary():
    return gpukb.load_kb(REPO).glossary


def test_the_glossary_names_one_term_per_concept(glossary):
    assert len(glossary) >= 15
    preferred = [t.zh for t in glossary.values()]
    assert len(set(preferred)) == len(preferred)
    for term in glossary.values():
        assert term.zh not in term.avoid_zh
        assert not any(avoided_in(term.zh, a) for a in term.avoid_zh), term.id
        for other in glossary.values():  # one concept's preferred word is never another's avoided one
            assert term.zh not in other.avoid_zh, (term.id, other.id)


def test_no_chinese_text_uses_an_avoided_term(glossary):
    found = [f"{where}: {avoid!r} (say {term.zh!r}: {term.id}) in {text[:80]!r}"
             for where, text in chinese_texts() for term in glossary.values() for avoid in term.avoid_zh
             if avoided_in(text, avoid)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize(("text", "avoid", "hit"), [
    ("受带宽限制的解码", "受带宽限制", True),
    ("每次 prefill 都", "prefill", True),
    ("{p.prefill_chunk} 个 token", "prefill", False),
    ("规则 rec.throughput.decode@10 给出", "decode", False),
    ("`decode` 字段", "decode", False),
    ("吞吐 1,514 tokens/s", "token/s", False),
    ("吞吐 1,514 token/s", "token/s", True),
])
def test_the_check_sees_words_not_ids(text, avoid, hit):
    assert avoided_in(text, avoid) is hit


def test_chinese_texts_are_found():
    where = {w.split(":")[0] for w, _ in chinese_texts()}
    assert {"kb/claims/article.yaml", "words.py"} <= where
    assert any(w.startswith("rules/") for w in where) and any(w.startswith("src/gpukb/site/") for w in where)
