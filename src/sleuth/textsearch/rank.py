"""TF-IDF ranking of texts passed in one call (``search_documents``, ``search_index_query``).

The texts are analysed with the shared text module (:func:`sleuth.text.analyze`: accents folded,
identifiers split, stop words dropped, Snowball stemming) and ranked by the search pipeline with the
engine's own ``tfidf`` lane model (:class:`sleuth.lanes.tfidf.TfidfModel`: sublinear tf, smoothed
idf, cosine of L2-normalised vectors, so a score is in [0, 1]). Texts scoring 0 are left out; the
rest are ordered by score (descending), then by position.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, Field

from sleuth.config import Config
from sleuth.pipeline import Searcher
from sleuth.pipeline.corpus import TextCorpus, TextTfidfLane
from sleuth.text.analyze import analyze, unique
from sleuth.text.query import QUERY_MAX_TERMS
from sleuth.textsearch.highlight import highlights, prefix
from sleuth.types import SearchRequest

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

    Ranked by the search pipeline (:class:`sleuth.pipeline.Searcher`) over the texts as an in-memory
    corpus with one tf-idf lane (:mod:`sleuth.pipeline.corpus`). A query without searchable terms
    (blank, punctuation, stop words only) matches nothing.
    """
    terms = query_terms(query)
    if not terms or not documents:
        return []
    corpus = TextCorpus(documents)
    searcher = Searcher(corpus, {"tfidf": TextTfidfLane(corpus)}, Config(lanes=("tfidf",), model="none"))
    try:
        resp = searcher.search(SearchRequest(query=query, limit=min(top_k, len(documents)), lanes=["tfidf"],
                                             auto_variants=False, snippets=False, explain=True, entities=False))
    finally:
        searcher.close()
    out = []
    for hit in resp.hits:
        i = int(hit.doc_id)
        score = hit.explain[0].lane_score if hit.explain else 0.0
        out.append(TextHit(doc_id=str(i), score=round(score, SCORE_DECIMALS), snippet=prefix(documents[i]),
                           highlights=highlights(documents[i], terms)))
    return out
