"""BEIR loader tests: small hand-written datasets in tmp_path, and the shared judged sets."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest

from sleuth.eval import BeirDataset, CorpusDoc, DatasetError, load_beir

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"

CORPUS = [
    {"_id": "d1", "title": "First", "text": "alpha beta"},
    {"_id": "d2", "text": "no title here"},
    {"_id": 3, "title": "", "text": "integer id"},
    {"_id": "d4", "title": None, "text": "null title"},
]
QUERIES = [
    {"_id": "q1", "text": "alpha?"},
    {"_id": "q2", "text": "unjudged (train) query"},
    {"_id": "q3", "text": "beta?"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\n\nq3\t3\t1\n"


def write_jsonl(path: Path, objs: list[dict[str, object]], *, gz: bool = False, blank: bool = True) -> None:
    text = "".join(json.dumps(o) + "\n" + ("\n" if blank else "") for o in objs)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as fh:
            fh.write(text)
    else:
        path.write_text(text, encoding="utf-8")


def make_dataset(root: Path, name: str = "tiny", *, gz: bool = False) -> Path:
    d = root / name
    d.mkdir()
    write_jsonl(d / ("corpus.jsonl.gz" if gz else "corpus.jsonl"), CORPUS, gz=gz)
    write_jsonl(d / "queries.jsonl", QUERIES)
    (d / "qrels.tsv").write_text(QRELS, encoding="utf-8")
    return d


# --------------------------------------------------------------------------- small datasets


@pytest.mark.parametrize("gz", [False, True])
def test_load_small_dataset(tmp_path: Path, gz: bool) -> None:
    ds = load_beir(make_dataset(tmp_path, "tiny-set", gz=gz))
    assert isinstance(ds, BeirDataset)
    assert ds.name == "tiny-set"
    assert ds.corpus == [
        CorpusDoc("d1", "First", "alpha beta"),
        CorpusDoc("d2", "", "no title here"),
        CorpusDoc("3", "", "integer id"),
        CorpusDoc("d4", "", "null title"),
    ]
    assert ds.queries == {"q1": "alpha?", "q3": "beta?"}  # q2 is not judged: dropped
    assert ds.qrels == {"q1": {"d1": 2, "d2": 0}, "q3": {"3": 1}}


def test_accepts_str_path_and_crlf(tmp_path: Path) -> None:
    d = make_dataset(tmp_path)
    (d / "qrels.tsv").write_bytes(QRELS.replace("\n", "\r\n").encode())
    ds = load_beir(str(d))  # type: ignore[arg-type]
    assert ds.qrels["q1"] == {"d1": 2, "d2": 0}


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not found"):
        load_beir(tmp_path / "nope")


@pytest.mark.parametrize("missing", ["corpus.jsonl", "queries.jsonl", "qrels.tsv"])
def test_missing_file(tmp_path: Path, missing: str) -> None:
    d = make_dataset(tmp_path)
    (d / missing).unlink()
    with pytest.raises(DatasetError, match=missing.replace(".", r"\.")):
        load_beir(d)


def test_both_corpus_files_is_an_error(tmp_path: Path) -> None:
    d = make_dataset(tmp_path)
    write_jsonl(d / "corpus.jsonl.gz", CORPUS, gz=True)
    with pytest.raises(DatasetError, match="both"):
        load_beir(d)


def test_dataset_error_is_value_error() -> None:
    assert issubclass(DatasetError, ValueError)


@pytest.mark.parametrize(
    ("filename", "content", "line", "message"),
    [
        ("corpus.jsonl", '{"_id": "d1", "text": "ok"}\n\n{"_id": "d2", "text": \n', 3, "invalid JSON"),
        ("corpus.jsonl", '{"_id": "d1", "text": "ok"}\n["not", "an", "object"]\n', 2, "JSON object"),
        ("corpus.jsonl", '{"title": "t", "text": "no id"}\n', 1, "'_id'"),
        ("corpus.jsonl", '{"_id": "d1"}\n', 1, "'text'"),
        ("corpus.jsonl", '{"_id": "d1", "text": 5}\n', 1, "must be a string"),
        ("corpus.jsonl", '{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', 2, "duplicate doc id"),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "", "text": "b"}\n', 2, "empty"),
        ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n', 2, "duplicate query"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n", 2, "3 tab-separated"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\t9\n", 2, "3 tab-separated"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", 2, "integer"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1.5\n", 2, "integer"),
        ("qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td1\t2\n", 3, "duplicate judgment"),
        ("qrels.tsv", "q1\td1\t1\n", 1, "header"),
        ("qrels.tsv", "query-id corpus-id score\nq1\td1\t1\n", 1, "header"),
    ],
)
def test_malformed_line_names_file_and_line(
    tmp_path: Path, filename: str, content: str, line: int, message: str
) -> None:
    d = make_dataset(tmp_path)
    (d / filename).write_text(content, encoding="utf-8")
    with pytest.raises(DatasetError) as info:
        load_beir(d)
    text = str(info.value)
    assert f"{d / filename}:{line}:" in text
    assert message in text


def test_empty_qrels_file(tmp_path: Path) -> None:
    d = make_dataset(tmp_path)
    (d / "qrels.tsv").write_text("\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="qrels.tsv"):
        load_beir(d)


def test_judged_query_missing_from_queries(tmp_path: Path) -> None:
    d = make_dataset(tmp_path)
    (d / "qrels.tsv").write_text(QRELS + "q7\td1\t1\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="'q7'"):
        load_beir(d)


def test_bad_encoding_and_bad_gzip(tmp_path: Path) -> None:
    d = make_dataset(tmp_path)
    (d / "queries.jsonl").write_bytes(b'{"_id": "q1", "text": "\xff\xfe"}\n')
    with pytest.raises(DatasetError, match="queries.jsonl"):
        load_beir(d)
    d2 = make_dataset(tmp_path, "gz", gz=True)
    (d2 / "corpus.jsonl.gz").write_bytes(b"this is not gzip")
    with pytest.raises(DatasetError, match=r"corpus\.jsonl\.gz"):
        load_beir(d2)


# --------------------------------------------------------------------------- shared judged sets


def shared(name: str) -> Path:
    path = DATA / name
    assert path.is_dir(), f"shared data set missing: {path}"  # fail, never skip
    return path


def n_rows(ds: BeirDataset) -> int:
    return sum(len(js) for js in ds.qrels.values())


def test_scifact_published_counts() -> None:
    ds = load_beir(shared("scifact"))
    assert ds.name == "scifact"
    assert len(ds.corpus) == 5183
    assert len(ds.queries) == 300 == len(ds.qrels)
    assert n_rows(ds) == 339
    assert {g for js in ds.qrels.values() for g in js.values()} == {1}
    assert len({doc.doc_id for doc in ds.corpus}) == 5183


def test_cranfield_counts_and_grades() -> None:
    ds = load_beir(shared("cranfield"))
    assert len(ds.corpus) == 1400
    assert len(ds.queries) == 225 == len(ds.qrels)
    assert n_rows(ds) == 1837
    # Cleverdon codes 1..4 -> grades 4..1; the raw file's -1 rows (one per query) -> grade 0
    grades = Counter(g for js in ds.qrels.values() for g in js.values())
    assert grades == {4: 128, 3: 387, 2: 734, 1: 363, 0: 225}
    assert all(any(g > 0 for g in js.values()) for js in ds.qrels.values())


def test_cosqa_counts() -> None:
    ds = load_beir(shared("cosqa"))
    assert len(ds.corpus) == 6267
    assert len(ds.queries) == 500 == len(ds.qrels)
    assert n_rows(ds) == 500


@pytest.mark.parametrize("name", ["scifact", "cranfield", "cosqa"])
def test_judged_docs_exist_in_corpus(name: str) -> None:
    ds = load_beir(shared(name))
    ids = {doc.doc_id for doc in ds.corpus}
    assert all(doc in ids for js in ds.qrels.values() for doc in js)


def test_a_lexical_eval_embeds_nothing(tmp_path: Path) -> None:
    """``sleuth eval --lanes bm25`` makes no vectors (a lane that matches by meaning does)."""
    from sleuth.eval.run import run_eval

    dataset, index = make_dataset(tmp_path), tmp_path / "idx"
    lexical = run_eval(dataset, lanes=["bm25", "index"], index_dir=index)
    assert (lexical.embedded, lexical.lanes, lexical.unavailable_lanes) == (0, ["bm25", "index"], {})
    hybrid = run_eval(dataset, lanes=["bm25", "vector"], index_dir=index)
    assert hybrid.embedded == 4  # every block of the four documents, made now
    assert hybrid.unavailable_lanes == {}
