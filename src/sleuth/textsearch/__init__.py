"""Stateless search over texts passed in (seed 003): TF-IDF ranking and fuzzy matching. Pure.

Nothing is stored: every call analyses the given texts with the shared text module
(:mod:`sleuth.text`) and forgets them.
"""

from sleuth.textsearch.bounds import (
    CANDIDATES_MAX_COUNT,
    CANDIDATES_MAX_TOTAL_CHARS,
    DOCUMENTS_MAX_COUNT,
    DOCUMENTS_MAX_TOTAL_CHARS,
    TOP_K_MAX,
    check_query,
    check_texts,
    check_threshold,
    check_top_k,
)
from sleuth.textsearch.fuzzy import FUZZY_THRESHOLD_DEFAULT, FuzzyMatch, FuzzyResult, fuzzy_match, similarity
from sleuth.textsearch.highlight import HIGHLIGHT_CONTEXT_CHARS, HIGHLIGHTS_MAX, SNIPPET_MAX_CHARS, highlights, prefix
from sleuth.textsearch.rank import TextHit, rank_texts

__all__ = [
    "CANDIDATES_MAX_COUNT",
    "CANDIDATES_MAX_TOTAL_CHARS",
    "DOCUMENTS_MAX_COUNT",
    "DOCUMENTS_MAX_TOTAL_CHARS",
    "FUZZY_THRESHOLD_DEFAULT",
    "HIGHLIGHTS_MAX",
    "HIGHLIGHT_CONTEXT_CHARS",
    "SNIPPET_MAX_CHARS",
    "TOP_K_MAX",
    "FuzzyMatch",
    "FuzzyResult",
    "TextHit",
    "check_query",
    "check_texts",
    "check_threshold",
    "check_top_k",
    "fuzzy_match",
    "highlights",
    "prefix",
    "rank_texts",
    "similarity",
]
