"""Shared data types: what ingestion produces, what the catalog stores, what a search returns.

Internal pipeline records are frozen dataclasses (cheap, hashable); everything that crosses an
interface (Python API, CLI ``--format json``, MCP structured output) is a pydantic model, so one
response model serves all three.
"""

from __future__ import annotations

import unicodedata
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from sleuth.doc_types import (  # noqa: F401 - re-exported: the records live there, without pydantic
    Block,
    BlockDraft,
    DocumentKind,
    LaneName,
    Link,
    ParsedDocument,
    RankedList,
    SkippedFile,
    SourceFile,
)

# --------------------------------------------------------------------------- API models


class Model(BaseModel):
    """Base of the API models: validators are built on first use, not at import (faster start)."""

    model_config = ConfigDict(defer_build=True)

    @classmethod
    def of_fields(cls, **values: Any) -> Self:
        """An instance from trusted values of every field, already of their types, unvalidated: as
        ``model_construct`` with every field given, without its per-field alias and default look-ups
        (hits, passages and traces are built for every result of every search).

        Raises:
            TypeError: a field is missing, or a name is not a field.
        """
        fields = cls.__pydantic_fields__
        if values.keys() != fields.keys():
            raise TypeError(f"{cls.__name__}.of_fields needs every field, exactly: missing "
                            f"{sorted(fields.keys() - values.keys())}, unknown {sorted(values.keys() - fields.keys())}")
        m = cls.__new__(cls)
        _set = object.__setattr__
        _set(m, "__dict__", {name: values[name] for name in fields})
        _set(m, "__pydantic_fields_set__", set(fields))
        _set(m, "__pydantic_extra__", None)
        _set(m, "__pydantic_private__", None)
        return m



class RequestModel(Model):
    """Base of what a caller sends (a search request, its filters and questions): a field it does
    not have is an error, not ignored (``limt=5`` searched with the default limit, silently)."""

    model_config = ConfigDict(defer_build=True, extra="forbid")


class LaneContribution(Model):
    """How one lane contributed to a fused document score (``--explain``)."""

    lane: str = Field(description="Lane (retriever) name, e.g. bm25")
    rank: int = Field(description="1-based rank of the document in that lane's grouped list")
    weight: float = Field(description="The lane's fusion weight (0: the lane repeated another lane's list)")
    contribution: float = Field(
        description="What the lane adds: weight x z-score (zscore), weight x min-max score (convex) or "
                    "weight / (k + rank) (rrf); the contributions sum to the score (with the 'supersedes' "
                    "entry's, see moved_above)")
    lane_score: float = Field(description="The lane's own score of the document's best block")
    repeats: str | None = Field(default=None, description="The lane whose list of documents this lane's repeated "
                                "exactly: not counted (weight 0, contribution 0, its weight given to the other "
                                "lanes of its family); None for a lane that counts")
    moved_above: str | None = Field(default=None, description=(
        "Set on the entry of lane 'supersedes' only, which is no lane's: the id of a document this one "
        "supersedes, which it was moved just above. That entry's rank is the place it took, its weight 1, "
        "its contribution what raised its score to the superseded document's (0 when it was not lower), "
        "its lane_score that document's score"))


class Passage(Model):
    """A window of a document shown with a hit: ``text`` = document text[start:end] (code points)."""

    text: str
    start: int = Field(description="Offset of the passage in the document's text, in code points")
    end: int = Field(description="End (exclusive) of the passage in the document's text, in code points")
    highlights: list[tuple[int, int]] = Field(
        default_factory=list, description="Matched-term spans in the passage text, [start, end) in code points")
    heading_path: list[str] = Field(default_factory=list, description="Headings above the passage")


