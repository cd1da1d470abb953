"""The three lanes served from the tantivy postings: ``bm25``, ``index`` and ``exact``.

- ``bm25``: Okapi BM25 over block text (plus the document title), as in Robertson & Zaragoza
  2009, with Lucene's idf ``ln(1 + (N - n + 0.5) / (n + 0.5))`` and tantivy's k1 = 1.2, b = 0.75;
  each distinct query term's part is multiplied by its query term frequency (qtf), as Lucene does
  for a term repeated in a query and as BM25 with k3 → ∞ does.
- ``index``: the fielded lane over titles, heading paths, tags and file paths (and the body);
  BM25 per field, fields weighted by ``INDEX_FIELD_BOOSTS`` and summed; query terms weighted by
  qtf as in the bm25 lane.
- ``rm3``: the bm25 lane's query expanded by pseudo-relevance feedback (RM3, :mod:`sleuth.lanes.feedback`):
  a first bm25 round takes its ``RM3_FEEDBACK_BLOCKS`` best blocks as relevant, and the query's
  terms plus the ``RM3_FEEDBACK_TERMS`` likeliest terms of those blocks, weighted as RM3 says, are
  scored by BM25 over the body, for the first round's ``k`` best blocks (the bm25 lane's answer:
  the expansion terms reorder the query's matches; a block holding none of its words is not
  returned, so a document the lexical lanes found always holds a word of the query). It runs beside
  the bm25 lane, not instead of it (docs/EVAL.md, "Issue 14, third pass"; whether by default: the
  registry).
- ``exact``: blocks containing a quoted phrase or a whole identifier of the query verbatim
  (folded, unstemmed; a phrase's words may also be written joined into one path or identifier,
  :meth:`sleuth.lanes.postings.Postings.phrase`); scored by BM25 over those exact tokens.

Quoted phrases are required by every lane: a block that lacks one is filtered out before top-k.
"""

from __future__ import annotations

from collections.abc import Hashable

import tantivy

from sleuth.lanes.base import LaneBase, LaneContext, LaneQuery, LaneStatus
from sleuth.lanes.feedback import rm3_weights
from sleuth.lanes.postings import Postings
from sleuth.store.catalog import Catalog
from sleuth.text import ParsedQuery, analyze
from sleuth.types import RankedList

#: Per-field weights of the index lane (multipliers on each field's BM25 score), chosen on SciFact
#: and Cranfield (docs/EVAL.md): the fields beside the body, BM25F-like, rather than fields alone.
INDEX_FIELD_BOOSTS: dict[str, float] = {"title": 1.0, "heading": 1.0, "tags": 1.0, "path": 0.5, "body": 1.0}


def _terms_and_qtf(parsed: ParsedQuery) -> tuple[list[str], list[int]]:
    """The query's distinct terms and their query term frequencies (see ``ParsedQuery.qtf``)."""
    pairs = parsed.weighted_terms()
    return [t for t, _ in pairs], [n for _, n in pairs]


def required_phrases(postings: Postings, parsed: ParsedQuery) -> list[tantivy.Query]:
    """One required query per quoted phrase of ``parsed`` (:meth:`Postings.phrase`: the phrase as
    written, or with some of its words joined into one path or identifier)."""
    return [postings.phrase(p) for p in parsed.phrases]


class _TantivyLane(LaneBase):
    """A lane answered from the shared tantivy postings (which the engine keeps at the catalog's
    generation: see :meth:`sleuth.lanes.postings.Postings.catch_up`)."""

    def __init__(self, context: LaneContext | Postings) -> None:
        self.postings = context if isinstance(context, Postings) else context.postings

    def scoring_query(self, parsed: ParsedQuery) -> tantivy.Query | None:
        raise NotImplementedError

    def applies(self, parsed: ParsedQuery) -> bool:
        """A word lane has something to look up only when the query has a word that is not a stop
        word (a quoted phrase of stop words alone is the exact and vector lanes' to match)."""
        return bool(parsed.terms)

    def warm(self) -> None:
        self.postings.searcher()

    def status(self) -> LaneStatus:
        return LaneStatus(True, details={"postings_generation": self.postings.generation()})

    def search(self, q: LaneQuery) -> RankedList:
        scoring = self.scoring_query(q.parsed)
        if scoring is None:
            return RankedList(self.name, (), ())
        hits = self.postings.search(scoring, q.k, q.projects, required_phrases(self.postings, q.parsed), q.doc_ids,
                                    self.memo_key(q.parsed))
        return RankedList(self.name, tuple(hits.block_ids), tuple(hits.scores))

    def memo_key(self, parsed: ParsedQuery) -> Hashable | None:
        """What names this lane's query for ``parsed`` in :meth:`Postings.search`'s memo (None: not kept)."""
        return None


