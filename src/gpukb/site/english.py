"""English left in Chinese pages: the passages of a generated Chinese page that a reader meets as English.

A Chinese engineer writes names (NVIDIA H100 SXM5 80GB, vLLM), ids (`h100-sxm-80gb`, rec.throughput@3),
units (GB, TFLOPS, tokens/s), acronyms (TP, KV, MFU) and the titles of cited works in their own spelling;
anything else in Latin letters is a sentence, a phrase or a word the page forgot to translate. A passage
here is a stretch of text between Chinese characters (or full-width punctuation) that holds at least one
lower-case English word outside code, links' targets, ids, names and the allowed words below.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from dataclasses import dataclass

_FENCE = re.compile(r"^ *(`{3,}|~{3,}).*?^ *\1", re.M | re.S)
_CODE = re.compile(r"(`+).*?\1", re.S)
_ELEMENT = re.compile(r"<(code|pre|svg|kbd)\b[^>]*>.*?</\1>", re.S | re.I)
# an element marked as English (a cited quote, the English of a bilingual block) is English by design
_MARKED = re.compile(r"<(\w+)\b[^>]*\blang=\"en\"[^>]*>", re.I)
_TAG = re.compile(r"<[^>]*>")
_TARGET = re.compile(r"\]\([^)]*\)")
_ATTRIBUTES = re.compile(r"\{[^{}]*\}")  # attribute lists, and a template's placeholders
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.I)
# ids and file names: letters and digits joined by - _ . @ / (h100-sxm-80gb, rec.x@3, kb/gpus, config.json)
# a command line as the reader types it: a flag, or a gpukb command
_FLAG = re.compile(r"(?<![\w-])--?[a-z][a-z0-9-]*|\bgpukb [a-z]+\b")
_SLUG = re.compile(r"(?<![\w])[A-Za-z0-9]+(?:[-_.@/+][A-Za-z0-9]+)+")
# what separates passages: Chinese characters, full-width punctuation and the marks Chinese text uses
_CHINESE = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef“”‘’…—·、]+")
_WORD = re.compile(r"(?<![\w^])[A-Za-z][A-Za-z']*")  # not the variables of 5as^2b or 128k

# Lower-case words a Chinese engineer writes as they are: units, and the spelling of a few libraries and
# variables that are lower-case by name (the names of entries are added by the caller)
ALLOWED = frozenset("""
    b kb mb gb tb pb kib mib gib tib bytes s ms us ns h w kw kwh mwh x e t tokens token flop flops tflops pflops
    gbps gbit gt gbe bf fp int nf mxfp tp pp dp ep cp vllm sglang fsdp cuda cudnn nccl pytorch torch torchtune torchtitan npu
    deepspeed megatron unsloth llama cpp hf jieba gpukb pip kg co verl
    roofline softmax goodput logit logits gco dropout torchao sha xformers
""".split())  # noqa: SIM905 (a word list reads best as words)


@dataclass(frozen=True)
class Passage:
    page: str
    text: str

    def __str__(self) -> str:
        return f"{self.page}: {self.text[:160]!r}"


def _unmarked(text: str) -> str:
    """The text without its elements marked lang="en", nested elements of the same tag and all."""
    while (start := _MARKED.search(text)) is not None:
        tag, depth, at = start[1], 1, start.end()
        tags = re.compile(rf"<(/?){tag}\b[^>]*>", re.I)
        while depth and (found := tags.search(text, at)) is not None:
            depth += -1 if found[1] else 1
            at = found.end()
        text = text[:start.start()] + " " + text[at:]
    return text


_FRONT_MATTER = re.compile(r"\A---\n.*?\n---\n", re.S)


def _prose(markdown: str) -> str:
    """What a reader reads: the page's front matter (settings for the build), code, markup, link targets and
    addresses left out, entities decoded."""
    text = _FENCE.sub(" ", _FRONT_MATTER.sub("", markdown, count=1))
    text = _ELEMENT.sub(" ", text)
    text = _unmarked(text)
    text = _CODE.sub(" ", text)
    text = _TARGET.sub("] ", text)
    text = _TAG.sub(" ", text)
    text = html.unescape(text)  # escaped braces are a template's placeholders
    return _URL.sub(" ", _ATTRIBUTES.sub(" ", text))


def english_passages(page: str, markdown: str, names: Iterable[str] = ()) -> list[Passage]:
    """The English passages of one Chinese page; `names` (entries' names, cited titles, ids) are allowed."""
    found = []
    ordered = sorted({" ".join(_URL.sub(" ", html.unescape(n)).split()) for n in names if n.strip()}, key=len, reverse=True)
    named = re.compile("(?<![\\w-])(?:" + "|".join(map(re.escape, ordered)) + ")(?![\\w-])") if ordered else None
    for line in _prose(markdown).splitlines():
        line = " ".join(line.split())
        if named is not None:
            line = named.sub(" ", line)
        for passage in _CHINESE.split(_SLUG.sub(" ", _FLAG.sub(" ", line))):
            words = [w for w in _WORD.findall(passage) if len(w) > 1]  # a lone letter is a variable: a, n, x
            if any(w[0].islower() and w.lower().strip("'") not in ALLOWED for w in words):
                found.append(Passage(page, " ".join(passage.split())))
    return found


def site_names(kb: object) -> set[str]:
    """What a Chinese page may spell in English: every entry's id and name, cited titles and their publishers,
    cloud instances as their providers name them."""
    names: set[str] = set()
    for kind in ("gpus", "models", "systems", "interconnects", "frameworks", "dtypes", "optimizers", "sources",
                 "claims", "rules", "policies", "measurements", "glossary"):
        for entry_id, entry in getattr(kb, kind, {}).items():
            names.add(entry_id)
            names.update(str(getattr(entry, attr, "") or "") for attr in ("name", "publisher", "family", "en"))
            if kind in ("sources", "measurements"):  # a cited work's title; a published run as it is named
                names.add(str(entry.title))
            for price in getattr(entry, "cloud_prices", None) or ():
                names.add(str(price.instance))
    return {n for n in names if n.strip()}
