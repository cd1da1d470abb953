"""What every lane (retriever) takes and returns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sleuth.text import ParsedQuery
from sleuth.types import RankedList


@dataclass(frozen=True)
class LaneQuery:
    """A lane's input: the parsed query, how many blocks to return at most (``k``), and the
    filters every lane applies *before* its top-k cut (``projects``: project ids, None = all)."""

    parsed: ParsedQuery
    k: int
    projects: tuple[str, ...] | None = None


class Lane(Protocol):
    """A retriever: ``search`` returns at most ``q.k`` blocks, best first, each matching the query."""

    name: str

    def search(self, q: LaneQuery) -> RankedList: ...
