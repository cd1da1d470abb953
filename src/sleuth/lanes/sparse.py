"""Lexical lanes as sparse vectors: sleuth's own terms and statistics, scored by an inner product.

A distributed engine (Milvus) stores one sparse vector per block and returns the blocks of the
largest inner product with a query vector. With the weights below, that inner product is exactly
the score of the local lanes (:mod:`sleuth.lanes.lexical`, :mod:`sleuth.lanes.tfidf`), so rankings
match the local engine; tokenisation and statistics stay in sleuth. Pure: no I/O.

- Term ids: a stable 32-bit hash of ``field\\x00term`` (BLAKE2b, :func:`term_id`), so every field
  of the ``index`` lane has ids of its own in one vector; the ``bm25`` lane queries the ``body`` ids.
- BM25 (Robertson & Zaragoza 2009, as tantivy computes it): block side
  ``tf (k1 + 1) / (tf + k1 (1 - b + b dl / avgdl))``, with ``dl`` the field's token count rounded
  down to one of tantivy's 256 field-norm values (Lucene's ``SmallFloat.intToByte4``) and ``avgdl``
  the mean token count at the time the block was written; query side ``idf · qtf · boost`` with
  ``idf = ln(1 + (N - n + 0.5) / (n + 0.5))``. ``avgdl`` drifts as blocks come and go: the blocks
  are re-weighted when it has moved by more than ``AVGDL_DRIFT_MAX`` (see :func:`drifted`).
- TF-IDF (lnc.ltc with smoothed idf, :mod:`sleuth.lanes.tfidf`): block side
  ``(1 + ln tf) idf / ||block||``, query side the unit vector of ``(1 + ln qtf) idf``. The block
  side holds the idf of when it was written, so every row is re-weighted by the sync that would
  take the documents written or deleted since the last re-weighting past ``AVGDL_DRIFT_MAX`` of the
  blocks (until then the tfidf scores of untouched blocks use the older statistics).
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

#: tantivy's BM25 constants.
BM25_K1 = 1.2
BM25_B = 0.75
#: The lexical fields of a block (the tantivy fields of the lanes bm25 and index).
FIELDS: tuple[str, ...] = ("body", "title", "heading", "tags", "path")
#: Blocks are re-weighted when a field's mean length (or, for tfidf, the block count) has moved by
#: more than this fraction since they were weighted.
AVGDL_DRIFT_MAX = 0.02
#: Sparse vector keys are below this (Milvus: ``[0, 2^32 - 1)``).
TERM_ID_LIMIT = 2**32 - 1
#: Term ids remembered (a BLAKE2b per token was a third of a sync's time), about 150 bytes each:
#: this many by :func:`term_id` (queries) and this many by :func:`field_term_ids` (syncs).
TERM_ID_CACHE_ENTRIES = 1 << 19


def _term_id(field: str, term: str) -> int:
    digest = hashlib.blake2b(f"{field}\x00{term}".encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % TERM_ID_LIMIT


@functools.lru_cache(maxsize=TERM_ID_CACHE_ENTRIES)
def term_id(field: str, term: str) -> int:
    """The sparse-vector key of ``term`` in ``field``: 32 bits of BLAKE2b, below ``TERM_ID_LIMIT``
    (memoized: the same pair always gives the same id)."""
    return _term_id(field, term)


class _FieldTermIds(dict[str, int]):
    """``{term: term_id(field, term)}`` of one field, filled on first use (a dict lookup where
    :func:`term_id` builds a cache key per call); every field's are emptied once they hold
    ``TERM_ID_CACHE_ENTRIES`` together."""

    def __init__(self, field: str) -> None:
        super().__init__()
        self.field = field

    def __missing__(self, term: str) -> int:
        if sum(map(len, _TERM_IDS.values())) >= TERM_ID_CACHE_ENTRIES:
            for ids in _TERM_IDS.values():
                ids.clear()
        tid = self[term] = _term_id(self.field, term)
        return tid


_TERM_IDS: dict[str, _FieldTermIds] = {}


def field_term_ids(field: str) -> Mapping[str, int]:
    """``{term: term_id(field, term)}`` for ``field``, memoized (the same ids as :func:`term_id`)."""
    ids = _TERM_IDS.get(field)
    if ids is None:
        ids = _TERM_IDS[field] = _FieldTermIds(field)
    return ids


def _long_to_int4(i: int) -> int:
    bits = i.bit_length()
    if bits < 4:
        return i
    shift = bits - 4
    return ((i >> shift) & 0x07) | ((shift + 1) << 3)


def _int4_to_long(i: int) -> int:
    bits, shift = i & 0x07, (i >> 3) - 1
    return bits if shift == -1 else (bits | 0x08) << shift


_MAX_INT4 = _long_to_int4(2**31 - 1)
_NUM_FREE_VALUES = 255 - _MAX_INT4


def fieldnorm(length: int) -> int:
    """The field length tantivy's BM25 uses for a field of ``length`` tokens: rounded down to one of
    256 values (exact below 24; Lucene's ``SmallFloat.intToByte4`` then ``byte4ToInt``)."""
    if length < _NUM_FREE_VALUES:
        return length
    code = _NUM_FREE_VALUES + _long_to_int4(length - _NUM_FREE_VALUES)
    return _NUM_FREE_VALUES + _int4_to_long(code - _NUM_FREE_VALUES)


def bm25_idf(df: int, n_blocks: int) -> float:
    """``ln(1 + (N - n + 0.5) / (n + 0.5))`` (Lucene's and tantivy's BM25 idf)."""
    return math.log1p((n_blocks - df + 0.5) / (df + 0.5))


def tfidf_idf(df: int, n_blocks: int) -> float:
    """``ln((1 + N) / (1 + n)) + 1`` (the tfidf lane's smoothed idf)."""
    return math.log((1.0 + n_blocks) / (1.0 + df)) + 1.0


def tfidf_idfs(dfs: np.ndarray, n_blocks: int) -> np.ndarray:
    """:func:`tfidf_idf` of each of ``dfs`` (float64, the same numbers: computed once per distinct
    value by ``math.log``)."""
    values, _ = unique_counts(dfs)
    return np.array([tfidf_idf(d, n_blocks) for d in values.tolist()], dtype=np.float64)[np.searchsorted(values, dfs)]


def unique_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(distinct values sorted, how many times each comes)`` of a 1-d integer array: what
    ``np.unique(values, return_counts=True)`` gives, by one ``np.sort`` (NumPy 2's ``np.unique``
    took 70 times as long on a part's 200,000 keys)."""
    ordered = np.sort(values)
    if not ordered.size:
        return ordered, np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    return ordered[starts], np.diff(np.concatenate([starts, [ordered.size]]))


#: The tfidf idf of term ids as two arrays: the ids sorted (int64), and their idf (float64).
IdfArrays = tuple[np.ndarray, np.ndarray]


def block_fields(terms: str, title_terms: Sequence[str], heading_terms: Sequence[str], tag_terms: Sequence[str],
                 path_terms: Sequence[str]) -> dict[str, list[str]]:
    """``{field: tokens}`` of one block (``terms``: its analysed body, whitespace-joined)."""
    return {"body": terms.split(), "title": list(title_terms), "heading": list(heading_terms),
            "tags": list(tag_terms), "path": list(path_terms)}


def bm25_vector(fields: Mapping[str, Sequence[str]], avgdl: Mapping[str, float]) -> dict[int, float]:
    """The block side of BM25 over every field: ``{term_id: tf part}`` (see the module docstring)."""
    out: dict[int, float] = {}
    for field, tokens in fields.items():
        if not tokens:
            continue
        mean = avgdl.get(field) or 1.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * fieldnorm(len(tokens)) / mean)
        for term, tf in Counter(tokens).items():
            out[term_id(field, term)] = tf * (BM25_K1 + 1) / (tf + norm)
    return out


def bm25_query(weighted_terms: Sequence[tuple[str, int]], boosts: Mapping[str, float], df: Mapping[int, int],
               n_blocks: int) -> dict[int, float]:
    """The query side: ``{term_id: idf · qtf · boost}`` of each field in ``boosts`` (``{"body": 1}``
    for the bm25 lane; ``INDEX_FIELD_BOOSTS`` for the index lane); terms no block has are left out."""
    out: dict[int, float] = {}
    for field, boost in boosts.items():
        if boost <= 0:
            continue
        for term, qtf in weighted_terms:
            tid = term_id(field, term)
            n = df.get(tid, 0)
            if n > 0:
                out[tid] = out.get(tid, 0.0) + bm25_idf(n, n_blocks) * qtf * boost
    return out


def tfidf_vector(tokens: Sequence[str], df: Mapping[int, int], n_blocks: int) -> dict[int, float]:
    """The block side of the tfidf lane: ``{term_id: (1 + ln tf) idf / norm}`` over ``body`` ids."""
    weights: dict[int, float] = {}
    for term, tf in Counter(tokens).items():
        tid = term_id("body", term)
        weights[tid] = (1.0 + math.log(tf)) * tfidf_idf(df.get(tid, 1), n_blocks)
    norm = math.sqrt(sum(w * w for w in weights.values())) or 1.0
    return {tid: w / norm for tid, w in weights.items()}


def block_vectors(fields: Mapping[str, Sequence[str]], avgdl: Mapping[str, float], idf: Mapping[int, float],
                  missing_idf: float) -> tuple[dict[int, float], dict[int, float]]:
    """``(bm25_vector(fields, avgdl), tfidf_vector(fields["body"], df, n))`` in one pass over the
    block's terms, with ``idf`` the tfidf idf of each body term id (``tfidf_idf(df, n)``) and
    ``missing_idf`` that of an id not in it (``tfidf_idf(1, n)``): the same numbers, each term
    counted and hashed once (a sync weighs every block this way)."""
    lex: dict[int, float] = {}
    tfidf: dict[int, float] = {}
    k1p1 = BM25_K1 + 1
    for field, tokens in fields.items():
        if not tokens:
            continue
        mean = avgdl.get(field) or 1.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * fieldnorm(len(tokens)) / mean)
        body = field == "body"
        for term, tf in Counter(tokens).items():
            tid = term_id(field, term)
            lex[tid] = tf * k1p1 / (tf + norm)
            if body:
                tfidf[tid] = (1.0 + math.log(tf)) * idf.get(tid, missing_idf)
    norm2 = math.sqrt(sum(w * w for w in tfidf.values())) or 1.0
    return lex, {tid: w / norm2 for tid, w in tfidf.items()}