def bm25_memo_key(parsed: ParsedQuery) -> Hashable:
    """The memo key of the bm25 lane's query for ``parsed`` (its terms and qtf, its quoted phrases)."""
    return ("bm25", tuple(parsed.weighted_terms()), tuple(map(tuple, parsed.phrases)))


class BM25Lane(_TantivyLane):
    """BM25 over the ``body`` field (block text with its document's title)."""

    name = "bm25"

    def scoring_query(self, parsed: ParsedQuery) -> tantivy.Query | None:
        terms, qtf = _terms_and_qtf(parsed)
        return self.postings.any_of("body", terms, qtf=qtf)

    def memo_key(self, parsed: ParsedQuery) -> Hashable | None:
        return bm25_memo_key(parsed)


#: RM3 of the ``rm3`` lane, chosen on SciFact, Cranfield, CISI and NPL (docs/EVAL.md, grid rm3-beside):
#: feedback blocks, relevance-model terms kept, weight of the original query (λ). Anserini's defaults
#: are 10 / 10 / 0.5 (:mod:`sleuth.lanes.feedback`).
RM3_FEEDBACK_BLOCKS = 10
RM3_FEEDBACK_TERMS = 20
RM3_ORIGINAL_WEIGHT = 0.7
#: Whether the second round scores only the first round's blocks (the bm25 lane's ``k`` best, read
#: from the postings' memo when it ran), reordering them by the expanded query, instead of every
#: block holding a word of the query.
RM3_RERANK_FIRST_ROUND = True
#: Deepest first round reranked, in blocks (the first 1,000 results' window): a deeper page's rm3 lane
#: searches every block holding a word of the query, as before reranking (one term query per block of
#: a deep first round costs more than that search: 0.9-1.6 s against 0.6-0.9 s at offset 10,000).
RM3_RERANK_MAX_BLOCKS = 2000


