"""Load a judged retrieval dataset stored in the BEIR directory layout.

Layout (Thakur et al., "BEIR: A Heterogeneous Benchmark for Zero-shot Evaluation of Information
Retrieval Models", NeurIPS Datasets & Benchmarks 2021; https://github.com/beir-cellar/beir)::

    <name>/corpus.jsonl  or  corpus.jsonl.gz   {"_id": str, "title": str (optional), "text": str}
    <name>/queries.jsonl                       {"_id": str, "text": str}
    <name>/qrels.tsv                           header "query-id<TAB>corpus-id<TAB>score", then rows
                                               of graded integer relevance (0 = judged not relevant)

Only queries that occur in ``qrels.tsv`` are kept (``queries.jsonl`` may hold more, e.g. train
queries). Ids are strings (integer ids in JSON are converted). Blank lines are skipped. A missing
file, a malformed line, a duplicate id or qrels pair, or a qrels query absent from
``queries.jsonl`` raises :class:`DatasetError` naming the file and, where there is one, the line.
Qrels that point at doc ids absent from the corpus are kept as they are (a run can never retrieve
them, which is what the published numbers assume too).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sleuth.eval.metrics import Qrels

__all__ = ["BeirDataset", "CorpusDoc", "DatasetError", "load_beir"]

QRELS_HEADER = ("query-id", "corpus-id", "score")


class DatasetError(ValueError):
    """A dataset directory is missing a file or holds a malformed line."""


@dataclass(frozen=True)
class CorpusDoc:
    """One corpus document; ``title`` is ``""`` when the source has none."""

    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class BeirDataset:
    """A loaded dataset: ``corpus`` in file order, ``queries`` ``{query_id: text}`` restricted to
    the queries in ``qrels``, ``qrels`` ``{query_id: {doc_id: grade}}`` with every judged row
    (including grade 0). ``name`` is the directory name."""

    name: str
    corpus: list[CorpusDoc]
    queries: dict[str, str]
    qrels: Qrels


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line number, line without its newline)`` of a UTF-8 text file, gzip-
    decompressed when the name ends in ``.gz``; skips blank lines. Decoding errors become
    :class:`DatasetError`."""
    lineno = 0
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.rstrip("\r\n")
                if line.strip():
                    yield lineno, line
    except FileNotFoundError as exc:
        raise DatasetError(f"{path}: file not found") from exc
    except (UnicodeDecodeError, gzip.BadGzipFile, EOFError, OSError) as exc:
        raise DatasetError(f"{path}:{lineno + 1}: cannot read: {exc}") from exc


def _string_field(obj: dict[str, object], key: str, where: str, *, required: bool = True) -> str:
    """``obj[key]`` as a string; ints are accepted for ``_id``; missing/None -> "" if optional."""
    value = obj.get(key)
    if value is None:
        if required:
            raise DatasetError(f"{where}: missing field {key!r}")
        return ""
    if key == "_id" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise DatasetError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    if key == "_id" and not value:
        raise DatasetError(f"{where}: empty '_id'")
    return value


def _jsonl(path: Path) -> Iterator[tuple[str, dict[str, object]]]:
    """Yield ``("<path>:<line>", object)`` for each non-blank line of a JSON-lines file."""
    for lineno, line in _lines(path):
        where = f"{path}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: invalid JSON: {exc.msg}") from exc
        if not isinstance(obj, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        yield where, obj


def _corpus_path(directory: Path) -> Path:
    plain, gz = directory / "corpus.jsonl", directory / "corpus.jsonl.gz"
    if plain.is_file() and gz.is_file():
        raise DatasetError(f"{directory}: both corpus.jsonl and corpus.jsonl.gz exist; keep one")
    if gz.is_file():
        return gz
    if plain.is_file():
        return plain
    raise DatasetError(f"{directory}: file not found: corpus.jsonl or corpus.jsonl.gz")


def load_corpus(path: Path) -> list[CorpusDoc]:
    """Read ``corpus.jsonl[.gz]`` into a list of :class:`CorpusDoc`, in file order."""
    docs: list[CorpusDoc] = []
    seen: set[str] = set()
    for where, obj in _jsonl(path):
        doc_id = _string_field(obj, "_id", where)
        if doc_id in seen:
            raise DatasetError(f"{where}: duplicate doc id {doc_id!r}")
        seen.add(doc_id)
        title = _string_field(obj, "title", where, required=False)
        text = _string_field(obj, "text", where)
        docs.append(CorpusDoc(doc_id=doc_id, title=title, text=text))
    return docs


def load_queries(path: Path) -> dict[str, str]:
    """Read ``queries.jsonl`` into ``{query_id: text}`` (all queries, in file order)."""
    queries: dict[str, str] = {}
    for where, obj in _jsonl(path):
        qid = _string_field(obj, "_id", where)
        if qid in queries:
            raise DatasetError(f"{where}: duplicate query id {qid!r}")
        queries[qid] = _string_field(obj, "text", where)
    return queries


def load_qrels(path: Path) -> Qrels:
    """Read ``qrels.tsv`` (header ``query-id<TAB>corpus-id<TAB>score``) into
    ``{query_id: {doc_id: grade}}``; every row is kept, including grade 0 and negative grades."""
    qrels: Qrels = {}
    header_seen = False
    for lineno, line in _lines(path):
        where = f"{path}:{lineno}"
        fields = [f.strip() for f in line.split("\t")]
        if not header_seen:
            if tuple(fields) != QRELS_HEADER:
                raise DatasetError(f"{where}: expected header {'<TAB>'.join(QRELS_HEADER)!r}, got {line!r}")
            header_seen = True
            continue
        if len(fields) != 3:
            raise DatasetError(f"{where}: expected 3 tab-separated fields, got {len(fields)}: {line!r}")
        qid, doc_id, score = fields
        if not qid or not doc_id:
            raise DatasetError(f"{where}: empty query-id or corpus-id: {line!r}")
        try:
            grade = int(score)
        except ValueError as exc:
            raise DatasetError(f"{where}: score must be an integer, got {score!r}") from exc
        judgments = qrels.setdefault(qid, {})
        if doc_id in judgments:
            raise DatasetError(f"{where}: duplicate judgment for ({qid!r}, {doc_id!r})")
        judgments[doc_id] = grade
    if not header_seen:
        raise DatasetError(f"{path}: empty file (no header)")
    return qrels


def load_beir(path: Path) -> BeirDataset:
    """Load the BEIR-layout dataset in directory ``path`` (see the module docstring).

    ``queries`` keeps only the queries judged in ``qrels.tsv``, in ``queries.jsonl`` order."""
    path = Path(path)
    if not path.is_dir():
        raise DatasetError(f"{path}: dataset directory not found")
    corpus = load_corpus(_corpus_path(path))
    queries_path = path / "queries.jsonl"
    qrels_path = path / "qrels.tsv"
    all_queries = load_queries(queries_path)
    qrels = load_qrels(qrels_path)
    missing = [qid for qid in qrels if qid not in all_queries]
    if missing:
        shown = ", ".join(repr(q) for q in missing[:5])
        raise DatasetError(
            f"{qrels_path}: {len(missing)} judged query id(s) not in {queries_path.name}: {shown}"
        )
    queries = {qid: text for qid, text in all_queries.items() if qid in qrels}
    return BeirDataset(name=path.name, corpus=corpus, queries=queries, qrels=qrels)