class Hit(Model):
    """One ranked document (or graph entity) in a search response."""

    rank: int = Field(description="1-based final rank; lower is better")
    doc_id: str = Field(description="Stable document id (derived from project and path); an entity's node id")
    project: str = Field(description="Project id the document belongs to")
    path: str = Field(description="Path of the document relative to its root, forward slashes")
    title: str
    kind: str = Field(description="The document's kind, one vocabulary everywhere (sleuth.ingest.roles.KINDS): "
                      "document, note, paper, decision, plan, experiment, result, log, code, notebook, config; "
                      "entity for a graph entity")
    format: str = Field(default="", description="The file format the document was read from: markdown, notebook, "
                        "code, text, pdf or config (empty for a graph entity)")
    tags: list[str] = Field(default_factory=list)
    score: float = Field(description="Fused score (z-score fusion by default); for ordering, not a probability")
    sources: list[str] = Field(description="Lanes that returned at least one block of this document")
    semantic_only: bool = Field(
        default=False,
        description="Found by the vector lane alone: similar in meaning, not among the word-matching lanes' "
                    "results (it may still hold a word of the query)",
    )
    block_ids: list[str] = Field(description="All matching blocks of the document, best first (the shown block "
                                 "first: see best_block_id)")
    best_block_id: str = Field(description="The block shown (snippet, heading path, lines): the block that scored "
                               "highest, unless it matched only through the title, headings or path and another "
                               "matching block's own text holds a query word; then that block")
    heading_path: list[str] = Field(default_factory=list, description="Headings above the best block")
    lines: tuple[int, int] = Field(description="1-based inclusive line span of the best block in the document's "
                                   "text (a notebook's rendered cells, a PDF's text layer)")
    location: str = Field(default="", description="Where the best block is, for people: 'page 15' (PDF), "
                          "'cell 4' or 'cells 4-6' (notebook), 'lines 10-24' (other files)")
    snippet: str = Field(default="", description="Passage of the best block around the query terms")
    highlights: list[tuple[int, int]] = Field(
        default_factory=list,
        description="Matched-term spans in the snippet, [start, end) offsets in code points",
    )
    explain: list[LaneContribution] | None = Field(
        default=None, description="Per-lane ranks and contributions (only when requested)"
    )
    root: str = Field(default="", description="The project root the path is relative to")
    root_label: str = Field(default="", description="The root's folder name; shown before the path when the "
                            "project has several roots (en/publish.css, ja/publish.css)")
    role: str = Field(default="other", description="Role of the document (seed 004's roles)")
    family: str = Field(default="document", description="Source family: document, code or graph")
    recorded_ns: int = Field(default=0, description="Recorded time, nanoseconds since the epoch: the document's "
                             "date, else its file's modification time (0: the epoch for a file, no time for a "
                             "record given as text)")
    revision: str = Field(default="", description="Changes whenever the document's content changes")
    passages: list[Passage] = Field(default_factory=list, description="Best passages, best first")
    freshness: str | None = Field(default=None, description="current or stale (the file changed since it was "
                                  "indexed), when asked for")
    source_length: int = Field(default=0, description="Characters of the document's text (when asked for)")
    body_chars: int = Field(default=0, description="Characters of the document's body, what its blocks cover "
                            "(when asked for)")
    superseded_by: list[str] = Field(default_factory=list, description="Documents in the results' index that "
                                     "replace this one")
    moved_above: list[str] = Field(default_factory=list, description="Documents this one supersedes that "
                                   "ranked above it: it was moved to just above each, its score raised to at "
                                   "least theirs (explain has a 'supersedes' entry for each)")
    mentioned_by: list[str] = Field(default_factory=list, description="Documents mentioning this entity")


#: Largest ``SearchRequest.offset`` and ``rank_window``, in documents.
OFFSET_MAX = 10_000
RANK_WINDOW_MAX = 11_000
#: The step a rank window grows by, in documents: a search ranks its pages' offset + limit (or its
#: ``rank_window``, when larger) rounded up to a multiple of this (sleuth.pipeline.plan.rank_window).
#: So every surface (CLI, Python API, MCP, eval) ranks the same lane lists for one query at any limit
#: within a step, and pages within a step neither repeat nor skip a result (docs/EVAL.md, "One rank
#: window for every surface").
RANK_WINDOW_STEP_DOCS = 100
#: Globs a path filter may hold.
PATH_GLOBS_MAX = 50


