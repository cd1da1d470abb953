"""TF-IDF ranking of texts passed in one call (``search_documents``, ``search_index_query``). Pure.

The texts are analysed with the shared text module (:func:`sleuth.text.analyze`: accents folded,
identifiers split, stop words dropped, Snowball stemming) and scored with the engine's own
``tfidf`` lane model (:class:`sleuth.lanes.tfidf.TfidfModel`: sublinear tf, smoothed idf, cosine
of L2-normalised vectors, so a score is in [0, 1]). Texts scoring 0 are left out; the rest are
ordered by score (descending), then by position.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from sleuth.lanes.tfidf import TfidfModel
from sleuth.text.analyze import analyze, unique
from sleuth.text.query import QUERY_MAX_TERMS
from sleuth.textsearch.highlight import highlights, prefix

#: Scores are rounded to this many decimal places.
SCORE_DECIMALS = 4


class TextHit(BaseModel):
    """One ranked text (seed 003's result object)."""

    doc_id: str = Field(description="The text's position in the documents argument, from 0, as a string.")
    score: float = Field(description="TF-IDF cosine similarity with the query, in [0, 1]; higher is better.")
    snippet: str = Field(description="The text's first 200 characters (code points).")
    highlights: list[str] = Field(description="Up to 3 context windows around matched query terms.")


def query_terms(query: str) -> list[str]:
    """The distinct analysed terms of ``query``, at most ``QUERY_MAX_TERMS``, in query order."""
    return unique(analyze(query))[:QUERY_MAX_TERMS]


def rank_texts(query: str, documents: Sequence[str], top_k: int) -> list[TextHit]:
    """The ``top_k`` texts of ``documents`` most similar to ``query`` (only those sharing a term).

    A query without searchable terms (blank, punctuation, stop words only) matches nothing.
    """
    terms = query_terms(query)
    if not terms or not documents:
        return []
    model = TfidfModel((str(i), "", " ".join(analyze(text))) for i, text in enumerate(documents))
    scores = model.scores(terms)
    ranked = sorted((i for i in range(len(documents)) if scores[i] > 0), key=lambda i: (-float(scores[i]), i))
    return [
        TextHit(
            doc_id=str(i),
            score=round(float(scores[i]), SCORE_DECIMALS),
            snippet=prefix(documents[i]),
            highlights=highlights(documents[i], terms),
        )
        for i in ranked[:top_k]
    ]
