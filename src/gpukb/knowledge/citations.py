"""Cited claims: the claims a trace step rests on, as the Answer quotes them.

A rule's citations are computed once, when the knowledge base loads (CompiledRule.citations); the
steps that are not rules (the planner's) cite through `cited`, cached once per knowledge base.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol
from weakref import WeakKeyDictionary

if TYPE_CHECKING:
    from .schema import Claim


class HasClaims(Protocol):
    """What `cited` reads of a knowledge base (gpukb.knowledge.kb imports this module through the rules, so it is
    named by what it has, not imported)."""

    @property
    def claims(self) -> Mapping[str, Claim]: ...


# A cited claim is frozen: the same citations are shared by every firing of a rule, in every ask.
@dataclass(frozen=True, slots=True)
class CitedClaim:
    id: str
    section: str
    quote_zh: str
    text_en: str
    verdict: str


def cite(claims: Mapping[str, Claim], claim_ids: Iterable[str]) -> tuple[CitedClaim, ...]:
    """The claims of these ids (each in the claims table) as a step quotes them."""
    return tuple(CitedClaim(id=c, section=claims[c].section, quote_zh=claims[c].quote_zh,
                            text_en=claims[c].text_en, verdict=claims[c].verdict) for c in claim_ids)


# knowledge base -> claim ids -> citations; weak, so a knowledge base no one holds is not kept alive
_BY_KB: WeakKeyDictionary[HasClaims, dict[tuple[str, ...], tuple[CitedClaim, ...]]] = WeakKeyDictionary()


def cited(kb: HasClaims, claim_ids: Iterable[str]) -> tuple[CitedClaim, ...]:
    """cite() for steps that are not compiled rules, computed once per knowledge base and claim list."""
    key = tuple(claim_ids)
    known = _BY_KB.get(kb)
    if known is None:
        known = _BY_KB.setdefault(kb, {})
    if key not in known:
        known[key] = cite(kb.claims, key)
    return known[key]
