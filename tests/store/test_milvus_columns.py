"""A sync part's rows as Milvus columns (sleuth.store.milvus_columns) and its weights over a whole
part (sparse.part_vectors): the same numbers as the per-block weights, bit for bit, and the same
request bytes as pymilvus' own row packing (the library itself is the reference)."""

from __future__ import annotations

import math
import random
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from pymilvus import DataType
from pymilvus.client.prepare import Prepare

from sleuth.lanes import sparse
from sleuth.store.milvus_columns import EMPTY_SPARSE, VARCHAR_FIELDS, Columns, SparseColumn

WORDS = [a + b for a in ("ka", "lo", "mi", "nu", "pe", "ri", "su", "ta") for b in ("d", "ng", "rt", "sh", "x")]
#: Two body terms with the same 32-bit term id (found by search; asserted below).
COLLIDING = ("w13083", "w2088a")
AVGDL = {"body": 11.0, "title": 2.5, "heading": 1.0, "tags": 0.5, "path": 2.0}


def blocks(n: int, seed: int = 7) -> list[dict[str, list[str]]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        body = [rng.choice(WORDS) for _ in range(rng.randint(0, 40))]
        out.append(sparse.block_fields(" ".join(body), [rng.choice(WORDS) for _ in range(i % 4)],
                                       [rng.choice(WORDS)] if i % 3 else [], ["tag"] if i % 5 == 0 else [],
                                       ["docs", "/", f"f{i % 9}"]))
    return out


def fields_info() -> list[dict[str, Any]]:
    info: list[dict[str, Any]] = [{"name": name, "type": DataType.VARCHAR, "params": {"max_length": n}}
                                  for name, n in VARCHAR_FIELDS]
    info[0]["is_primary"] = True
    info.append({"name": "recorded_ns", "type": DataType.INT64, "params": {}})
    for name in ("lex", "tfidf"):
        info.append({"name": name, "type": DataType.SPARSE_FLOAT_VECTOR, "params": {}})
    info.append({"name": "dense", "type": DataType.FLOAT_VECTOR, "params": {"dim": 4}})
    return info


def test_part_vectors_are_block_vectors_bit_for_bit_collisions_and_empty_blocks_included() -> None:
    assert sparse.term_id("body", COLLIDING[0]) == sparse.term_id("body", COLLIDING[1])
    part = blocks(300)
    part[10]["body"] = [COLLIDING[0], "kad", COLLIDING[1], COLLIDING[0]]  # one id twice in a block
    part[11] = {field: [] for field in sparse.FIELDS}  # no terms at all
    part[12]["title"] = list(part[12]["body"][:2])  # a title repeating body terms (other ids)
    rng = random.Random(3)
    idf = {sparse.term_id("body", w): rng.uniform(1, 6) for w in WORDS if rng.random() < 0.7}
    lex, tfidf = sparse.part_vectors(part, AVGDL, idf, 6.5)
    for i, fields in enumerate(part):
        want_lex, want_tfidf = sparse.block_vectors(fields, AVGDL, idf, 6.5)
        assert lex.row(i) == want_lex and tfidf.row(i) == want_tfidf, i
    assert len(tfidf.row(10)) == 2 and lex.row(11) == {} and tfidf.row(11) == {}
    assert lex.lengths.tolist() == [len(sparse.block_vectors(f, AVGDL, idf, 6.5)[0]) for f in part]
    for rows in (lex, tfidf):  # sorted by id within each row
        ends = np.cumsum(rows.lengths)
        for a, b in zip([0, *ends[:-1]], ends, strict=True):
            assert (np.diff(rows.ids[a:b]) > 0).all()


def test_columns_pack_the_bytes_pymilvus_packs_from_rows() -> None:
    part = blocks(120)
    lex, tfidf = sparse.part_vectors(part, AVGDL, {}, 2.0)
    columns = Columns(dense_field="dense")
    for i in range(len(part)):
        doc = SimpleNamespace(label=f"l{i % 3}", role=["", "user"][i % 2], family="notes", recorded_ns=10**18 + i)
        columns.add_scalars(f"doc{i}:0123456789ab", ["alpha", "beta"][i % 2], f"doc{i}", doc)
    columns.sparse.update(lex=SparseColumn(lex), tfidf=SparseColumn(tfidf))
    columns.dense = np.random.default_rng(1).standard_normal((len(part), 4)).astype(np.float32)
    mine = {f.field_name: f for f in columns.fields_data()}
    rows = columns.rows()
    assert rows[0]["lex"] == lex.row(0) and rows[5]["recorded_ns"] == 10**18 + 5
    request = Prepare.row_insert_param("c", rows, "", fields_info())  # type: ignore[arg-type]
    theirs = {f.field_name: f for f in request.fields_data}
    assert set(mine) == set(theirs)
    for name, field in theirs.items():
        if name in ("lex", "tfidf"):  # pymilvus' row path leaves dim 0; its column path sets one
            assert list(mine[name].vectors.sparse_float_vector.contents) == \
                list(field.vectors.sparse_float_vector.contents), name
            assert mine[name].type == field.type
        else:
            assert mine[name].SerializeToString() == field.SerializeToString(), name


def test_an_empty_vector_becomes_the_placeholder_and_bad_values_are_refused() -> None:
    column = SparseColumn.of([{5: 0.5, 2: 1.0}, {}, {7: 0.25}])
    assert column.rows() == [{2: 1.0, 5: 0.5}, EMPTY_SPARSE, {7: 0.25}]
    contents, dim = column.packed()
    assert contents[0] == np.array([(2, 1.0), (5, 0.5)], dtype=[("i", "<u4"), ("v", "<f4")]).tobytes()
    assert dim == sparse.TERM_ID_LIMIT
    with pytest.raises(ValueError, match="NaN"):
        SparseColumn.of([{1: math.nan}]).packed()
    with pytest.raises(ValueError, match="outside"):
        SparseColumn.of([{sparse.TERM_ID_LIMIT: 1.0}]).packed()
    columns = Columns()
    doc = SimpleNamespace(label="", role="", family="", recorded_ns=0)
    columns.add_scalars("x" * 65, "p", "d", doc)
    columns.sparse["lex"] = SparseColumn.of([{1: 1.0}])
    with pytest.raises(ValueError, match="block_id: a value of 65 characters, at most 64"):
        columns.fields_data()


def test_a_large_part_goes_in_pieces_under_the_request_limit_in_order() -> None:
    part = blocks(200)
    lex, tfidf = sparse.part_vectors(part, AVGDL, {}, 2.0)
    columns = Columns(dense_field="dense")
    doc = SimpleNamespace(label="", role="", family="", recorded_ns=1)
    for i in range(len(part)):
        columns.add_scalars(f"b{i}", "p", f"d{i}", doc)
    columns.sparse.update(lex=SparseColumn(lex), tfidf=SparseColumn(tfidf))
    columns.dense = np.arange(len(part) * 4, dtype=np.float32).reshape(len(part), 4)
    assert columns.pieces() == [columns]  # the default limit: one request
    pieces = columns.pieces(max_bytes=4_000)
    assert len(pieces) > 3
    assert [r for p in pieces for r in p.rows()] == columns.rows()
    for piece in pieces:
        request_bytes = sum(f.ByteSize() for f in piece.fields_data())
        assert request_bytes <= 4_000, (request_bytes, len(piece))
    single = columns.pieces(max_bytes=1)  # a row larger than the limit still goes, alone
    assert [len(p) for p in single] == [1] * len(part)


def test_field_term_ids_are_term_ids_and_stay_under_the_cache_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sparse, "TERM_ID_CACHE_ENTRIES", 50)
    monkeypatch.setattr(sparse, "_TERM_IDS", {})  # fresh caches (other tests filled them)
    for field in ("body", "title"):
        ids = sparse.field_term_ids(field)
        assert [ids[w] for w in WORDS] == [sparse.term_id(field, w) for w in WORDS]
    assert sum(len(sparse.field_term_ids(f)) for f in ("body", "title")) <= 50