class SearchFilters(RequestModel):
    """Filters every lane applies before its top-k (empty lists and None: no filter)."""

    kinds: list[str] = Field(default_factory=list, description="Kinds (see Hit.kind); entity: graph entities")
    roles: list[str] = Field(default_factory=list)
    families: list[str] = Field(default_factory=list, description="Source families: document, code, graph")
    recorded_after_ns: int | None = Field(default=None, description="Inclusive, nanoseconds since the epoch")
    recorded_before_ns: int | None = Field(default=None, description="Inclusive, nanoseconds since the epoch")
    paths: list[str] = Field(default_factory=list, max_length=PATH_GLOBS_MAX, description=(
        "Gitignore-style globs (`*.md`, `docs/**`, `!drafts/`), matched against the path relative to its "
        "root and against `<root label>/<path>`; a document matches when the globs select it (a later "
        "`!glob` deselects). Graph entities have no path: a path filter leaves them out"))
    tags: list[str] = Field(default_factory=list, description="Documents carrying at least one of these tags "
                            "(case-insensitive); graph entities are left out")

    @property
    def narrows(self) -> bool:
        """True when the filters restrict documents beyond their project."""
        return bool(self.kinds or self.roles or self.families or self.recorded_after_ns is not None
                    or self.recorded_before_ns is not None or self.paths or self.tags)


#: The most documents one search may ask for (as Elasticsearch's ``index.max_result_window``): the
#: text tools' ``top_k`` reaches it over as many passed-in documents (sleuth.textsearch.bounds).
SEARCH_LIMIT_MAX = 10_000
#: Most variants of one question, and most questions of one search (as project_memory_search's
#: ``query_variants`` and ``queries``): each variant runs every lane (and embeds its text), so a
#: search of 10,000 variants from the CLI or the Python API would have run for minutes.
SEARCH_VARIANTS_MAX = 19
SEARCH_QUESTIONS_MAX = 20


class Question(RequestModel):
    """One independent question of a grouped search: its id, text, result limit and variants."""

    id: str = ""
    query: str
    limit: int = Field(default=20, ge=1, le=SEARCH_LIMIT_MAX)
    variants: list[str] = Field(default_factory=list, max_length=SEARCH_VARIANTS_MAX)


#: The project that holds records filed without a project (``project_memory_record``); a search of
#: every project leaves it out where seed 004 says so (``all_projects``, ``sleuth search`` without
#: ``--project``: :attr:`SearchRequest.inbox`).
INBOX_PROJECT_ID = "inbox"


def inbox_note(records: int) -> str:
    """The notice that a search of every project left the Inbox's ``records`` documents out."""
    return (f"the {INBOX_PROJECT_ID} project ({records:,} record(s) filed without a project) is left out of a"
            f" search of every project; name it to search it (--project {INBOX_PROJECT_ID})")

#: The punctuation a project id keeps, besides letters and digits of any script (:meth:`str.isalnum`)
#: and the marks written on those of other scripts than Latin (Devanagari's vowel signs and virama).
_PROJECT_ID_MARKS = "._-"
#: Letters in Unicode's eyes that show as blank space (Hangul fillers): separators in an id.
_PROJECT_ID_BLANKS = frozenset("\u115f\u1160\u3164\uffa0")
#: Passes of the folding in :func:`project_id_for` before it gives up on a fixed point (one or two
#: suffice: casefolding can give a character that composes again, e.g. ``"ǰ"``).
_PROJECT_ID_FOLD_PASSES = 4
#: The longest id of a project being made, in UTF-8 bytes: it names a folder
#: (``<index>/memory/<id>``: 255 bytes at most on common file systems) and a Milvus VARCHAR of 256.
PROJECT_ID_MAX_BYTES = 200


