"""Where sleuth's bm25 lane and the reference BM25 part (issue 14's ±0.01 bound), step by step.

    python bench/reference_diff.py [--data ../shared/data] [--datasets scifact npl cosqa ...]

The same BM25 (Lucene idf ``ln(1 + (N - n + 0.5) / (n + 0.5))``, k1 1.2, b 0.75, query terms
counted by qtf) run from the reference (sleuth.eval.reference) towards the lane, one change a row:

1. the reference: bm25s, its tokenizer (``\\b\\w\\w+\\b``), its stop words, Snowball, whole documents;
1b. the reference with sleuth's stop words (177, NLTK's English list and a few more) instead of bm25s's
   (33, Lucene's English list);
2. bm25s over sleuth's analyser (sleuth.text: identifiers kept whole and in parts, sleuth's stop
   words and short terms, Snowball), whole documents (title + text, as ``sleuth eval`` indexes them);
3. exact BM25 (numpy, exact lengths) over sleuth's analyser, whole documents (checks row 2's bm25s);
4. the same with the document's title as the lane indexes it (its terms before the text unless the
   text starts with them; a document without a title is titled by its file name: NPL's ``1.txt``
   gives every document the terms ``1.txt`` and ``txt``);
5. the same over sleuth's blocks (≤ 2400 characters, the title's terms before each block's, idf and
   lengths over blocks), documents ranked by their best block (MaxP);
6. sleuth's bm25 lane (tantivy: the same as 4, but a block's length kept in tantivy's one-byte
   fieldnorm; ``sleuth eval DATASET --lanes bm25``), which requires a quoted phrase verbatim;
7. the lane with the queries' quotation marks taken out (5 of CISI's queries quote words as prose).

Prints one markdown row per dataset (nDCG@10 of each step) for docs/EVAL.md. Reads the evaluation
index in sleuth's cache (``XDG_CACHE_HOME``), as ``sleuth eval`` does.
"""

from __future__ import annotations

import argparse
import math
import re
import sqlite3
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import sparse

from sleuth.config import Config
from sleuth.eval import BeirDataset, evaluate
from sleuth.eval.reference import REFERENCE_B, REFERENCE_K1, reference_bm25_run, top_documents
from sleuth.eval.run import EVAL_DEPTH_DOCS, EvalRun
from sleuth.text import analyze, block_terms, parse_query
from sleuth.text.stopwords import ENGLISH_STOP_WORDS
from sleuth.types import SearchRequest

#: Quotation marks (a quoted phrase is required verbatim by every lane; CISI quotes words as prose).
QUOTES = re.compile(r"[\"“”„]")


def query_terms(text: str) -> list[str]:
    """The query's terms as the bm25 lane weighs them: each distinct term repeated qtf times."""
    return [t for t, n in parse_query(text).weighted_terms() for _ in range(n)]


def bm25s_run(docs: Sequence[list[str]], doc_ids: Sequence[str], queries: dict[str, str]) -> dict[str, list[str]]:
    """bm25s (Lucene variant) over pre-analysed documents and queries."""
    import bm25s

    retriever = bm25s.BM25(method="lucene", k1=REFERENCE_K1, b=REFERENCE_B)
    retriever.index([d or [""] for d in docs], show_progress=False)
    vocab = retriever.vocab_dict
    run = {}
    for qid, text in queries.items():
        ids = [vocab[t] for t in query_terms(text) if t in vocab]
        run[qid] = top_documents(retriever.get_scores_from_ids(ids), doc_ids, EVAL_DEPTH_DOCS) if ids else []
    return run


def reference_stop_words(ds: BeirDataset) -> dict[str, list[str]]:
    """The reference (bm25s's tokenizer, Snowball) with sleuth's stop words instead of bm25s's."""
    import bm25s
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    stop = sorted(ENGLISH_STOP_WORDS)
    docs = bm25s.tokenize([f"{d.title} {d.text}" if d.title else d.text for d in ds.corpus], stopwords=stop,
                          stemmer=stemmer, return_ids=False, show_progress=False)
    queries = bm25s.tokenize(list(ds.queries.values()), stopwords=stop, stemmer=stemmer, return_ids=False,
                             show_progress=False)
    retriever = bm25s.BM25(method="lucene", k1=REFERENCE_K1, b=REFERENCE_B)
    retriever.index([d or [""] for d in docs], show_progress=False)
    vocab, doc_ids = retriever.vocab_dict, [d.doc_id for d in ds.corpus]
    run = {}
    for qid, tokens in zip(ds.queries, queries, strict=True):
        ids = [vocab[t] for t in tokens if t in vocab]
        run[qid] = top_documents(retriever.get_scores_from_ids(ids), doc_ids, EVAL_DEPTH_DOCS) if ids else []
    return run