class FeedbackLane(_TantivyLane):
    """BM25 over the ``body`` field of the query expanded by RM3 from the bm25 lane's best blocks.

    Args:
        context: the index's parts (the postings, and the catalog the feedback blocks' text comes
            from), or bare postings with ``catalog``.
        fb_blocks / fb_terms / original_weight: RM3's settings (:func:`sleuth.lanes.feedback.rm3_weights`).
        query_word_required: return only blocks holding a word of the query (the default: the
            expansion terms then reorder and extend the query's matches, never find a block without
            its words; on the four development sets the same nDCG@10 as without, docs/EVAL.md).
        rerank_first_round: with ``query_word_required``, score only the first round's ``k`` best
            blocks (the bm25 lane's answer; ``k`` at most ``RM3_RERANK_MAX_BLOCKS``, deeper pages
            search as without) by the expanded query, instead of every block holding
            a word of the query: nDCG@10 moved by at most 0.0017 on the four development sets (a
            loss of at most 0.0004), bm25 + rm3 1.58x faster at 1,000,000 blocks (docs/EVAL.md,
            "Stop 35"; docs/BENCH.md, "rm3 reranks the first round").
    Raises:
        ValueError: no catalog to read the feedback blocks from.

    Per query: one bm25 search for ``fb_blocks`` blocks (``k`` when reranking; the bm25 lane's answer
    from the postings' memo when it ran; quoted phrases and filters applied as in every lane), the
    first ``fb_blocks`` blocks' text read from the catalog and analysed (at most ``fb_blocks`` x 2400
    characters), one BM25 search over the expanded query (the query's terms and ``fb_terms`` more)
    among the first round's blocks when reranking, else among the blocks holding a term of the
    query when ``query_word_required``, else among all.
    """

    name = "rm3"

    def __init__(self, context: LaneContext | Postings, catalog: Catalog | None = None,
                 fb_blocks: int = RM3_FEEDBACK_BLOCKS, fb_terms: int = RM3_FEEDBACK_TERMS,
                 original_weight: float = RM3_ORIGINAL_WEIGHT, query_word_required: bool = True,
                 rerank_first_round: bool = RM3_RERANK_FIRST_ROUND) -> None:
        super().__init__(context)
        self.query_word_required = query_word_required
        # a block without a word of the query is in no first round: reranking it finds none
        self.rerank_first_round = rerank_first_round and query_word_required
        found = catalog if catalog is not None else getattr(context, "catalog", None)
        if found is None:
            raise ValueError("the rm3 lane reads its feedback blocks from the catalog: none given")
        self.catalog: Catalog = found
        self.fb_blocks, self.fb_terms, self.original_weight = fb_blocks, fb_terms, original_weight

    def search(self, q: LaneQuery) -> RankedList:
        pairs = q.parsed.weighted_terms()
        if not pairs:
            return RankedList(self.name, (), ())
        required = required_phrases(self.postings, q.parsed)
        first_query = self.postings.any_of("body", [t for t, _ in pairs], qtf=[n for _, n in pairs])
        if first_query is None:
            return RankedList(self.name, (), ())
        # the bm25 lane's query: its answer, when it ran first, is read from the postings' memo
        rerank = self.rerank_first_round and q.k <= RM3_RERANK_MAX_BLOCKS
        depth = max(self.fb_blocks, q.k) if rerank else self.fb_blocks
        first = self.postings.search(first_query, depth, q.projects, required, q.doc_ids,
                                     bm25_memo_key(q.parsed))
        if not first.block_ids:
            return RankedList(self.name, (), ())
        top = first.block_ids[: self.fb_blocks]
        texts = self.catalog.block_texts(top)
        # the feedback blocks' terms from their text (the catalog keeps the text, not the terms)
        feedback = [(s, analyze(texts[b])) for b, s in zip(top, first.scores, strict=False) if b in texts]
        expanded = rm3_weights(pairs, feedback, self.fb_terms, self.original_weight)
        if rerank:
            # only the first round's blocks (each holds a word of the query), scored again by the
            # whole expanded query
            scoring = self.postings.any_of("body", [t for t, _ in expanded], qtf=[w for _, w in expanded])
            required = [*required, self.postings.blocks_among(first.block_ids)]
        else:
            scoring = self._scoring(expanded, {t for t, _ in pairs})
        if scoring is None:
            return RankedList(self.name, (), ())
        hits = self.postings.search(scoring, q.k, q.projects, required, q.doc_ids)
        return RankedList(self.name, tuple(hits.block_ids), tuple(hits.scores))


    def _scoring(self, expanded: list[tuple[str, float]], own: set[str]) -> tantivy.Query | None:
        """The second round's query: BM25 of every term of ``expanded`` times its weight, summed.

        With ``query_word_required`` the query's own terms (``own``) are one required clause and the
        expansion terms an optional one: the same sums over the same blocks as the whole union
        restricted to the blocks holding a query term, for about a tenth less of tantivy's time at
        1,000,000 blocks (the query's postings read once, the expansion terms' only at its blocks).
        """
        if not self.query_word_required:
            return self.postings.any_of("body", [t for t, _ in expanded], qtf=[w for _, w in expanded])
        query_part = self.postings.any_of("body", [t for t, w in expanded if t in own],
                                          qtf=[w for t, w in expanded if t in own])
        more = [(t, w) for t, w in expanded if t not in own]
        expansion = self.postings.any_of("body", [t for t, _ in more], qtf=[w for _, w in more])
        if query_part is None or expansion is None:
            return query_part
        return tantivy.Query.boolean_query([(tantivy.Occur.Must, query_part), (tantivy.Occur.Should, expansion)])


class IndexLane(_TantivyLane):
    """The fielded lane: title, heading path, tags and path, weighted by ``INDEX_FIELD_BOOSTS``."""

    name = "index"

    def __init__(self, context: LaneContext | Postings, boosts: dict[str, float] | None = None) -> None:
        super().__init__(context)
        self.boosts = dict(INDEX_FIELD_BOOSTS if boosts is None else boosts)

    def scoring_query(self, parsed: ParsedQuery) -> tantivy.Query | None:
        terms, qtf = _terms_and_qtf(parsed)
        per_field = [self.postings.any_of(f, terms, b, qtf) for f, b in self.boosts.items() if b > 0]
        clauses = [(tantivy.Occur.Should, q) for q in per_field if q is not None]
        return tantivy.Query.boolean_query(clauses) if clauses else None


class ExactLane(_TantivyLane):
    """Verbatim matches of quoted phrases and whole identifiers in the ``exact`` field."""

    name = "exact"

    def applies(self, parsed: ParsedQuery) -> bool:
        """Only a query with a quoted phrase or a code identifier has something to match verbatim."""
        return bool(parsed.phrases or parsed.identifiers)

    def scoring_query(self, parsed: ParsedQuery) -> tantivy.Query | None:
        clauses = [(tantivy.Occur.Should, self.postings.phrase(p)) for p in parsed.phrases]
        clauses += [(tantivy.Occur.Should, self.postings.term("exact", i)) for i in parsed.identifiers]
        if not clauses:
            return None
        return clauses[0][1] if len(clauses) == 1 else tantivy.Query.boolean_query(clauses)
