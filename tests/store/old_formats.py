"""Catalogs of earlier formats, made from a current one, for the migration tests."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from sleuth.store import doc_text

#: Format 4's vectors table: float32 blobs, a rowid table with an index of its key.
FORMAT_4_VECTORS = """CREATE TABLE vectors (
    model TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, embed_hash)
)"""


def as_format_4(catalog_file: Path, vectors: Mapping[tuple[str, str], np.ndarray] | None = None) -> None:
    """Turn a format-5 catalog into format 4: documents keep their whole text (no ``elided_chars``),
    the vectors table replaced by format 4's holding ``vectors`` (``{(model, embed_hash): float32
    vector}``; none when not given), the format recorded as 4."""
    conn = sqlite3.connect(catalog_file, isolation_level=None)
    try:
        conn.execute("BEGIN")
        for doc_id, stored, elided in conn.execute("SELECT doc_id, text, elided_chars FROM documents").fetchall():
            spans = conn.execute("SELECT start_char, end_char, text FROM blocks WHERE doc_id=?"
                                 " ORDER BY start_char, ordinal", (doc_id,)).fetchall()
            conn.execute("UPDATE documents SET text=? WHERE doc_id=?", (doc_text.join(stored, elided, spans), doc_id))
        conn.execute("ALTER TABLE documents DROP COLUMN elided_chars")
        conn.execute("DROP TABLE vectors")
        conn.execute(FORMAT_4_VECTORS)
        conn.executemany("INSERT INTO vectors VALUES (?,?,?)",
                         [(m, h, np.asarray(v, dtype=np.float32).tobytes()) for (m, h), v in (vectors or {}).items()])
        conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()


def format_5_blobs(vectors: np.ndarray) -> list[bytes]:
    """Format 5's stored vectors (written by that format's code): ``round(v * 127 / max|v|)`` as int8,
    then one float32 scale ``||v|| / ||codes||``; ``vectors`` of shape (n, dim)."""
    v = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(v).max(axis=1, initial=0.0).astype(np.float64)
    step = np.where(peak > 0, peak / 127, 1.0)
    codes = np.clip(np.rint(v / step[:, None]), -127, 127).astype(np.int8)
    code_norm = np.linalg.norm(codes.astype(np.float64), axis=1)
    norm = np.linalg.norm(v.astype(np.float64), axis=1)
    rows = np.empty(len(v), dtype=np.dtype([("codes", "i1", (v.shape[1],)), ("scale", "<f4")]))
    rows["codes"] = codes
    rows["scale"] = np.where(code_norm > 0, norm / np.where(code_norm > 0, code_norm, 1.0), 0.0)
    return [row.tobytes() for row in rows]


def format_5_decoded(blob: bytes) -> np.ndarray:
    """The float32 vector format 5's code decoded from one of its blobs (``codes * scale``)."""
    row = np.frombuffer(blob, dtype=np.dtype([("codes", "i1", (len(blob) - 4,)), ("scale", "<f4")]))[0]
    return row["codes"].astype(np.float32) * row["scale"]


def as_format_5(catalog_file: Path, vectors: Mapping[tuple[str, str], np.ndarray]) -> None:
    """Turn a catalog of this format into format 5: its vectors table holding format 5's rows of
    ``vectors`` (``{(model, embed_hash): float32 vector}``), the format recorded as 5."""
    conn = sqlite3.connect(catalog_file, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("DELETE FROM vectors")
        keys = list(vectors)
        blobs = format_5_blobs(np.stack([vectors[k] for k in keys])) if keys else []
        conn.executemany("INSERT INTO vectors VALUES (?,?,?)",
                         [(m, h, b) for (m, h), b in zip(keys, blobs, strict=True)])
        conn.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
        conn.execute("COMMIT")
    finally:
        conn.close()
