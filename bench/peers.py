"""Peer implementations for bench/run.py: the same corpus, indexed and queried by other engines.

Each peer has ``build(ids, titles, texts) -> None`` and ``query(text, k) -> list[str]`` (ids, best
first). Tokenisation is the peer's own where it has one (bm25s, SQLite FTS5 porter); rank-bm25 gets
lower-cased ``\\w+`` tokens stemmed with PyStemmer (English), as sleuth and bm25s stem.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

_WORD_RE = re.compile(r"\w+", re.UNICODE)


def _stemmer():  # PyStemmer is optional for the peers
    try:
        import Stemmer

        return Stemmer.Stemmer("english")
    except ImportError:
        return None


def simple_tokens(text: str, stemmer=None) -> list[str]:
    """Lower-cased ``\\w+`` tokens, stemmed when a PyStemmer stemmer is given."""
    words = _WORD_RE.findall(text.lower())
    return stemmer.stemWords(words) if stemmer is not None else words


class Bm25sPeer:
    """bm25s (Lù 2024): sparse BM25 matrix, tokenised with bm25s.tokenize (English stop words + stemmer)."""

    name = "bm25s"

    def __init__(self) -> None:
        import bm25s

        self._bm25s = bm25s
        self.stemmer = _stemmer()
        self.ids: list[str] = []
        self.retriever = None

    def build(self, ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> None:
        self.ids = list(ids)
        corpus = [f"{t}\n{x}" if t else x for t, x in zip(titles, texts, strict=True)]
        tokens = self._bm25s.tokenize(corpus, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = self._bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def query(self, text: str, k: int = 10) -> list[str]:
        q = self._bm25s.tokenize([text], stopwords="en", stemmer=self.stemmer, show_progress=False, return_ids=False)
        if not q[0]:
            return []
        docs, _ = self.retriever.retrieve(q, k=min(k, len(self.ids)), show_progress=False, n_threads=1)
        return [self.ids[i] for i in docs[0]]


class Fts5Peer:
    """SQLite FTS5 (python sqlite3) on disk, ``porter unicode61`` tokenizer, OR of the query terms, bm25() rank."""

    name = "sqlite-fts5"

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        if self.path.exists():
            self.path.unlink()
        self.conn = sqlite3.connect(self.path)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(id UNINDEXED, title, body, tokenize='porter unicode61')")

    def build(self, ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> None:
        with self.conn:
            self.conn.executemany("INSERT INTO docs(id, title, body) VALUES (?,?,?)",
                                  zip(ids, titles, texts, strict=True))
        self.conn.execute("INSERT INTO docs(docs) VALUES ('optimize')")
        self.conn.commit()

    def query(self, text: str, k: int = 10) -> list[str]:
        terms = list(dict.fromkeys(_WORD_RE.findall(text.lower())))
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        rows = self.conn.execute("SELECT id FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?", (match, k))
        return [r[0] for r in rows]


class RankBm25Peer:
    """rank-bm25 BM25Okapi (pure Python/numpy, scores every document per query)."""

    name = "rank-bm25"

    def __init__(self) -> None:
        self.stemmer = _stemmer()
        self.ids: list[str] = []
        self.model = None

    def build(self, ids: Sequence[str], titles: Sequence[str], texts: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        self.ids = list(ids)
        self.model = BM25Okapi([simple_tokens(f"{t} {x}", self.stemmer) for t, x in zip(titles, texts, strict=True)])

    def query(self, text: str, k: int = 10) -> list[str]:
        scores = self.model.get_scores(simple_tokens(text, self.stemmer))
        top = np.argpartition(-scores, min(k, len(scores) - 1))[:k]
        return [self.ids[i] for i in top[np.argsort(-scores[top])]]


def exact_topk(matrix: np.ndarray, query: np.ndarray, k: int = 10) -> np.ndarray:
    """Exact inner-product top ``k`` rows of ``matrix`` (unit rows: cosine), best first."""
    scores = matrix @ query
    k = min(k, len(scores))
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top])]
