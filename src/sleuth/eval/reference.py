"""The reference BM25 of the evaluation: a stock BM25 that sleuth's bm25 lane is compared with.

bm25s (Lù 2024, "BM25S: Orders of magnitude faster lexical search via eager sparse scoring",
arXiv:2407.03618) with its ``lucene`` variant: idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``, term
part ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * L / avgL))``, k1 = 1.2, b = 0.75; documents are
``title + " " + text``, tokenised by bm25s's own tokenizer (scikit-learn's ``\\b\\w\\w+\\b``,
lowercased), bm25s's English stop words removed, stemmed by Snowball English (PyStemmer). A term
repeated in a query counts each time (query term frequency). Settings as in bm25s's BEIR
benchmark (xhluca/bm25-benchmarks) and in issue 14.

bm25s is a test and benchmark dependency (``sleuth[bench]``), imported only when a run is asked for.
The functions compute in memory and read no file.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sleuth.eval.beir import BeirDataset
from sleuth.eval.metrics import Run

#: BM25 parameters of the reference (Lucene's defaults).
REFERENCE_K1 = 1.2
REFERENCE_B = 0.75


def top_documents(scores: np.ndarray, doc_ids: Sequence[str], depth: int) -> list[str]:
    """The ``depth`` best ``doc_ids`` by ``scores`` (shape (n,)), best first, only scores > 0;
    ties broken by position (corpus order)."""
    positive = np.flatnonzero(scores > 0)
    if len(positive) > depth:
        top = np.argpartition(-scores[positive], depth - 1)[:depth]
        positive = positive[top]
    order = positive[np.lexsort((positive, -scores[positive]))]
    return [doc_ids[int(i)] for i in order]


def reference_bm25_run(dataset: BeirDataset, depth: int = 100) -> Run:
    """``{query_id: [doc_id, ...]}``: the reference BM25's ``depth`` best documents per query.

    Raises:
        ImportError: bm25s or PyStemmer is not installed (``pip install 'sleuth[bench]'``).
    """
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    texts = [f"{d.title} {d.text}" if d.title else d.text for d in dataset.corpus]
    doc_ids = [d.doc_id for d in dataset.corpus]
    retriever = bm25s.BM25(method="lucene", k1=REFERENCE_K1, b=REFERENCE_B)
    retriever.index(bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False),
                    show_progress=False)
    queries = list(dataset.queries.items())
    tokens = bm25s.tokenize([text for _, text in queries], stopwords="en", stemmer=stemmer,
                            return_ids=False, show_progress=False)
    run: Run = {}
    for (qid, _), query_tokens in zip(queries, tokens, strict=True):
        ids = retriever.get_tokens_ids([str(token) for token in query_tokens])
        run[qid] = top_documents(retriever.get_scores_from_ids(ids), doc_ids, depth) if ids else []
    return run
