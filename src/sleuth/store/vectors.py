"""The catalog's block vectors, kept by embedding model and embedding-text hash."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from sleuth.store.rows import Connected, embedding_text


class VectorTable(Connected):
    """Block vectors by model (a part of :class:`sleuth.store.catalog.Catalog`)."""

    def blocks_without_vectors(self, model: str, limit: int = 10_000) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(embed_hash, embedding text)`` of blocks with no vector for ``model``."""
        rows = self.conn.execute(
            "SELECT b.embed_hash, d.title, b.text FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)"
            " GROUP BY b.embed_hash LIMIT ?",
            (model, limit),
        ).fetchall()
        return [(h, embedding_text(title, text)) for h, title, text in rows]

    def store_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Cache ``(embed_hash, float32 vector bytes)`` for ``model`` (no new generation: derived data)."""
        with self.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)", [(model, h, v) for h, v in items])
            conn.execute(
                "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                (f"vectors:{model}",),
            )

    def import_vectors(self, other: Path) -> int:
        """Copy every cached vector of the catalog file ``other`` (any format that has a ``vectors``
        table) into this one; returns how many rows were copied. Vectors depend only on the model
        and the embedded text, so they survive a change of index format."""
        conn = self.conn
        conn.execute("ATTACH DATABASE ? AS other", (str(other),))
        try:
            with self.write():
                before = conn.total_changes
                conn.execute("INSERT OR IGNORE INTO vectors SELECT model, embed_hash, vector FROM other.vectors")
                return conn.total_changes - before
        finally:
            conn.execute("DETACH DATABASE other")

    def block_vectors_with_keys(self, model: str) -> Iterator[tuple[str, str, str, bytes]]:
        """``(block_id, project_id, embed_hash, vector bytes)`` of every block with a vector for ``model``."""
        return iter(self.conn.execute(
            "SELECT b.block_id, d.project_id, b.embed_hash, v.vector FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash ORDER BY b.rowid",
            (model,),
        ))

    def doc_block_vectors(self, model: str, doc_ids: Sequence[str]) -> list[tuple[str, str, str, str, bytes | None]]:
        """``(block_id, doc_id, project_id, embed_hash, vector bytes or None)`` of every block of ``doc_ids``."""
        marks = ",".join("?" * len(doc_ids))
        return self.conn.execute(
            "SELECT b.block_id, b.doc_id, d.project_id, b.embed_hash, v.vector FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id LEFT JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash"
            f" WHERE b.doc_id IN ({marks}) ORDER BY b.rowid",
            (model, *doc_ids),
        ).fetchall()

    def docs_without_vectors(self, model: str) -> list[str]:
        """Documents with at least one block that has no vector for ``model``."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT b.doc_id FROM blocks b WHERE NOT EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
            (model,),
        )]

    def vector_counts(self, model: str, projects: Sequence[str] | None = None) -> tuple[int, int]:
        """``(blocks with a vector for model, all blocks)``, of the ``projects`` only when given."""
        if projects is None:
            with_vec = self.conn.execute(
                "SELECT COUNT(*) FROM blocks b WHERE EXISTS"
                " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
                (model,),
            ).fetchone()[0]
            return int(with_vec), int(self.conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0])
        marks = ",".join("?" * len(projects))
        of_projects = f"FROM blocks b JOIN documents d ON b.doc_id = d.doc_id WHERE d.project_id IN ({marks})"
        with_vec = self.conn.execute(
            f"SELECT COUNT(*) {of_projects} AND EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
            (*projects, model),
        ).fetchone()[0]
        total = self.conn.execute(f"SELECT COUNT(*) {of_projects}", tuple(projects)).fetchone()[0]
        return int(with_vec), int(total)

    def vector_dim(self, model: str) -> int | None:
        """Dimensions of the vectors stored for ``model`` (None when it has none)."""
        row = self.conn.execute("SELECT length(vector) FROM vectors WHERE model=? LIMIT 1", (model,)).fetchone()
        return None if row is None else int(row[0]) // 4

