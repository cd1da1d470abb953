"""What a search decides after fusion: which results are only meaning matches. Pure functions.

A document that no lexical lane found holds no word of the query (no stem, no identifier, no
phrase); only the vector lane put it there. When its similarity to the query is strong it is a
real paraphrase match and stays, marked ``semantic_only`` so that the reader knows no word
matched. When no word of the query occurs in the searched documents and its similarity is weak, it
is noise (every block has a nearest neighbour: a made-up word still lands near some page at cosine
0.3-0.45 with all-MiniLM-L6-v2) and is dropped; such a query says so (:func:`semantic_notice`).

Both search paths (``Engine.search`` and ``project_memory_search``) call :func:`judge_semantic_only`
on their fused documents; the lane names they fuse may carry a suffix (``vector#1`` is the vector
lane's list of a query variant).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from sleuth.fusion import FusedDocument, fuse

if TYPE_CHECKING:
    from sleuth.config import Config
    from sleuth.types import RankedList

#: Lanes that match by meaning rather than by words.
SEMANTIC_LANES = frozenset({"vector"})
#: Lanes that match by words: a document one of them found holds a word of the query.
LEXICAL_LANES = frozenset({"bm25", "tfidf", "index", "exact"})
#: When no word of the query occurs in the searched documents, a document found by the semantic
#: lanes alone is kept only when its best block's cosine with the query is at least this (the made-up
#: word of issue 14 scored 0.41 on a real vault; the vector lane returns nothing below 0.3).
SEMANTIC_ONLY_MIN_SIMILARITY = 0.5


def base_lane(name: str) -> str:
    """The lane a fused list belongs to: ``"vector#1"`` → ``"vector"``."""
    return name.partition("#")[0]


def is_semantic_only(doc: FusedDocument) -> bool:
    """True when every lane that found ``doc`` is a semantic lane (and at least one did)."""
    return bool(doc.trace) and all(base_lane(t.lane) in SEMANTIC_LANES for t in doc.trace)


def judge_semantic_only(fused: Sequence[FusedDocument], drop_weak: bool,
                        min_similarity: float = SEMANTIC_ONLY_MIN_SIMILARITY) -> list[FusedDocument]:
    """``fused`` with each semantic-only document marked (``semantic_only=True``) and, when
    ``drop_weak``, the weak ones dropped: those whose best semantic lane score (cosine) is below
    ``min_similarity``. Order and every other field are kept.

    Callers drop weak ones when a lexical lane ran and found nothing (no word of the query occurs
    in the searched documents: what the vector lane returns then is its nearest noise, unless it is
    strong). When lexical lanes found documents, semantic-only ones rank among them and are marked,
    not dropped (dropping them below cosine 0.5 cost SciFact 0.02 Recall@100 for no nDCG@10;
    docs/EVAL.md). When no lexical lane ran (``--lanes vector``), meaning matches were asked for.

    Shapes: ``fused`` documents best first, as :func:`sleuth.fusion.fuse` returns them.
    """
    out: list[FusedDocument] = []
    for d in fused:
        if not is_semantic_only(d):
            out.append(d if not d.semantic_only else dataclasses.replace(d, semantic_only=False))
            continue
        similarity = max(t.lane_score for t in d.trace)
        if drop_weak and similarity < min_similarity:
            continue
        out.append(d if d.semantic_only else dataclasses.replace(d, semantic_only=True))
    return out


def semantic_notice(lexical_ran: bool, lexical_found: bool, results: int, dropped: int) -> str | None:
    """What a search says about word matches, or None.

    Args:
        lexical_ran: a lexical lane ran; lexical_found: one of them returned a block.
        results: results returned; dropped: weak semantic-only documents left out.
    """
    if not lexical_ran or lexical_found:
        return None
    if results:
        return ("no word of the query occurs in the searched documents: every result is a semantic-only match "
                "(similar in meaning, no word in common)")
    weak = f"; {dropped} weakly similar document(s) left out" if dropped else ""
    return f"no word of the query occurs in the searched documents{weak}"


#: Lanes that look up the query's words (the exact lane looks up only phrases and identifiers).
WORD_LANES = frozenset({"bm25", "tfidf", "index"})


def lexical_state(lists: Sequence[RankedList]) -> tuple[bool, bool]:
    """``(a word lane ran, a lexical lane returned a block)`` of a search's lane lists (names may
    carry a ``#variant`` suffix)."""
    ran = any(base_lane(r.lane) in WORD_LANES for r in lists)
    return ran, any(r.block_ids for r in lists if base_lane(r.lane) in LEXICAL_LANES)


def rank(lists: Sequence[RankedList], doc_of: Callable[[str], str], cfg: Config,
         limit: int | None = None) -> tuple[list[FusedDocument], str | None]:
    """A search's ranking: ``lists`` fused as ``cfg`` says (:func:`sleuth.fusion.fuse`, a repeating
    lane counted once), semantic-only documents marked and the weak ones dropped
    (:func:`judge_semantic_only`), at most ``limit``; with the notice of :func:`semantic_notice`."""
    from sleuth.config import ALL_LANES, LANE_FAMILIES

    word_ran, lexical_found = lexical_state(lists)
    drop_weak = any(base_lane(r.lane) in LEXICAL_LANES for r in lists) and not lexical_found
    args = (lists, doc_of, cfg.fusion, cfg.fusion_weights(), cfg.rrf_k, LANE_FAMILIES, ALL_LANES)
    fused = fuse(*args, limit=limit)
    judged = judge_semantic_only(fused, drop_weak)
    if limit is not None and len(judged) < len(fused) == limit:
        # weak documents were dropped from a full page: the ones after it move up
        fused = fuse(*args)
        judged = judge_semantic_only(fused, drop_weak)[:limit]
    dropped = sum(1 for d in fused if is_semantic_only(d)) - sum(1 for d in judged if d.semantic_only)
    return judged, semantic_notice(word_ran, lexical_found, len(judged), max(dropped, 0))