def tfidf_query(weighted_terms: Sequence[tuple[str, int]], df: Mapping[int, int], n_blocks: int) -> dict[int, float]:
    """The query side of the tfidf lane: the unit vector of ``(1 + ln qtf) idf`` over the query's
    terms that some block has."""
    weights: dict[int, float] = {}
    for term, qtf in weighted_terms:
        tid = term_id("body", term)
        if df.get(tid, 0) > 0:
            weights[tid] = weights.get(tid, 0.0) + qtf
    out = {tid: (1.0 + math.log(q)) * tfidf_idf(df[tid], n_blocks) for tid, q in weights.items()}
    norm = math.sqrt(sum(w * w for w in out.values())) or 1.0
    return {tid: w / norm for tid, w in out.items()}


def drifted(old: float, new: float) -> bool:
    """Whether a statistic moved from ``old`` to ``new`` by more than ``AVGDL_DRIFT_MAX`` of ``old``."""
    if old <= 0:
        return new > 0
    return abs(new - old) / old > AVGDL_DRIFT_MAX


def block_term_ids(fields: Mapping[str, Sequence[str]]) -> set[int]:
    """The term ids one block holds, over every field (each block counts once in a term's df)."""
    ids: set[int] = set()
    for field, tokens in fields.items():
        ids.update(map(field_term_ids(field).__getitem__, set(tokens)))
    return ids


