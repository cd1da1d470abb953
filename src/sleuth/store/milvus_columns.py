"""A sync's rows for Milvus as columns, packed by NumPy into one insert request per part.

pymilvus' ``MilvusClient.insert`` takes rows (dicts) and packs them into the gRPC request one row
and one sparse pair at a time, in Python: at 100k blocks that was most of the sync's CPU. Here a
part's rows are held as columns (scalar lists; sparse vectors as flat term-id and weight arrays
with one length per row; dense vectors as one float32 matrix) and packed in bulk into the request
Milvus' own column-based insert takes (``milvus.proto`` ``InsertRequest``/``UpsertRequest``:
one ``FieldData`` per field; a sparse row is its ``(uint32 index, float32 value)`` pairs,
little-endian, in increasing index order, which is how Milvus reads and stores them). The request
goes through the pymilvus connection's column-based ``batch_insert``/``upsert`` (the calls its
ORM ``Collection.insert`` makes, with the same retries, database and write timestamps), not
through a channel of our own. A client without them (another pymilvus) gets rows through the
public ``insert``/``upsert`` instead: :meth:`Columns.rows`, the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from sleuth.lanes import sparse

#: The scalar fields of both collections: (name, VARCHAR max_length in characters); then
#: ``recorded_ns`` (INT64). ``block_id`` is the primary key, ``project_id`` the partition key.
VARCHAR_FIELDS: tuple[tuple[str, int], ...] = (("block_id", 64), ("project_id", 256), ("doc_id", 256),
                                               ("label", 256), ("role", 256), ("family", 256))


def too_long(block_id: str, project_id: str, doc_id: str, label: str, role: str, family: str) -> str | None:
    """Why a row of these filter fields cannot go to Milvus (a value longer than its field's
    ``max_length`` of ``VARCHAR_FIELDS``, counted in UTF-8 bytes as the server counts, which is
    never fewer than characters), e.g. ``"field label: 300 bytes, at most 256"``; None when it can.
    Only a damaged or hostile catalog holds such a row (sleuth writes shorter ones)."""
    for (name, max_len), value in zip(VARCHAR_FIELDS, (block_id, project_id, doc_id, label, role, family),
                                      strict=True):
        size = len(str(value).encode("utf-8", "surrogatepass"))
        if size > max_len:
            return f"field {name}: {size} bytes, at most {max_len}"
    return None


#: Placeholder of a block without terms (Milvus refuses an empty sparse vector); no query has it.
EMPTY_SPARSE = {sparse.TERM_ID_LIMIT - 1: 1e-30}
#: Bytes of one sparse pair in Milvus' format (uint32 index, float32 value).
SPARSE_PAIR_BYTES = 8
#: Most bytes of field data one insert request carries; a larger part goes in several requests.
#: The gRPC limit is 256 MiB in milvus-lite and in a Milvus 2.4 proxy (``proxy.grpc.serverMaxRecvSize``;
#: 512 MiB in the 2.0-2.1 docs); a 2,000-block part is about 3.5 MB.
MILVUS_INSERT_REQUEST_BYTES_MAX = 64 << 20
_PAIR = np.dtype([("index", "<u4"), ("value", "<f4")])


class SparseColumn:
    """One sparse field of a part's rows: :class:`sleuth.lanes.sparse.SparseRows` (ids sorted
    within each row), with ``EMPTY_SPARSE`` in place of an empty vector."""

    __slots__ = ("ids", "lengths", "weights")

    def __init__(self, rows: sparse.SparseRows) -> None:
        ids, weights, lengths = rows.ids, rows.weights, rows.lengths
        empty = np.flatnonzero(lengths == 0)
        if empty.size:  # the placeholder at each empty row's place
            (pad_id, pad_weight), = EMPTY_SPARSE.items()
            at = np.cumsum(lengths)[empty]  # where the row would start = where it ends
            ids = np.insert(ids, at, pad_id)
            weights = np.insert(weights, at, pad_weight)
            lengths = lengths.copy()
            lengths[empty] = 1
        self.ids, self.weights, self.lengths = ids, weights, lengths

    @classmethod
    def of(cls, vectors: Sequence[Mapping[int, float]]) -> SparseColumn:
        """The column of ``vectors`` (``{term_id: weight}`` each)."""
        pairs = [sorted(v.items()) for v in vectors]
        flat = [p for row in pairs for p in row]
        return cls(sparse.SparseRows(np.array([k for k, _ in flat], dtype=np.int64),
                                     np.array([w for _, w in flat], dtype=np.float64),
                                     np.array([len(row) for row in pairs], dtype=np.int64)))

    def __len__(self) -> int:
        return len(self.lengths)

    def packed(self) -> tuple[list[bytes], int]:
        """``(contents, dim)`` of Milvus' ``SparseFloatArray``: each row's pairs as bytes, indices
        increasing, and the largest index + 1.

        Raises:
            ValueError: an index outside ``[0, 2^32 - 1)`` or a NaN weight (Milvus refuses both).
        """
        ids, weights = self.ids, self.weights
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= sparse.TERM_ID_LIMIT):
            raise ValueError(f"sparse vector index outside [0, {sparse.TERM_ID_LIMIT})")
        if np.isnan(weights).any():
            raise ValueError("sparse vector weight is NaN")
        pairs = np.empty(ids.size, dtype=_PAIR)
        pairs["index"] = ids
        pairs["value"] = weights  # float64 -> float32, rounded to nearest as pymilvus packs
        buf = pairs.tobytes()
        ends = (np.cumsum(self.lengths) * SPARSE_PAIR_BYTES).tolist()
        contents = [buf[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        return contents, int(ids.max()) + 1 if ids.size else 0

    def take(self, start: int, end: int) -> SparseColumn:
        """Rows ``start:end``."""
        offsets = np.concatenate([[0], np.cumsum(self.lengths)])
        a, b = int(offsets[start]), int(offsets[end])
        return SparseColumn(sparse.SparseRows(self.ids[a:b], self.weights[a:b], self.lengths[start:end]))

    def row_bytes(self) -> np.ndarray:
        """Bytes each row takes in a request (its pairs)."""
        return self.lengths * SPARSE_PAIR_BYTES

    def rows(self) -> list[dict[int, float]]:
        """The column as one dict per row."""
        ends = np.cumsum(self.lengths).tolist()
        ids, weights = self.ids.tolist(), self.weights.tolist()
        return [dict(zip(ids[a:b], weights[a:b], strict=True)) for a, b in zip([0, *ends[:-1]], ends, strict=True)]


class Columns:
    """One part's rows for a collection, column by column: the scalars (``VARCHAR_FIELDS`` and
    ``recorded_ns``, :meth:`add_scalars`), named sparse columns (``sparse``) and at most one dense
    column (``dense``: rows x dim)."""

    def __init__(self, dense_field: str | None = None) -> None:
        self.scalars: dict[str, list[Any]] = {name: [] for name, _ in VARCHAR_FIELDS}
        self.scalars["recorded_ns"] = []
        self.sparse: dict[str, SparseColumn] = {}
        self.dense_field = dense_field
        self.dense: Any = []  # one vector per row, or a float32 matrix (rows x dim)

    def add_scalars(self, block_id: str, project_id: str, doc_id: str, doc: Any) -> None:
        """The filter fields of one row (``doc``: its catalog document)."""
        s = self.scalars
        s["block_id"].append(block_id)
        s["project_id"].append(project_id)
        s["doc_id"].append(doc_id)
        s["label"].append(doc.label)
        s["role"].append(doc.role)
        s["family"].append(doc.family)
        s["recorded_ns"].append(int(doc.recorded_ns))

    def __len__(self) -> int:
        return len(self.scalars["block_id"])

    def check(self) -> None:
        """Raises ValueError: a string longer than its field's ``max_length`` (as pymilvus' row
        path and the server do), or columns of unequal lengths."""
        n = len(self)
        for name, max_len in VARCHAR_FIELDS:
            longest = max(map(len, self.scalars[name]), default=0)
            if longest > max_len:
                raise ValueError(f"field {name}: a value of {longest} characters, at most {max_len}")
        if any(len(c) != n for c in self.scalars.values()) or any(len(c) != n for c in self.sparse.values()) \
                or (self.dense_field is not None and len(self.dense) != n):
            raise ValueError("columns of unequal lengths")

    def take(self, start: int, end: int) -> Columns:
        """Rows ``start:end`` of every column."""
        out = Columns(self.dense_field)
        out.scalars = {name: values[start:end] for name, values in self.scalars.items()}
        out.sparse = {name: column.take(start, end) for name, column in self.sparse.items()}
        out.dense = self.dense[start:end]
        return out

    def pieces(self, max_bytes: int = MILVUS_INSERT_REQUEST_BYTES_MAX) -> list[Columns]:
        """The rows in consecutive pieces whose field data take at most ``max_bytes`` each (a
        bound, not an estimate: 4 bytes per character, 10 per varint, 16 per field; one row at
        least), in order: one piece for a part of the default size."""
        n = len(self)
        size = np.zeros(n, dtype=np.int64)
        for name, values in self.scalars.items():
            size += 11 if name == "recorded_ns" else np.fromiter(map(len, values), dtype=np.int64, count=n) * 4 + 11
        for column in self.sparse.values():
            size += column.row_bytes() + 11
        if self.dense_field is not None and len(self.dense):
            size += 4 * len(self.dense[0])
        budget = max_bytes - 16 * (len(self.scalars) + len(self.sparse) + 1)  # each field's header
        if int(size.sum()) <= budget:
            return [self]
        ends = np.cumsum(size)
        out, start, base = [], 0, 0
        while start < n:
            end = max(start + 1, int(np.searchsorted(ends, base + budget, side="right")))
            out.append(self.take(start, end))
            base, start = int(ends[end - 1]), end
        return out

    def fields_data(self) -> list[Any]:
        """The part as ``milvus.proto`` ``FieldData`` messages, one per field."""
        from pymilvus.grpc_gen import schema_pb2

        types = schema_pb2.DataType

        self.check()
        out = [schema_pb2.FieldData(type=types.VarChar, field_name=name,
                                    scalars=schema_pb2.ScalarField(
                                        string_data=schema_pb2.StringArray(data=self.scalars[name])))
               for name, _ in VARCHAR_FIELDS]
        out.append(schema_pb2.FieldData(type=types.Int64, field_name="recorded_ns",
                                        scalars=schema_pb2.ScalarField(
                                            long_data=schema_pb2.LongArray(data=self.scalars["recorded_ns"]))))
        for name, column in self.sparse.items():
            contents, dim = column.packed()
            out.append(schema_pb2.FieldData(type=types.SparseFloatVector, field_name=name,
                                            vectors=schema_pb2.VectorField(
                                                dim=dim, sparse_float_vector=schema_pb2.SparseFloatArray(
                                                    contents=contents, dim=dim))))
        if self.dense_field is not None and len(self.dense):
            matrix = np.asarray(self.dense, dtype=np.float32)
            out.append(schema_pb2.FieldData(type=types.FloatVector, field_name=self.dense_field,
                                            vectors=schema_pb2.VectorField(
                                                dim=int(matrix.shape[1]),
                                                float_vector=schema_pb2.FloatArray(data=matrix.ravel().tolist()))))
        return out

    def rows(self) -> list[dict[str, Any]]:
        """The same part as rows for pymilvus' public ``insert``/``upsert`` (the fallback path)."""
        names = list(self.scalars)
        rows = [dict(zip(names, values, strict=True)) for values in zip(*self.scalars.values(), strict=True)]
        for name, column in self.sparse.items():
            for row, vector in zip(rows, column.rows(), strict=True):
                row[name] = vector
        if self.dense_field is not None:
            for row, vector in zip(rows, self.dense, strict=True):
                row[self.dense_field] = [float(x) for x in vector]
        return rows


