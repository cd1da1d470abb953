"""The Milvus sync's records in the catalog (meta ``milvus:state`` and ``milvus:stats``, rows of
``milvus_doc_stats``) read as hostile input: a record that is not JSON, not an object, nested too
deeply, or with a field of the wrong type is treated as absent, so the next sync rebuilds what it
described (the collections, or the statistics counted from scratch) instead of every Milvus lane
failing on it at every search. Pure functions."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


def _int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _count(v: object) -> bool:
    return _int(v) and v >= 0  # type: ignore[operator]


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
    "changed": _count, "sent": _count, "mark": _str,
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
#: ``milvus:stats`` (:meth:`sleuth.store.milvus.MilvusIndex.stats`).
STATS = _fields({"generation": _count, "n": _count, "lengths": _lengths}, required=("generation", "n", "lengths"))
#: A ``milvus_doc_stats`` row: a document's block count, fields' lengths and term ids' block counts.
DOC_STATS = _fields({"n": _count, "len": _lengths,
                     "df": lambda v: isinstance(v, dict) and all(k.lstrip("-").isdigit() and _int(x)
                                                                 for k, x in v.items())},
                    required=("n", "len", "df"))


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
