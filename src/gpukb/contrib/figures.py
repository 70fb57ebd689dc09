"""gpukb's own figures quoted in claims' reasons, computed again whenever a reason is shown.

A claim's reason that quotes gpukb ("Llama-2-13B LoRA on an H100: 61.1 of 79.0 GB, 8,212 tokens/s")
would drift from the answers it quotes as the knowledge base changes. Instead the claim names each
figure's ask (`figures:` in kb/claims) and its reason says `{lora13b.per_gpu_bytes|GB}`: the site,
`gpukb explain` and lint render the reason from today's answers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..core.errors import WorkloadError
from ..core.fmt import Lang
from ..estimate.pipeline import ask
from ..knowledge.sandbox import sandboxed
from ..language import template

if TYPE_CHECKING:
    from ..knowledge.kb import KnowledgeBase
    from ..knowledge.schema import Claim, Figure

# the option's fields a reason may quote, beside memory_<part> of the replica and the rule step's values
OPTION_FIELDS = ("count", "per_gpu_bytes", "usable_bytes", "tokens_per_s", "time_to_train_s", "efficiency", "mfu", "ttft_s",
                 "tpot_s", "usd_per_hour", "cost_usd", "usd_per_million_tokens", "max_concurrency")


# the most figures one claims file, and the whole knowledge base, may ask for: each is an ask in every lint,
# `gpukb explain` and site build (kb/policies/policies.yaml says why these values)
PER_FILE_POLICY = "claim-figures-per-file"
TOTAL_POLICY = "claim-figures-total"


class FigureError(ValueError):
    """A figure that cannot be computed: its ask fails, its GPU has no option, its rule did not fire."""


class FigureCapError(FigureError):
    """A figure past the caps of the policies PER_FILE_POLICY and TOTAL_POLICY: never asked."""


def values(kb: KnowledgeBase, figure: Figure) -> dict[str, Any]:
    """The quotable values of one figure: its option's fields, the replica's memory, the rule step's values."""
    try:
        return _values(kb, figure)
    except FigureError:
        raise
    except WorkloadError as error:
        raise FigureError(f"its ask fails: {error}") from None
    except Exception as error:  # a contributor's figure is a located lint error wherever it fails, never a crash
        raise FigureError(f"its ask fails: {type(error).__name__}: {error}") from None


def _values(kb: KnowledgeBase, figure: Figure) -> dict[str, Any]:
    # only catalog models and config files in the checkout: no download, no file of the machine read
    answer = ask(kb, sandboxed(kb, figure.ask))
    options = [o for o in answer.options if figure.gpu in (None, o.gpu)]
    if not options:
        raise FigureError(f"the ask has no option on {figure.gpu or 'any GPU'}")
    option = options[0]
    out: dict[str, Any] = {name: getattr(option, name) for name in OPTION_FIELDS if getattr(option, name) is not None}
    out.update({f"memory_{part}": amount for part, amount in answer.memory.model_dump().items()})
    if figure.rule is not None:
        steps = [s for s in option.trace if s.rule.split("@")[0] == figure.rule]
        if not steps:
            raise FigureError(f"rule {figure.rule} did not fire for {option.gpu}")
        out.update({v["name"]: v["value"] for v in steps[-1].values if isinstance(v["value"], int | float)})
    return out


def reason(kb: KnowledgeBase, claim: Claim, lang: Lang = "en") -> str:
    """The claim's reason in `lang` with its figures filled in from today's answers."""
    text = (claim.reason_zh or claim.reason) if lang == "zh" else claim.reason
    if not claim.figures:
        return text
    try:
        template.placeholders(text)
        return template.render(text, _figures(kb, claim.id), lang)
    except template.TemplateError as error:
        raise FigureError(f"{claim.id}: {error}") from None


def shown(kb: KnowledgeBase, claim: Claim, lang: Lang = "en") -> str:
    """The reason as readers see it: with today's figures, or as written where they cannot be computed
    (lint reports why, F101); a page or `gpukb explain` never fails on a claim."""
    try:
        return reason(kb, claim, lang)
    except FigureError:
        return (claim.reason_zh or claim.reason) if lang == "zh" else claim.reason


_computed: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # (kb content hash, claim id) -> figures
_capped: dict[str, dict[tuple[str, str], str]] = {}  # kb content hash -> the figures past the caps


def over_caps(kb: KnowledgeBase) -> dict[tuple[str, str], str]:
    """(claim id, figure name) -> why, for every figure past the caps: a file's figures counted in the order
    they are written, files in the order of their names; the figures within the caps are computed."""
    if kb.content_hash not in _capped:
        per_file = kb.policy(PER_FILE_POLICY) if PER_FILE_POLICY in kb.policies else math.inf
        total = kb.policy(TOTAL_POLICY) if TOTAL_POLICY in kb.policies else math.inf
        placed = sorted((kb.locations.get(("claims", claim_id), ("", 0)), claim_id)
                        for claim_id, claim in kb.claims.items() if claim.figures)
        found: dict[tuple[str, str], str] = {}
        in_file: dict[str, int] = {}
        counted = 0
        for (file, _), claim_id in placed:
            for name in kb.claims[claim_id].figures:
                in_file[file] = in_file.get(file, 0) + 1
                if in_file[file] > per_file:
                    found[(claim_id, name)] = (f"{file} asks for more than {per_file:g} figures (policy "
                                               f"{PER_FILE_POLICY}): move the claim's figures to another file or "
                                               "quote fewer")
                elif counted >= total:
                    found[(claim_id, name)] = (f"the knowledge base asks for more than {total:g} figures (policy "
                                               f"{TOTAL_POLICY}): quote fewer")
                else:
                    counted += 1  # only the figures that are asked count towards the whole
        _capped.clear()  # one knowledge base at a time, as for the figures
        _capped[kb.content_hash] = found
    return _capped[kb.content_hash]


def _figures(kb: KnowledgeBase, claim_id: str) -> dict[str, dict[str, Any]]:
    """Every figure of one claim, computed once per knowledge base (both languages quote the same)."""
    key = (kb.content_hash, claim_id)
    if key not in _computed:
        if any(hash_ != kb.content_hash for hash_, _ in _computed):
            _computed.clear()  # one knowledge base at a time: a preview server rebuilds after every edit
        found: dict[str, dict[str, Any]] = {}
        capped = over_caps(kb)
        for name in kb.claims[claim_id].figures:
            if (claim_id, name) in capped:  # refused before any of the claim's figures is asked
                raise FigureCapError(f"{claim_id}: figure {name}: {capped[(claim_id, name)]}")
        for name, figure in kb.claims[claim_id].figures.items():
            try:
                found[name] = values(kb, figure)
            except FigureError as error:
                raise FigureError(f"{claim_id}: figure {name}: {error}") from None
        _computed[key] = found
    return _computed[key]