def column_handler(client: Any) -> Any | None:
    """The pymilvus connection of ``client`` when it takes prepared column-based requests
    (``batch_insert(insert_param=...)``, ``upsert(upsert_param=...)``, reached as pymilvus 3.0's
    ``MilvusClient`` does); None otherwise, e.g. an older pymilvus (then rows go through the
    public calls: the same rows, packed by pymilvus)."""
    from pymilvus import MilvusException

    get = getattr(client, "_get_connection", None)
    if get is None or not hasattr(client, "_generate_call_context"):
        return None
    try:
        handler = get()
    except MilvusException:  # not connected: the public calls will say so
        return None
    if not (callable(getattr(handler, "batch_insert", None)) and callable(getattr(handler, "upsert", None))):
        return None
    return handler


def send(client: Any, collection: str, columns: Columns, upsert: bool = False,
         schema: dict[str, Any] | None = None) -> None:
    """Insert (or upsert) ``columns`` into ``collection``: one request, or one per piece of at
    most ``MILVUS_INSERT_REQUEST_BYTES_MAX`` bytes (:meth:`Columns.pieces`), in order.

    ``schema``: ``client.describe_collection(collection)``, read once by the caller (pymilvus
    would read it again per call). Raises what pymilvus raises (``MilvusException``), or
    ValueError for a column Milvus would refuse (:meth:`Columns.check`, :meth:`SparseColumn.packed`).
    """
    if not len(columns):
        return
    handler = column_handler(client)
    if handler is None:
        for piece in columns.pieces():
            (client.upsert if upsert else client.insert)(collection, piece.rows())
        return
    from pymilvus.grpc_gen import milvus_pb2

    context = client._generate_call_context()
    schema = schema or client.describe_collection(collection)
    for piece in columns.pieces():
        fields = piece.fields_data()
        if upsert:
            request = milvus_pb2.UpsertRequest(collection_name=collection, fields_data=fields, num_rows=len(piece))
            handler.upsert(collection, [], upsert_param=request, schema=schema, context=context)
        else:
            request = milvus_pb2.InsertRequest(collection_name=collection, fields_data=fields, num_rows=len(piece))
            handler.batch_insert(collection, [], insert_param=request, schema=schema, context=context)
