"""The Milvus sync's records in the catalog (meta ``milvus:state`` and ``milvus:stats``, rows of
``milvus_doc_stats``) read as hostile input: a record that is not JSON, not an object, nested too
deeply, or with a field of the wrong type is treated as absent, so the next sync rebuilds what it
described (the collections, or the statistics counted from scratch) instead of every Milvus lane
failing on it at every search. Pure functions."""

from __future__ import annotations

import base64
import json
import logging
import math
from collections.abc import Callable
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: object) -> bool:
    return _int(v) and v >= 0  # type: ignore[operator]


#: Above any count of blocks or tokens a catalog holds (integers exact in a float64, as the weights' sums).
STATS_COUNT_LIMIT = 2**53


def _stats_count(v: object) -> bool:
    return _int(v) and 0 <= v < STATS_COUNT_LIMIT  # type: ignore[operator]


def _stats_lengths(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _stats_count(x) for k, x in v.items())


def _number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _str(v: object) -> bool:
    return isinstance(v, str)


def _lengths(v: object) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _number(x) for k, x in v.items())


def _fields(spec: dict[str, Callable[[object], bool]], required: tuple[str, ...] = ()) -> Callable[[object], bool]:
    """A check of a JSON object: each field of ``spec`` present is of its type; ``required`` ones are present."""
    def check(v: object) -> bool:
        return (isinstance(v, dict) and all(k in v for k in required)
                and all(ok(v[k]) for k, ok in spec.items() if k in v))
    return check


_PROGRESS = _fields({
    "target": _int, "since": _count, "rebuild": lambda v: isinstance(v, bool), "n": _count, "avgdl": _lengths,
    "changed": _count, "sent": _count, "mark": _str, "collection": _str,
    "done": lambda v: v is None or (isinstance(v, list) and len(v) == 2 and _str(v[0]) and _count(v[1])),
}, required=("target", "since", "rebuild", "n", "avgdl", "changed", "done", "sent"))

#: ``milvus:state`` (:meth:`sleuth.store.milvus.MilvusIndex.state`).
STATE = _fields({
    "generation": _count, "n": _count, "avgdl": _lengths, "changed": _count, "dense_generation": _count,
    "dense_vectors": lambda v: v is None or _str(v), "pending": lambda v: isinstance(v, list) and all(map(_str, v)),
    "dense_model": lambda v: isinstance(v, list) and len(v) == 2 and _str(v[0]) and _count(v[1]),
    "lex_mark": _str, "dense_mark": _str, "dense_sync_mark": _str, "lex_sync": _PROGRESS, "lex_rows": _count,
    "dense_rows": _count,
})
#: ``milvus:stats`` (:meth:`sleuth.store.milvus.MilvusIndex.stats`): the block count and the
#: fields' token counts are integers below ``STATS_COUNT_LIMIT`` (a planted 1e308 or 400-digit
#: count made every query weight infinite).
STATS = _fields({"generation": _count, "n": _stats_count, "lengths": _stats_lengths},
                required=("generation", "n", "lengths"))

#: The meta key of the documents the Milvus sync left out (:data:`LEFT_OUT`).
LEFT_OUT_KEY = "milvus:left_out"
#: Documents :data:`LEFT_OUT` lists at most (the others are counted as ``more``).
LEFT_OUT_LISTED_MAX = 1_000
#: The longest document id :data:`LEFT_OUT` lists, in characters (a longer one, only in a
#: hostile catalog, is counted as ``more``: the record stays a few hundred kilobytes at most).
LEFT_OUT_ID_CHARS_MAX = 1_000
#: The longest reason :data:`LEFT_OUT` holds, in characters (sleuth writes about 40).
LEFT_OUT_REASON_CHARS_MAX = 200


def _left_out_docs(v: object) -> bool:
    return (isinstance(v, list) and len(v) <= LEFT_OUT_LISTED_MAX
            and all(isinstance(d, list) and len(d) == 2 and _str(d[0]) and _str(d[1])
                    and len(d[0]) <= LEFT_OUT_ID_CHARS_MAX and len(d[1]) <= LEFT_OUT_REASON_CHARS_MAX for d in v))


#: ``milvus:left_out``: the documents the sync left out of Milvus (a row a Milvus field cannot
#: hold: :func:`sleuth.store.milvus_columns.too_long`), ``docs`` ``[[doc_id, why], ...]`` (at most
#: ``LEFT_OUT_LISTED_MAX``, ids sorted), ``more`` whether it left out others not listed.
LEFT_OUT = _fields({"docs": _left_out_docs, "more": lambda v: isinstance(v, bool)}, required=("docs", "more"))


def _packed(v: object) -> bool:
    """Base64 of little-endian uint32 values (``DOC_STATS_IDS`` and ``DOC_STATS_COUNTS``)."""
    if not isinstance(v, str) or len(v) % 4:
        return False
    try:
        return len(base64.b64decode(v, validate=True)) % 4 == 0
    except ValueError:
        return False


#: A ``milvus_doc_stats`` row: a document's block count (``n``), fields' lengths (``len``) and the
#: term ids of its blocks with how many blocks hold each: ``ids`` (base64 of the sorted ids as
#: little-endian uint32) and ``counts`` (the same, the block counts; absent when every count is 1).
#: A row of the format before (``df``: ``{"term id": blocks}``) is read as well.
DOC_STATS = _fields({"n": _count, "len": _lengths, "ids": _packed, "counts": _packed,
                     "df": lambda v: isinstance(v, dict) and all(k.lstrip("-").isdigit() and _int(x)
                                                                 for k, x in v.items())},
                    required=("n", "len"))


def doc_stats_record(n: int, lengths: dict[str, int], ids: np.ndarray, counts: np.ndarray) -> str:
    """A ``milvus_doc_stats`` row (:data:`DOC_STATS`) of ``n`` blocks with field ``lengths``,
    holding the term ids ``ids`` (sorted, below 2^32) ``counts`` times each (at least 1)."""
    record: dict[str, Any] = {"n": n, "len": lengths,
                              "ids": base64.b64encode(ids.astype("<u4").tobytes()).decode("ascii")}
    if counts.size and int(counts.max()) > 1:
        record["counts"] = base64.b64encode(counts.astype("<u4").tobytes()).decode("ascii")
    return json.dumps(record)


def doc_stats_terms(record: dict[str, Any]) -> tuple[np.ndarray, np.ndarray] | None:
    """``(ids, counts)`` (int64) of a row :func:`parse` accepted against :data:`DOC_STATS`, in
    either format; None when it holds neither, or ``counts`` of another length than ``ids``."""
    if "ids" in record:
        ids = np.frombuffer(base64.b64decode(record["ids"]), dtype="<u4").astype(np.int64)
        if "counts" not in record:
            return ids, np.ones(ids.size, dtype=np.int64)
        counts = np.frombuffer(base64.b64decode(record["counts"]), dtype="<u4").astype(np.int64)
        return (ids, counts) if counts.size == ids.size else None
    if "df" in record:
        df = record["df"]
        return (np.fromiter(map(int, df), dtype=np.int64, count=len(df)),
                np.fromiter(df.values(), dtype=np.int64, count=len(df)))
    return None


def parse(raw: str | None, check: Callable[[object], bool], what: str) -> dict[str, Any] | None:
    """The JSON object ``raw`` when ``check`` accepts it; None when ``raw`` is None or not such an
    object (logged, stderr: the caller rebuilds what it described)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        value = None
    if not check(value):
        log.warning("%s cannot be read (not the JSON object sleuth writes): ignored, rebuilt by the next sync", what)
        return None
    return value  # type: ignore[return-value]
