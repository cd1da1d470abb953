"""Step 6 of a search: from fused documents to hits.

The lanes may answer from a slightly older state than the catalog (the postings commit after the
catalog; a lane cache may have been built just before a write). A document deleted since is
dropped and the next one takes its place (the fusion keeps ``FUSED_SPARE_DOCUMENTS`` spares); a
document rewritten since keeps its place, with its matched blocks that still exist, else its
current first block -- it is never dropped only because its block ids changed. The window of a
page (``offset`` then ``limit``) is counted over documents that exist, so pages neither repeat nor
skip a result. Each hit gets its best passages (the best blocks' windows around the query terms,
with highlights), its trace when asked for, what supersedes it, and, with ``details``, its
freshness (one ``stat``) and its extents.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sleuth.freshness import document_freshness
from sleuth.fusion import SUPERSEDES_TRACE, FusedDocument
from sleuth.lanes.graph import is_entity_node
from sleuth.locations import block_location
from sleuth.pathglob import root_label
from sleuth.pipeline.fuse import lane_of
from sleuth.store.catalog import HitBlock
from sleuth.summaries import Snippet, make_snippet
from sleuth.text.analyze import Token, find_terms
from sleuth.types import Hit, LaneContribution, Passage

if TYPE_CHECKING:
    from sleuth.lanes.graph import LinkGraph
    from sleuth.pipeline.corpus import Corpus

#: Documents an entity hit lists as mentioning it.
ENTITY_MENTIONS_SHOWN = 20
#: Formats whose blocks start with a ``#`` heading line that the block's heading path repeats.
_HEADED_FORMATS = frozenset({"markdown", "notebook"})
_HEADING_LINE = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


class Rows:
    """The hit rows and snippets one search has read, so a second look at a block reads nothing."""

    def __init__(self, catalog: Corpus) -> None:
        self.catalog = catalog
        self._blocks: dict[str, HitBlock | None] = {}
        self._snippets: dict[tuple[str, frozenset[str], int], Snippet] = {}
        self._matches: dict[tuple[str, frozenset[str]], list[Token]] = {}

    def blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]:
        """Like :meth:`sleuth.store.catalog.Catalog.hit_blocks`, remembering what was found and what was not."""
        todo = [b for b in block_ids if b not in self._blocks]
        if todo:
            found = self.catalog.hit_blocks(todo)
            self._blocks.update((b, found.get(b)) for b in todo)
        return {b: block for b in block_ids if (block := self._blocks[b]) is not None}

    def matches(self, block: HitBlock, terms: frozenset[str]) -> list[Token]:
        """``find_terms(block.text, terms)``, found once per search (the shown block's choice and
        the snippet both need it)."""
        key = (block.block_id, terms)
        found = self._matches.get(key)
        if found is None:
            found = self._matches[key] = find_terms(block.text, terms)
        return found

    def matched_terms(self) -> frozenset[str]:
        """Every query term :meth:`matches` found in a block this search read: terms held by blocks
        of the projects it searched."""
        return frozenset(token.term for tokens in self._matches.values() for token in tokens)

    def snippet(self, block: HitBlock, terms: frozenset[str], max_chars: int) -> Snippet:
        """``block``'s snippet of at most ``max_chars`` code points around ``terms``, made once per
        search for each block, terms and size (grouped questions show one block around their own
        terms)."""
        key = (block.block_id, terms, max_chars)
        snip = self._snippets.get(key)
        if snip is None:
            snip = self._snippets[key] = make_snippet(block.text, terms, max_chars, self.matches(block, terms))
        return snip


def existing(fused: Sequence[FusedDocument], window: int, rows: Rows,
             keep: Mapping[str, bool] | None = None) -> list[tuple[FusedDocument, HitBlock | None]]:
    """The first ``window`` fused documents that exist now, each with its best block that exists
    now (see the module docstring); entity nodes come with None. ``keep(doc_id)`` may leave nodes
    out (a missing key: kept)."""
    out: list[tuple[FusedDocument, HitBlock | None]] = []
    step = max(window, 1)
    for start in range(0, len(fused), step):
        part = [d for d in fused[start : start + step] if keep is None or keep.get(d.doc_id, True)]
        blocks = rows.blocks([b for d in part if not is_entity_node(d.doc_id) for b in d.block_ids])
        for d in part:
            if is_entity_node(d.doc_id):
                out.append((d, None))
            else:
                alive = [b for b in d.block_ids if b in blocks]
                if not alive:  # rewritten (or deleted) between the lanes' answer and now
                    current = rows.catalog.first_hit_block(d.doc_id)
                    if current is None:
                        continue  # deleted: the next document takes its place
                    blocks[current.block_id] = current
                    rows._blocks[current.block_id] = current  # the same search's cache
                    alive = [current.block_id]
                if alive != d.block_ids:
                    best = d.best_block_id if d.best_block_id in alive else alive[0]
                    d = dataclasses.replace(d, block_ids=alive, best_block_id=best)
                out.append((d, blocks[d.best_block_id]))
            if len(out) == window:
                return out
    return out


def location(block: HitBlock) -> str:
    """Where ``block`` is, for people: its PDF page, its notebook cells, else its lines (see
    :attr:`sleuth.types.Hit.location`)."""
    return block_location(block.kind, block.heading_path, block.start_line, block.end_line)


def _trace(d: FusedDocument) -> list[LaneContribution]:
    """The document's ``--explain`` trace: a lane that repeated another's list names that lane; a
    :data:`SUPERSEDES_TRACE` entry names the document it was moved above (``moved_above``, the k-th such
    entry the k-th of ``d.moved_above``)."""
    repeats = d.repeats or {}
    above = iter(d.moved_above)
    return [LaneContribution.of_fields(lane=t.lane, rank=t.rank, weight=t.weight, contribution=t.contribution,
                                       lane_score=t.lane_score, repeats=repeats.get(t.lane),
                                       moved_above=next(above, None) if t.lane == SUPERSEDES_TRACE else None)
            for t in d.trace]


def _passages(d: FusedDocument, best: HitBlock, rows: Rows, terms: frozenset[str], count: int,
              max_chars: int) -> list[Passage]:
    blocks = [best]
    if count > 1:
        others = [b for b in d.block_ids if b != best.block_id][: count - 1]
        found = rows.blocks(others)
        blocks += [found[b] for b in others if b in found]
    out = []
    for b in blocks:
        snip = rows.snippet(b, terms, max_chars)
        out.append(Passage.of_fields(text=snip.text, start=b.start_char + snip.start, end=b.start_char + snip.end,
                                           highlights=snip.highlights, heading_path=list(b.heading_path)))
    return out


def _body_holds(block: HitBlock, matches: Sequence[Token]) -> bool:
    """Whether ``block``'s own text, beyond its heading lines (markdown and notebook ``#`` headings,
    which the heading path repeats), holds one of the query terms, given where its whole text holds
    them (``matches``, :func:`sleuth.text.analyze.find_terms`: a term's chunk never spans lines)."""
    if not matches or block.kind not in _HEADED_FORMATS:
        return bool(matches)
    start = 0
    for line in block.text.splitlines(keepends=True):
        end = start + len(line)
        if not _HEADING_LINE.match(line) and any(start <= t.start < end for t in matches):
            return True
        start = end
    return False


def shown_block(d: FusedDocument, best: HitBlock, rows: Rows, terms: frozenset[str]) -> tuple[FusedDocument, HitBlock]:
    """The block a hit shows, and ``d`` with that block first: ``best`` (the block that scored
    highest, MaxP) unless its own text (beyond its heading lines) holds none of ``terms`` -- it
    matched through the fields the lexical lanes index beside the text: the document's title, its
    heading path, its path -- and another matching block's does; then the first such block in
    ``d.block_ids`` order. A document found by meaning alone keeps the vector lane's best block.
    Scores and order are untouched: only what is displayed changes (passage, heading path,
    location, block id).

    Args: ``terms``: the analysed query terms (the highlight terms).
    Returns: ``(d, block)``; ``d`` as given when ``best`` is kept.
    """
    if not terms or d.semantic_only or _body_holds(best, rows.matches(best, terms)):
        return d, best
    blocks = rows.blocks(d.block_ids)
    for block_id in d.block_ids:
        block = blocks.get(block_id)
        if block is not None and block_id != best.block_id and _body_holds(block, rows.matches(block, terms)):
            order = [block_id, *(b for b in d.block_ids if b != block_id)]
            return dataclasses.replace(d, block_ids=order, best_block_id=block_id), block
    return d, best


def document_hit(rank: int, d: FusedDocument, block: HitBlock, rows: Rows, terms: frozenset[str], passages: int,
                 passage_max_chars: int, snippets: bool, explain: bool,
                 superseded_by: Mapping[str, set[str]]) -> Hit:
    """The hit of a fused document whose best block is ``block``; with ``snippets``, the block shown
    is :func:`shown_block`'s choice (a block whose own text holds a query word)."""
    if snippets:
        d, block = shown_block(d, block, rows, terms)
    shown = _passages(d, block, rows, terms, passages, passage_max_chars) if snippets else []
    first = shown[0] if shown else None
    # Built from the catalog's and the fusion's own typed values: no validation needed.
    return Hit.of_fields(
        rank=rank, doc_id=d.doc_id, project=block.project_id, path=block.rel_path, title=block.title,
        kind=block.label, format=block.kind, tags=block.tags, score=d.score,
        sources=list(dict.fromkeys(map(lane_of, d.sources))),
        semantic_only=d.semantic_only,
        block_ids=d.block_ids, best_block_id=d.best_block_id, heading_path=list(block.heading_path),
        lines=(block.start_line, block.end_line), location=location(block), snippet=first.text if first else "",
        highlights=first.highlights if first else [], explain=_trace(d) if explain else None,
        root=block.root, root_label=root_label(block.root), role=block.role, family=block.family,
        recorded_ns=block.recorded_ns,
        revision=block.revision, passages=shown, freshness=None, source_length=0, body_chars=0,
        superseded_by=sorted(superseded_by.get(d.doc_id, ())), moved_above=list(d.moved_above), mentioned_by=[],
    )


def entity_hit(rank: int, d: FusedDocument, graph: LinkGraph, titles: Mapping[str, str], explain: bool) -> Hit:
    """The hit of a graph entity: its name, and a one-line summary of the documents mentioning it."""
    node = graph.entities[d.doc_id]
    text = graph.entity_summary(d.doc_id, titles)
    passage = Passage.of_fields(text=text, start=0, end=len(text), highlights=[], heading_path=[])
    return Hit.of_fields(
        rank=rank, doc_id=d.doc_id, project=node.project_id, path="", title=node.name, kind="entity", format="",
        tags=[],
        score=d.score, sources=["graph"], semantic_only=False, block_ids=[], best_block_id="", heading_path=[],
        lines=(0, 0), location="",
        snippet=text, highlights=[], explain=_trace(d) if explain else None, root="", root_label="", role="other",
        family="graph", recorded_ns=0, revision="", passages=[passage], freshness="current",
        source_length=len(text), body_chars=len(text), superseded_by=[], moved_above=[],
        mentioned_by=node.mentioned_by[:ENTITY_MENTIONS_SHOWN],
    )


def add_details(hits: list[Hit], rows: Rows) -> None:
    """Fill ``freshness`` (one ``stat`` per file), ``source_length`` and ``body_chars`` of document hits."""
    docs = [h for h in hits if h.family != "graph"]
    extents = rows.catalog.body_extents([h.doc_id for h in docs])
    blocks = rows.blocks([h.best_block_id for h in docs])
    for h in docs:
        length, body_start, body_end = extents.get(h.doc_id, (0, 0, 0))
        h.source_length, h.body_chars = length, body_end - body_start
        b = blocks.get(h.best_block_id)
        if b is not None:
            h.freshness = document_freshness(b.root, b.rel_path, b.mtime_ns, b.size_bytes, b.content_hash,
                                             b.indexed_at)
