"""What the search pipeline reads of a corpus besides its lanes, and a corpus of texts held in memory.

The catalog (:class:`sleuth.store.catalog.Catalog`) is a :class:`Corpus`; so is :class:`TextCorpus`,
the texts one ``search_documents`` / ``search_index_query`` call passes in, which the same pipeline
ranks with an in-memory tf-idf lane (:class:`TextTfidfLane`). Pure: nothing is stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sleuth.lanes.base import LaneBase, LaneQuery
from sleuth.lanes.tfidf import TfidfModel
from sleuth.store.catalog import HitBlock
from sleuth.text import analyze
from sleuth.types import RankedList

#: The project id of the texts of a :class:`TextCorpus`.
TEXTS_PROJECT = "texts"


class Corpus(Protocol):
    """The reads the pipeline makes: projects, filters, hit rows, extents and the generation."""

    def roots(self) -> dict[str, list[str]]: ...

    def kind_labels(self, projects: Sequence[str] | None = None) -> list[str]: ...

    def filter_documents(self, projects: Sequence[str] | None, labels: Sequence[str] = (),
                         roles: Sequence[str] = (), families: Sequence[str] = (),
                         recorded_after_ns: int | None = None, recorded_before_ns: int | None = None,
                         paths: Sequence[str] = (), tags: Sequence[str] = ()) -> set[str]: ...

    def has_blocks(self) -> bool: ...

    def documents(self, doc_ids: Sequence[str]) -> Mapping[str, Any]: ...

    def hit_blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]: ...

    def first_hit_block(self, doc_id: str) -> HitBlock | None: ...

    def body_extents(self, doc_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]: ...

    def generation(self) -> int: ...


def text_doc_id(position: int) -> str:
    """The document id of the text at ``position`` (zero-padded, so ids sort by position)."""
    return f"{position:08d}"


@dataclass(frozen=True)
class _Title:
    title: str


class TextCorpus:
    """Texts passed in, as a corpus: text ``i`` is document :func:`text_doc_id(i) <text_doc_id>`
    with one block, ``<doc_id>:0``, holding the whole text."""

    def __init__(self, texts: Sequence[str]) -> None:
        self.texts = list(texts)

    def _block(self, i: int) -> HitBlock:
        text = self.texts[i]
        doc_id = text_doc_id(i)
        return HitBlock(f"{doc_id}:0", doc_id, (), text, 1, text.count("\n") + 1, TEXTS_PROJECT, str(i), "",
                        [], "text", 0, len(text), "", "other", "document", "document", 0, "", 0, len(text), "", "")

    def _position(self, doc_or_block_id: str) -> int | None:
        head = doc_or_block_id.partition(":")[0]
        if not head.isdigit() or len(head) != 8:
            return None
        i = int(head)
        return i if i < len(self.texts) else None

    def roots(self) -> dict[str, list[str]]:
        return {TEXTS_PROJECT: []}

    def kind_labels(self, projects: Sequence[str] | None = None) -> list[str]:
        return ["document"]

    def filter_documents(self, projects: Sequence[str] | None, labels: Sequence[str] = (),
                         roles: Sequence[str] = (), families: Sequence[str] = (),
                         recorded_after_ns: int | None = None, recorded_before_ns: int | None = None,
                         paths: Sequence[str] = (), tags: Sequence[str] = ()) -> set[str]:
        return {text_doc_id(i) for i in range(len(self.texts))}

    def has_blocks(self) -> bool:
        return bool(self.texts)

    def documents(self, doc_ids: Sequence[str]) -> dict[str, Any]:
        return {d: _Title("") for d in doc_ids if self._position(d) is not None}

    def hit_blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]:
        out = {}
        for b in block_ids:
            i = self._position(b)
            if i is not None and b.endswith(":0"):
                out[b] = self._block(i)
        return out

    def first_hit_block(self, doc_id: str) -> HitBlock | None:
        i = self._position(doc_id)
        return None if i is None else self._block(i)

    def body_extents(self, doc_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        out = {}
        for d in doc_ids:
            i = self._position(d)
            if i is not None:
                out[d] = (len(self.texts[i]), 0, len(self.texts[i]))
        return out

    def generation(self) -> int:
        return 0


class TextTfidfLane(LaneBase):
    """The tf-idf lane over a :class:`TextCorpus` (the engine's own model, built in memory)."""

    name = "tfidf"

    def __init__(self, corpus: TextCorpus) -> None:
        self.model = TfidfModel((f"{text_doc_id(i)}:0", TEXTS_PROJECT, " ".join(analyze(text)))
                                for i, text in enumerate(corpus.texts))

    def search(self, q: LaneQuery) -> RankedList:
        if not q.parsed.terms or len(self.model) == 0:
            return RankedList(self.name, (), ())
        rows, scores = self.model.matching(q.parsed.terms)
        order = sorted(range(len(rows)), key=lambda j: (-float(scores[j]), int(rows[j])))[: q.k]
        return RankedList(self.name, tuple(str(self.model.block_ids[rows[j]]) for j in order),
                          tuple(float(scores[j]) for j in order))
