"""Fuzzy matching of one string against candidates (``search_fuzzy``). Pure.

Similarity = 1 - Levenshtein distance / length of the longer string (rapidfuzz's normalised
Levenshtein similarity), compared case-insensitively after NFC normalisation; 0.0 when either
string is empty. ``"pythn"`` vs ``"python"``: one insertion in six characters, 0.8333.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from pydantic import BaseModel, Field
from rapidfuzz.distance import Levenshtein

#: Minimum similarity a candidate needs when the caller gives no threshold.
FUZZY_THRESHOLD_DEFAULT = 0.6
#: Similarity scores are rounded to this many decimal places (after the threshold is applied).
FUZZY_SCORE_DECIMALS = 4


class FuzzyMatch(BaseModel):
    """A candidate at or above the threshold."""

    candidate: str = Field(description="The candidate string, as given.")
    score: float = Field(description="Normalised Levenshtein similarity with the query, in [0, 1].")


class FuzzyResult(BaseModel):
    """Every candidate at or above the threshold, best first; ``best_match`` is the first, or None."""

    best_match: str | None = Field(description="The most similar candidate at or above the threshold.")
    matches: list[FuzzyMatch] = Field(description="Candidates at or above the threshold, by score, then position.")


def _norm(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower()


def similarity(a: str, b: str) -> float:
    """Case-insensitive normalised Levenshtein similarity of ``a`` and ``b`` in [0, 1] (unrounded)."""
    if not a or not b:
        return 0.0
    return float(Levenshtein.normalized_similarity(_norm(a), _norm(b)))


def fuzzy_match(query: str, candidates: Sequence[str], threshold: float = FUZZY_THRESHOLD_DEFAULT) -> FuzzyResult:
    """Candidates whose :func:`similarity` with ``query`` is at least ``threshold``.

    Ordered by similarity (descending), then by position among ``candidates``; ties keep input order.
    """
    scored = [(similarity(query, c), i, c) for i, c in enumerate(candidates)]
    kept = sorted(((s, i, c) for s, i, c in scored if s >= threshold), key=lambda x: (-x[0], x[1]))
    matches = [FuzzyMatch(candidate=c, score=round(s, FUZZY_SCORE_DECIMALS)) for s, _, c in kept]
    return FuzzyResult(best_match=matches[0].candidate if matches else None, matches=matches)
