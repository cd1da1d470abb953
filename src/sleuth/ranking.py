"""What a search decides after fusion: which results are only meaning matches. Pure functions.

A document that no lexical lane found is one only the vector lane put there: it holds no word of
the query (no stem, no identifier, no phrase), or holds them too weakly to be among the lexical
lanes' top blocks (each lane returns a bounded depth), or no lexical lane ran (``--lanes vector``).
When its similarity to the query is strong it is a real paraphrase match and stays, marked
``semantic_only`` so that the reader knows no word match put it there. When no word of the query
occurs in the searched documents and its similarity is weak, it is noise (every block has a nearest
neighbour: a made-up word still lands near some page at cosine 0.3-0.45 with all-MiniLM-L6-v2) and
is dropped; such a query says so (:func:`semantic_notice`).

The search pipeline (:mod:`sleuth.pipeline.fuse`) calls :func:`judge_semantic_only` on every
question's fused documents; the lane names it fuses may carry a suffix (``vector#1`` is the vector
lane's list of a query variant). Which lanes match by meaning and which by words comes from the lane
registry (``LaneSpec.matches``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

from sleuth.fusion import FusedDocument
from sleuth.lanes import registry
from sleuth.text import analyze

if TYPE_CHECKING:
    from sleuth.types import RankedList

#: When no word of the query occurs in the searched documents, a document found by the semantic
#: lanes alone is kept only when its best block's cosine with the query is at least this (the made-up
#: word of issue 14 scored 0.41 on a real vault; the vector lane returns nothing below 0.3).
SEMANTIC_ONLY_MIN_SIMILARITY = 0.5


def base_lane(name: str) -> str:
    """The lane a fused list belongs to: ``"vector#1"`` → ``"vector"``."""
    return name.partition("#")[0]


def semantic_lanes() -> frozenset[str]:
    """The lanes that match by meaning rather than by words."""
    return registry.lanes_matching("meaning")


def lexical_lanes() -> frozenset[str]:
    """The lanes that match by words or verbatim: a document one of them found holds a word of the query."""
    return registry.lanes_matching(*registry.LEXICAL_MATCHES)


def is_semantic_only(doc: FusedDocument, verbatim: frozenset[str] = frozenset(),
                     semantic: frozenset[str] | None = None) -> bool:
    """True when every lane that found ``doc`` is a semantic lane (and at least one did), and none
    of those lists is in ``verbatim`` (fused list names, ``vector#1``, whose blocks all hold the
    query's quoted phrases: the semantic lanes search only such blocks when the query has some).
    ``semantic``: :func:`semantic_lanes`, when the caller has it already."""
    if semantic is None:
        semantic = semantic_lanes()
    return (bool(doc.trace) and all(t.lane.partition("#")[0] in semantic for t in doc.trace)
            and not any(t.lane in verbatim for t in doc.trace))


def judge_semantic_only(fused: Sequence[FusedDocument], drop_weak: bool,
                        min_similarity: float = SEMANTIC_ONLY_MIN_SIMILARITY,
                        verbatim: frozenset[str] = frozenset()) -> list[FusedDocument]:
    """``fused`` with each semantic-only document marked (``semantic_only=True``) and, when
    ``drop_weak``, the weak ones dropped: those whose best semantic lane score (cosine) is below
    ``min_similarity``. Order and every other field are kept. A document a list of ``verbatim``
    found (a semantic lane restricted to the blocks holding the query's quoted phrases) holds the
    phrases as written: it is neither marked nor dropped (:func:`is_semantic_only`).

    Callers drop weak ones when a lexical lane ran and found nothing (no word of the query occurs
    in the searched documents: what the vector lane returns then is its nearest noise, unless it is
    strong). When lexical lanes found documents, semantic-only ones rank among them and are marked,
    not dropped (dropping them below cosine 0.5 cost SciFact 0.02 Recall@100 for no nDCG@10;
    docs/EVAL.md). When no lexical lane ran (``--lanes vector``), meaning matches were asked for.

    Shapes: ``fused`` documents best first, as :func:`sleuth.fusion.fuse` returns them.
    """
    out: list[FusedDocument] = []
    semantic = semantic_lanes()
    for d in fused:
        if not is_semantic_only(d, verbatim, semantic):
            out.append(d if not d.semantic_only else dataclasses.replace(d, semantic_only=False))
            continue
        similarity = max(t.lane_score for t in d.trace)
        if drop_weak and similarity < min_similarity:
            continue
        out.append(d if d.semantic_only else dataclasses.replace(d, semantic_only=True))
    return out


def semantic_notice(lexical_ran: bool, lexical_found: bool, results: int, dropped: int,
                    phrases: bool = False, filtered: bool = False) -> str | None:
    """What a search says about word matches, or None.

    Args:
        lexical_ran: a lexical lane ran; lexical_found: one of them returned a block.
        results: results returned; dropped: weak semantic-only documents left out.
        phrases: the query holds quoted phrases (which the lexical lanes require verbatim).
        filtered: filters narrowed the searched documents.
    """
    if not lexical_ran or lexical_found:
        return None
    if phrases:
        holder = "no document the filters allow" if filtered else "no searched document"
        missing = f"{holder} holds the query's quoted phrase(s) as written"
    else:
        missing = "no word of the query occurs in " + (
            "the documents the filters allow" if filtered else "the searched documents")
    if results:
        return f"{missing}: every result is a semantic-only match (similar in meaning, no word in common)"
    weak = f"; {dropped} weakly similar document(s) left out" if dropped else ""
    return f"{missing}{weak}"


#: Query words an absent-words notice names (the others are counted), and the characters of each shown.
ABSENT_WORDS_LISTED_MAX = 3
ABSENT_WORD_MAX_CHARS = 40


def absent_words_notice(query: str, absent_terms: Collection[str]) -> str | None:
    """The notice naming the words of ``query`` that no indexed document holds, when the others
    matched (None when no word is absent): a word as written (quotes and edge punctuation
    stripped) is absent when it analyses to index terms that are all in ``absent_terms``. At most
    :data:`ABSENT_WORDS_LISTED_MAX` words are named, each cut to :data:`ABSENT_WORD_MAX_CHARS`
    characters, the rest counted: ``no indexed document holds the word(s) 'taxnomy'; the results
    match the other words``."""
    if not absent_terms:
        return None
    words: list[str] = []
    for raw in query.split():
        word = raw.strip("\"'“”‘’.,;:!?()[]{}")
        terms = analyze(word) if word else []
        if terms and all(t in absent_terms for t in terms) and word not in words:
            words.append(word)
    if not words:
        return None
    shown = ", ".join(repr(w if len(w) <= ABSENT_WORD_MAX_CHARS else w[:ABSENT_WORD_MAX_CHARS] + "…")
                      for w in words[:ABSENT_WORDS_LISTED_MAX])
    more = f" and {len(words) - ABSENT_WORDS_LISTED_MAX} more" if len(words) > ABSENT_WORDS_LISTED_MAX else ""
    return f"no indexed document holds the word(s) {shown}{more}; the results match the other words"


def lexical_state(lists: Sequence[RankedList]) -> tuple[bool, bool]:
    """``(a lane looking up the query's words ran, a lexical lane returned a block)`` of a search's
    lane lists (names may carry a ``#variant`` suffix; the exact lane looks up only phrases and
    identifiers, so it does not count as having looked for the words)."""
    words, lexical = registry.lanes_matching("words"), lexical_lanes()
    ran = any(base_lane(r.lane) in words for r in lists)
    return ran, any(r.block_ids for r in lists if base_lane(r.lane) in lexical)


def drop_weak_semantic(lists: Sequence[RankedList]) -> bool:
    """Whether weak semantic-only documents are dropped: a lexical lane ran and found nothing."""
    lexical = lexical_lanes()
    return any(base_lane(r.lane) in lexical for r in lists) and not lexical_state(lists)[1]
