"""What a search decides after fusion: which results are only meaning matches. Pure functions.

A document that no lexical lane found holds no word of the query (no stem, no identifier, no
phrase); only the vector lane put it there. When its similarity to the query is strong it is a
real paraphrase match and stays, marked ``semantic_only`` so that the reader knows no word
matched. When it is weak it is noise (every block has a nearest neighbour: a made-up word still
lands near some page at cosine 0.3-0.45 with all-MiniLM-L6-v2) and is dropped. A query none of
whose words occurs in the searched documents says so (:func:`semantic_notice`).

Both search paths (``Engine.search`` and ``project_memory_search``) call :func:`judge_semantic_only`
on their fused documents; the lane names they fuse may carry a suffix (``vector#1`` is the vector
lane's list of a query variant).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from sleuth.fusion import FusedDocument

#: Lanes that match by meaning rather than by words.
SEMANTIC_LANES = frozenset({"vector"})
#: Lanes that match by words: a document one of them found holds a word of the query.
LEXICAL_LANES = frozenset({"bm25", "tfidf", "index", "exact"})
#: A document found by the semantic lanes alone is kept only when its best block's cosine with the
#: query is at least this; below it, it is dropped (chosen on the judged sets, docs/EVAL.md).
SEMANTIC_ONLY_MIN_SIMILARITY = 0.5


def base_lane(name: str) -> str:
    """The lane a fused list belongs to: ``"vector#1"`` → ``"vector"``."""
    return name.partition("#")[0]


def is_semantic_only(doc: FusedDocument) -> bool:
    """True when every lane that found ``doc`` is a semantic lane (and at least one did)."""
    return bool(doc.trace) and all(base_lane(t.lane) in SEMANTIC_LANES for t in doc.trace)


def judge_semantic_only(fused: Sequence[FusedDocument], lexical_ran: bool,
                        min_similarity: float = SEMANTIC_ONLY_MIN_SIMILARITY) -> list[FusedDocument]:
    """``fused`` with each semantic-only document marked (``semantic_only=True``) and, when a
    lexical lane ran (``lexical_ran``), the weak ones dropped: those whose best semantic lane score
    (cosine) is below ``min_similarity``. Order and every other field are kept. When no lexical
    lane ran (``--lanes vector``), the caller asked for meaning matches and nothing is dropped.

    Shapes: ``fused`` documents best first, as :func:`sleuth.fusion.rrf` returns them.
    """
    out: list[FusedDocument] = []
    for d in fused:
        if not is_semantic_only(d):
            out.append(d if not d.semantic_only else dataclasses.replace(d, semantic_only=False))
            continue
        similarity = max(t.lane_score for t in d.trace)
        if lexical_ran and similarity < min_similarity:
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