def _fold_char(ch: str) -> str:
    """One character of a casefolded name: its compatibility decomposition without accents when
    that is ASCII (``"ü"`` → ``"u"``, ``"ﬁ"`` → ``"fi"``, ``"Ｉ"`` → ``"i"``, ``"²"`` → ``"2"``), else
    its NFKC form: accents of other scripts stay (``"ガ"`` is not ``"カ"``, ``"й"`` not ``"и"``)."""
    if ch.isascii():
        return ch
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c))
    return base if base and base.isascii() else unicodedata.normalize("NFKC", ch)


def _fold_project_name(name: str) -> str:
    """``name`` casefolded, NFC-composed, each character folded (:func:`_fold_char`), NFC again."""
    folded = "".join(map(_fold_char, unicodedata.normalize("NFC", name.casefold())))
    return unicodedata.normalize("NFC", folded)


def project_id_for(name: str, max_bytes: int | None = None) -> str:
    """A project id from a name: casefolded, Latin accents folded (``"Müller"`` → ``"muller"``, so
    that ``Müller`` and ``Möller`` are two projects; a mark left on an ASCII letter is dropped),
    letters and digits of other scripts kept with their marks (``"Проект"`` → ``"проект"``,
    ``"हिन्दी"`` and ``"ガス"`` as they are), each run of other characters (``.``, ``_`` and ``-``
    aside) made one ``-``, and ``-`` and ``.`` stripped at both ends. Idempotent: an id is its own id.
    Here, not in :mod:`sleuth.indexer`, so that a command answered by the broker loads no indexing code.

    Args:
        max_bytes: the longest id allowed, in UTF-8 bytes (a project being made:
            :data:`PROJECT_ID_MAX_BYTES`); None: any (a name read to find a project).
    Raises:
        QueryError: nothing usable is left of ``name``, or its id is longer than ``max_bytes``.
    """
    folded = name.strip()
    for _ in range(_PROJECT_ID_FOLD_PASSES):
        again = _fold_project_name(folded)
        if again == folded:
            break
        folded = again
    out: list[str] = []
    in_run = False  # inside a run of other characters, made one "-"
    for ch in folded:
        if ch in _PROJECT_ID_BLANKS:
            pass
        elif ch.isalnum() or ch in _PROJECT_ID_MARKS:
            out.append(ch)
            in_run = False
            continue
        elif unicodedata.category(ch).startswith("M") and out and (
                out[-1].isalnum() or unicodedata.category(out[-1]).startswith("M")):
            if not out[-1].isascii():  # a mark on a letter of another script (or on its mark): part of it
                out.append(ch)
            continue  # on an ASCII letter or digit: an accent, folded away
        if not in_run:
            out.append("-")
            in_run = True
    pid = "".join(out).strip("-.")
    if not pid or (max_bytes is not None and len(pid.encode("utf-8")) > max_bytes):
        from sleuth.errors import QueryError

        why = ("it needs a letter or digit ('.', '_' and '-' may join them)" if not pid
               else f"a project id holds at most {max_bytes} bytes of UTF-8")
        raise QueryError(f"invalid project name {name[:80]!r}{'...' if len(name) > 80 else ''}: {why}")
    return pid