def block_stats(fields: Iterable[Mapping[str, Sequence[str]]]) -> tuple[int, dict[str, int], Counter[int]]:
    """``(blocks, {field: tokens}, {term_id: blocks holding it})`` of a document's blocks: what
    it adds to the collection statistics (N, the fields' total lengths, document frequencies)."""
    n, lengths, df = 0, dict.fromkeys(FIELDS, 0), Counter[int]()
    for block in fields:
        n += 1
        for field, tokens in block.items():
            lengths[field] = lengths.get(field, 0) + len(tokens)
        df.update(block_term_ids(block))
    return n, lengths, df


class PartTerms:
    """The counted terms of a part's blocks, flat (what :func:`count_part` gives): the statistics
    and the weights of a sync are computed from it, each block's tokens counted once.

    - ``ids``, ``tfs`` (int64, one entry per distinct term of a (block, field) segment, in the
      order ``Counter(tokens)`` gives: first occurrence): term id and term frequency;
    - per segment (a block's non-empty field, in the block's field order): ``seg_rows`` (the
      block's row in the part), ``seg_fields`` (index in ``fields``), ``seg_tokens`` (the field's
      token count, for BM25's length norm) and ``seg_terms`` (its entries);
    - ``fields``: the field names (``FIELDS`` first), ``n``: the blocks.
    """

    __slots__ = ("fields", "ids", "n", "seg_fields", "seg_rows", "seg_terms", "seg_tokens", "tfs")

    def __init__(self, n: int, fields: tuple[str, ...], ids: np.ndarray, tfs: np.ndarray, seg_rows: np.ndarray,
                 seg_fields: np.ndarray, seg_tokens: np.ndarray, seg_terms: np.ndarray) -> None:
        self.n, self.fields, self.ids, self.tfs = n, fields, ids, tfs
        self.seg_rows, self.seg_fields, self.seg_tokens, self.seg_terms = seg_rows, seg_fields, seg_tokens, seg_terms

    def __getstate__(self) -> tuple[object, ...]:
        return tuple(getattr(self, k) for k in self.__slots__)

    def __setstate__(self, state: tuple[object, ...]) -> None:
        for k, v in zip(self.__slots__, state, strict=True):
            setattr(self, k, v)

    def entry_rows(self) -> np.ndarray:
        """The block row of each entry (int64)."""
        return np.repeat(self.seg_rows, self.seg_terms)

    def block_term_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, ids)``: each block's distinct term ids over every field (:func:`block_term_ids`
        of each block), sorted by row then id (int64 both)."""
        keys, _ = unique_counts((self.entry_rows() << 32) | self.ids)
        return keys >> 32, keys & 0xFFFFFFFF

    def body_term_ids(self) -> np.ndarray:
        """The distinct ``body`` term ids of the part, sorted (int64)."""
        body = np.repeat(self.seg_fields == self.fields.index("body"), self.seg_terms)
        return unique_counts(self.ids[body])[0]

    def field_lengths(self, groups: np.ndarray, n_groups: int) -> np.ndarray:
        """``(n_groups, len(fields))`` int64: the token counts of each field summed over the blocks
        of each group (``groups``: the group of each block row)."""
        at = groups[self.seg_rows] * len(self.fields) + self.seg_fields
        out = np.bincount(at, weights=self.seg_tokens, minlength=n_groups * len(self.fields))
        return out.astype(np.int64).reshape(n_groups, len(self.fields))


def count_part(blocks: Sequence[Mapping[str, Sequence[str]]]) -> PartTerms:
    """The :class:`PartTerms` of ``blocks`` (``{field: tokens}`` each): each block's tokens counted
    (``Counter``) and their ids looked up (``map`` over :func:`field_term_ids`), in C."""
    ids: list[int] = []
    tfs: list[int] = []
    seg_rows: list[int] = []
    seg_fields: list[int] = []
    seg_tokens: list[int] = []
    seg_terms: list[int] = []
    index = {f: i for i, f in enumerate(FIELDS)}
    for row, fields in enumerate(blocks):
        for field, tokens in fields.items():
            if not tokens:
                continue
            at = index.get(field)
            if at is None:
                at = index[field] = len(index)
            counts = Counter(tokens)
            ids.extend(map(field_term_ids(field).__getitem__, counts))
            tfs.extend(counts.values())
            seg_rows.append(row)
            seg_fields.append(at)
            seg_tokens.append(len(tokens))
            seg_terms.append(len(counts))
    return PartTerms(len(blocks), tuple(index), np.array(ids, dtype=np.int64), np.array(tfs, dtype=np.int64),
                     np.array(seg_rows, dtype=np.int64), np.array(seg_fields, dtype=np.int64),
                     np.array(seg_tokens, dtype=np.int64), np.array(seg_terms, dtype=np.int64))


def _fieldnorms(lengths: np.ndarray) -> np.ndarray:
    """:func:`fieldnorm` of each length (float64: exact, the values are small integers)."""
    if not lengths.size:
        return np.zeros(0, dtype=np.float64)
    top = int(lengths.max())
    if top < 1 << 16:
        table = np.array([fieldnorm(i) for i in range(top + 1)], dtype=np.float64)
        return table[lengths]
    return np.array([fieldnorm(i) for i in lengths.tolist()], dtype=np.float64)


def part_vectors(blocks: Sequence[Mapping[str, Sequence[str]]], avgdl: Mapping[str, float],
                 idf: Mapping[int, float] | IdfArrays, missing_idf: float) -> tuple[SparseRows, SparseRows]:
    """:func:`block_vectors` of every block of a part at once, as flat rows: ``(lex, tfidf)``
    (:func:`weigh_part` of :func:`count_part`)."""
    return weigh_part(count_part(blocks), avgdl, idf, missing_idf)


def weigh_part(terms: PartTerms, avgdl: Mapping[str, float], idf: Mapping[int, float] | IdfArrays,
               missing_idf: float) -> tuple[SparseRows, SparseRows]:
    """:func:`block_vectors` of every block of a counted part, as flat rows: ``(lex, tfidf)``
    (``idf``: a mapping, or :data:`IdfArrays`).

    The same numbers, bit for bit (float64): the weights are computed over the whole part by NumPy
    with the same operations in the same order (``ln tf`` from ``math.log``, each block's tfidf
    norm summed in its terms' order). A block where two of its terms share an id (a 32-bit hash
    collision: the dict of :func:`block_vectors` keeps the last value at the first place) is
    weighed entry by entry as :func:`block_vectors` does.
    """
    n = terms.n
    k1p1 = BM25_K1 + 1
    tid, tf = terms.ids, terms.tfs
    seg_len = terms.seg_terms
    means = np.array([avgdl.get(f) or 1.0 for f in terms.fields], dtype=np.float64)
    seg_norms = BM25_K1 * (1 - BM25_B + BM25_B * _fieldnorms(terms.seg_tokens) / means[terms.seg_fields])
    row_of = terms.entry_rows()
    tf_f = tf.astype(np.float64)
    lex_w = tf_f * k1p1 / (tf_f + np.repeat(seg_norms, seg_len))
    # body entries, in each block's order: (1 + ln tf) idf / norm
    body = np.repeat(terms.seg_fields == terms.fields.index("body"), seg_len)
    btid, btf, brow = tid[body], tf[body], row_of[body]
    logs = np.array([1.0 + math.log(t) if t > 0 else 1.0 for t in range(int(btf.max()) + 1 if btf.size else 1)])
    bw = logs[btf] * _lookup(idf, btid, missing_idf)
    norm2 = np.sqrt(np.bincount(brow, weights=bw * bw, minlength=n))
    norm2[norm2 == 0] = 1.0
    bw = bw / norm2[brow]
    lex, collide_lex = SparseRows.of(row_of, tid, lex_w, n)
    tfidf, collide_tfidf = SparseRows.of(brow, btid, bw, n)
    if collide_lex or collide_tfidf:
        starts = np.concatenate([[0], np.cumsum(seg_len)]).tolist()
        if isinstance(idf, tuple):
            idf = dict(zip(idf[0].tolist(), idf[1].tolist(), strict=True))
        for row in sorted(collide_lex | collide_tfidf):  # a hash collision inside a block
            lex_v, tfidf_v = _row_vectors(terms, row, starts, avgdl, idf, missing_idf)
            lex.replace(row, lex_v)
            tfidf.replace(row, tfidf_v)
    return lex, tfidf


def _row_vectors(terms: PartTerms, row: int, starts: list[int], avgdl: Mapping[str, float],
                 idf: Mapping[int, float], missing_idf: float) -> tuple[dict[int, float], dict[int, float]]:
    """:func:`block_vectors` of the block at ``row`` from its counted entries (``starts``: each
    segment's first entry, and the end)."""
    lex: dict[int, float] = {}
    tfidf: dict[int, float] = {}
    k1p1 = BM25_K1 + 1
    ids, tfs = terms.ids.tolist(), terms.tfs.tolist()
    for s in np.flatnonzero(terms.seg_rows == row).tolist():
        field = terms.fields[int(terms.seg_fields[s])]
        mean = avgdl.get(field) or 1.0
        norm = BM25_K1 * (1 - BM25_B + BM25_B * fieldnorm(int(terms.seg_tokens[s])) / mean)
        body = field == "body"
        for tid, tf in zip(ids[starts[s]:starts[s + 1]], tfs[starts[s]:starts[s + 1]], strict=True):
            lex[tid] = tf * k1p1 / (tf + norm)
            if body:
                tfidf[tid] = (1.0 + math.log(tf)) * idf.get(tid, missing_idf)
    norm2 = math.sqrt(sum(w * w for w in tfidf.values())) or 1.0
    return lex, {tid: w / norm2 for tid, w in tfidf.items()}


def _lookup(table: Mapping[int, float] | IdfArrays, keys: np.ndarray, missing: float) -> np.ndarray:
    """``[table.get(k, missing) for k in keys]`` as float64, by a sorted search."""
    if isinstance(table, tuple):
        known, values = table
    else:
        known = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
        values = np.fromiter(table.values(), dtype=np.float64, count=len(table))
        order = np.argsort(known)
        known, values = known[order], values[order]
    if not known.size or not keys.size:
        return np.full(keys.size, missing, dtype=np.float64)
    at = np.minimum(np.searchsorted(known, keys), known.size - 1)
    return np.where(known[at] == keys, values[at], missing)


class SparseRows:
    """Sparse vectors of several rows, flat: ``ids`` and ``weights`` (float64) sorted by row then
    id, and ``lengths`` (entries per row)."""

    __slots__ = ("ids", "lengths", "weights")

    def __init__(self, ids: np.ndarray, weights: np.ndarray, lengths: np.ndarray) -> None:
        self.ids, self.weights, self.lengths = ids, weights, lengths

    @classmethod
    def of(cls, rows: np.ndarray, ids: np.ndarray, weights: np.ndarray, n: int) -> tuple[SparseRows, set[int]]:
        """The rows of entries ``(row, id, weight)``, and the rows where an id comes twice."""
        order = np.argsort((rows << 32) | ids, kind="stable")
        rows, ids, weights = rows[order], ids[order], weights[order]
        same = (rows[1:] == rows[:-1]) & (ids[1:] == ids[:-1])
        collide = set(rows[1:][same].tolist())
        return cls(ids, weights, np.bincount(rows, minlength=n)), collide

    def replace(self, row: int, vector: Mapping[int, float]) -> None:
        """Row ``row`` becomes ``vector``."""
        ends = np.cumsum(self.lengths)
        start, end = int(ends[row] - self.lengths[row]), int(ends[row])
        pairs = sorted(vector.items())
        ids = np.array([k for k, _ in pairs], dtype=np.int64)
        weights = np.array([v for _, v in pairs], dtype=np.float64)
        self.ids = np.concatenate([self.ids[:start], ids, self.ids[end:]])
        self.weights = np.concatenate([self.weights[:start], weights, self.weights[end:]])
        self.lengths = self.lengths.copy()
        self.lengths[row] = len(pairs)

    def row(self, i: int) -> dict[int, float]:
        """Row ``i`` as ``{id: weight}``."""
        end = int(self.lengths[: i + 1].sum())
        start = end - int(self.lengths[i])
        return dict(zip(self.ids[start:end].tolist(), self.weights[start:end].tolist(), strict=True))
