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