class SearchRequest(RequestModel):
    """A search over one or more projects of an index (one query, or grouped ``questions``)."""

    query: str = ""
    projects: list[str] | None = Field(default=None, description="Project ids; None = every project")
    inbox: bool = Field(default=True, description=f"With projects None: the Inbox ({INBOX_PROJECT_ID!r}, records"
                        " filed without a project) too; False leaves it out, as project_memory_search's all_projects"
                        " does (seed 004)")
    limit: int = Field(default=20, ge=1, le=SEARCH_LIMIT_MAX, description="Maximum number of documents")
    offset: int = Field(default=0, ge=0, le=OFFSET_MAX, description="Results skipped before the first one "
                        "returned (ranks continue from offset + 1)")
    rank_window: int | None = Field(default=None, ge=1, le=RANK_WINDOW_MAX, description=(
        "Documents the ranking is computed for (each lane's depth follows it), at least offset + limit; "
        f"None: offset + limit. Either is rounded up to a multiple of {RANK_WINDOW_STEP_DOCS}, so pages "
        f"within each {RANK_WINDOW_STEP_DOCS} results, or within one rank_window, neither repeat nor skip a "
        "result"))
    lanes: list[str] | None = Field(default=None, description="Lanes to run; None = the configured ones")
    explain: bool = False
    snippets: bool = Field(default=True, description="Compute snippets and highlights (off for evaluation)")
    variants: list[str] = Field(default_factory=list, max_length=SEARCH_VARIANTS_MAX,
                                description="Other wordings of the query, fused with it")
    auto_variants: bool = Field(default=True, description="Add the query's code identifiers and quoted "
                                "phrases as variants")
    questions: list[Question] | None = Field(default=None, max_length=SEARCH_QUESTIONS_MAX,
                                             description="Independent questions answered as groups (instead of query)")
    filters: SearchFilters = Field(default_factory=SearchFilters)
    deadline_ms: int | None = Field(default=None, ge=1, description="Lanes that have not answered by then are "
                                    "left out (degraded); None: wait for every lane")
    entities: bool = Field(default=True, description="Graph entities may be results")
    passages: int = Field(default=1, ge=1, le=10, description="Passages per hit (its best blocks)")
    passage_max_chars: int = Field(default=280, ge=20, le=10_000, description="Characters per passage")
    details: bool = Field(default=False, description="Also fill freshness, source_length and body_chars")
    request_id: str | None = Field(default=None, description="Id under which the running request can be "
                                   "followed and cancelled")


class QuestionAnswer(Model):
    """The answer to one question of a search."""

    id: str = ""
    query: str
    variants: list[str] = Field(default_factory=list, description="The query and the variants run, primary first")
    hits: list[Hit]


class SearchResponse(Model):
    """The answer to a SearchRequest: documents best first, plus what was run."""

    query: str
    terms: list[str] = Field(description="Normalised query terms the lanes searched for")
    phrases: list[str] = Field(default_factory=list, description="Quoted phrases required verbatim")
    result_count: int
    hits: list[Hit]
    lanes: list[str] = Field(description="Lanes that were run")
    took_ms: float = Field(description="Wall-clock time of the search in milliseconds")
    notice: str | None = Field(default=None, description="Why the result is empty, when sleuth knows")
    unavailable_lanes: dict[str, str] = Field(
        default_factory=dict, description="Requested lanes that could not run, with the reason"
    )
    degraded_lanes: list[str] = Field(default_factory=list, description="Lanes that missed the deadline")
    failed_lanes: dict[str, str] = Field(default_factory=dict, description="Lanes that failed, with the error")
    skipped_lanes: dict[str, str] = Field(default_factory=dict, description="Lanes with nothing to look for")
    cut_short: dict[str, str] = Field(default_factory=dict, description=(
        "Phases after retrieval the deadline cut short, with what was left out: 'fusion' (questions ranked "
        "from their primary query's lanes alone), 'summaries' (results without passages or snippets); "
        "empty: a complete answer"))
    word_notice: str | None = Field(default=None, description="That no word of the query occurs in the "
                                    "searched documents, when none does (results are then meaning matches); "
                                    "else the query words no indexed document holds, when some matched")
    questions: list[QuestionAnswer] = Field(default_factory=list, description="Every question's answer (one "
                                            "for a plain query, whose hits are also in hits)")
    projects: list[str] = Field(default_factory=list, description="Projects searched (None asked: all)")
    inbox_left_out: int = Field(default=0, description="Documents of the inbox project (records filed without a "
                                "project) that a search of every project left out; named in notice")
    request_id: str | None = None

    _index_notes: list[str] = PrivateAttr(default_factory=list)

    @property
    def index_notes(self) -> list[str]:
        """The notes of ``notice`` about the index as a whole, not the searched projects (an indexing
        run in progress, postings not written, a Milvus sync): left out of what a caller limited to
        some projects is shown (:mod:`sleuth.memory.search`). Not part of the JSON."""
        return self._index_notes