def exact_run(units: Sequence[list[str]], doc_of_unit: Sequence[str], queries: dict[str, str]) -> dict[str, list[str]]:
    """Exact BM25 over ``units`` (documents or blocks), each document scored by its best unit."""
    vocab: dict[str, int] = {}
    rows, cols, vals = [], [], []
    lengths = np.array([len(u) for u in units], dtype=np.float64)
    avg = lengths.mean()
    for i, unit in enumerate(units):
        norm = REFERENCE_K1 * (1 - REFERENCE_B + REFERENCE_B * lengths[i] / avg)
        for term, tf in Counter(unit).items():
            rows.append(i)
            cols.append(vocab.setdefault(term, len(vocab)))
            vals.append(tf * (REFERENCE_K1 + 1) / (tf + norm))
    matrix = sparse.csc_matrix((vals, (rows, cols)), shape=(len(units), len(vocab)))
    df = np.diff(matrix.indptr)
    n = len(units)
    docs = sorted(set(doc_of_unit))
    doc_index = {d: j for j, d in enumerate(docs)}
    unit_doc = np.array([doc_index[d] for d in doc_of_unit])
    run = {}
    for qid, text in queries.items():
        weights = Counter(vocab[t] for t in query_terms(text) if t in vocab)
        scores = np.zeros(n)
        for col, qtf in weights.items():
            idf = math.log(1 + (n - df[col] + 0.5) / (df[col] + 0.5))
            start, end = matrix.indptr[col], matrix.indptr[col + 1]
            scores[matrix.indices[start:end]] += qtf * idf * matrix.data[start:end]
        best = np.zeros(len(docs))
        np.maximum.at(best, unit_doc, scores)
        run[qid] = top_documents(best, docs, EVAL_DEPTH_DOCS)
    return run


def ndcg(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    return float(evaluate(run, qrels)["ndcg@10"])


def steps(data: Path, name: str) -> list[float]:
    """nDCG@10 of rows 1-7 (1b after 1) for dataset ``name``."""
    ev = EvalRun(data / name, config=Config(model="none"))  # lexical only: nothing to embed
    try:
        ds = ev.dataset
        queries = dict(ds.queries)
        doc_ids = [d.doc_id for d in ds.corpus]
        whole = [analyze(f"{d.title}\n\n{d.text}" if d.title else d.text) for d in ds.corpus]
        out = [ndcg(reference_bm25_run(ds), ds.qrels), ndcg(reference_stop_words(ds), ds.qrels),
               ndcg(bm25s_run(whole, doc_ids, queries), ds.qrels),
               ndcg(exact_run(whole, doc_ids, queries), ds.qrels)]
        con = sqlite3.connect(f"file:{ev.index_dir / 'catalog.sqlite3'}?mode=ro", uri=True)
        try:
            blocks = con.execute("SELECT d.rel_path, d.title, b.text FROM blocks b JOIN documents d "
                                 "ON d.doc_id = b.doc_id ORDER BY b.block_id").fetchall()
            indexed_title = dict(con.execute("SELECT rel_path, title FROM documents").fetchall())
        finally:
            con.close()
        titles: dict[str, list[str]] = {}
        as_lane = [block_terms(f"{d.title}\n\n{d.text}" if d.title else d.text,
                               titles.setdefault(indexed_title[d.doc_id], analyze(indexed_title[d.doc_id]))).split()
                   for d in ds.corpus]
        out.append(ndcg(exact_run(as_lane, doc_ids, queries), ds.qrels))
        units = [block_terms(text, titles.setdefault(title, analyze(title))).split() for _, title, text in blocks]
        out.append(ndcg(exact_run(units, [p for p, _, _ in blocks], queries), ds.qrels))
        out.append(float(ev.evaluate(["bm25"]).ndcg_10))
        unquoted = {}
        for qid, text in queries.items():
            request = SearchRequest(query=QUOTES.sub(" ", text), limit=EVAL_DEPTH_DOCS, lanes=["bm25"], snippets=False)
            unquoted[qid] = [h.path for h in ev.engine.search(request).hits]
        out.append(ndcg(unquoted, ds.qrels))
        return out
    finally:
        ev.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--datasets", nargs="+", default=["scifact", "cranfield", "cisi", "npl", "cosqa"])
    args = ap.parse_args()
    print("| set | 1 reference | 1b reference, sleuth's stop words | 2 bm25s, sleuth's analyser | 3 exact, documents "
          "| 4 exact, the lane's title "
          "| 5 exact, blocks (MaxP) "
          "| 6 bm25 lane (tantivy) | 7 bm25 lane, queries' quotation marks taken out |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in args.datasets:
        v = steps(args.data, name)
        print(f"| {name} | " + " | ".join(f"{x:.4f}" for x in v) + " |", flush=True)


if __name__ == "__main__":
    main()