class ProjectInfo(Model):
    project_id: str
    name: str
    roots: list[str]
    documents: int
    blocks: int
    last_indexed: str | None = Field(description="RFC 3339 UTC time of the last index run")


class DocumentContent(Model):
    """A whole stored document (``sleuth get``, ``get_notebook``)."""

    doc_id: str
    project: str
    path: str
    root: str
    root_label: str = Field(default="", description="The root's folder name (see Hit.root_label)")
    title: str
    kind: str = Field(description="The document's kind (see Hit.kind)")
    format: str = Field(default="", description="The file format (see Hit.format)")
    role: str = Field(default="other", description="The document's role (seed 004's roles)")
    recorded_at: str | None = Field(default=None, description="RFC 3339 UTC time the document records "
                                    "(its date, else the file's modification time)")
    status: str | None = Field(default=None, description="A decision record's status (accepted, superseded, ...)"
                               ", when it states one")
    tags: list[str]
    front_matter: dict[str, object]
    mtime: str = Field(description="RFC 3339 UTC modification time of the file when indexed")
    revision: str = Field(description="Changes whenever the document's content changes")
    content_hash: str
    text: str
    blocks: list[dict[str, object]]


class IndexReport(Model):
    """What one ``index`` run did."""

    project: str
    roots: list[str]
    scanned: int = Field(
        description="Files (and archive members) found under the roots after ignore rules, skipped ones included"
    )
    added: int
    updated: int
    unchanged: int
    removed: int
    skipped: list[dict[str, str]] = Field(description="[{path, reason}] files not indexed")
    problems: list[dict[str, str]] = Field(description="[{path, problem}] indexed with a warning")
    blocks: int = Field(description="Blocks written in this run")
    embedded: int = Field(default=0, description="Blocks embedded in this run (vectors not already cached)")
    took_s: float
    merged_roots: list[str] = Field(default_factory=list, description=(
        "The project's roots inside a root of this run that its walk reaches, taken into it (their files "
        "filed under it from now on: counted as added, not as removed)"))
    shared_roots: list[str] = Field(default_factory=list, description=(
        "Roots of other projects inside (or holding) a root of this run: their files are in both projects"))
    forgotten_roots: list[str] = Field(default_factory=list, description=(
        "Roots of this run that no longer exist (renamed or deleted): their documents removed, the root"
        " taken out of the project"))
    project_removed: bool = Field(default=False, description=(
        "The project had no root and no document left after this run (its last root gone), so it was removed"))
    name_taken_by: list[str] = Field(default_factory=list, description=(
        "Without a project named: 'project: root' of each folder of the project that has this folder's "
        "name (this folder's project is then named after its parent folder too, e.g. 'home-notes'); "
        "empty otherwise"))
    joined_roots: list[str] = Field(default_factory=list, description=(
        "Without a project named: the roots this run added to a project that had roots before, chosen by "
        "another of its paths (the first path's project); empty otherwise"))
    stale_grants: list[str] = Field(default_factory=list, description=(
        "Users of `sleuth serve --http` who still hold a grant on the id of the project this run made (a "
        "project of that id was removed before): they may search it; empty otherwise"))
    grants_unchecked: str = Field(default="", description=(
        "Why the users file could not be read when this run made a new project (its id may be one users "
        "still hold a grant on, unchecked); empty otherwise"))
    gone_roots: list[str] = Field(default_factory=list, description=(
        "'project: root' of every root of the index that no longer exists (renamed or deleted): its "
        "documents stay, marked stale, until it is indexed again (which removes them) or its project removed"))
