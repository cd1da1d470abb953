"""A quoted phrase of stop words alone (attack session 24): the word lanes (bm25, index, rm3,
tfidf) had nothing to look up but counted as having run and found nothing, so the vector lane's
answers -- restricted to the blocks holding the phrase verbatim -- were dropped as weak
semantic-only matches and the search said "no searched document holds the query's quoted
phrase(s) as written" of a phrase 30 documents held. Now those lanes do not apply to such a query
(skipped: nothing to look up), and the exact lane is added to the default lanes for it, so the
blocks holding the phrase are returned."""

from __future__ import annotations

from pathlib import Path

from sleuth.engine import Engine, Record


def test_a_phrase_of_stop_words_finds_the_documents_that_hold_it(tmp_path: Path) -> None:
    records = [Record(f"r{i}", f"Note {i} about boats and rivers.") for i in range(6)]
    records.append(Record("held", "To be or not to be, that is the question of the day."))
    with Engine(tmp_path / "idx") as e:
        e.index_records("p", records)
        resp = e.search('"to be or not to be"')
        assert [h.path for h in resp.hits] == ["held"]
        assert "holds the query's quoted phrase" not in (resp.notice or "")
        assert set(resp.skipped_lanes) == {"bm25", "index", "rm3"}
        resp = e.search('"of the"')  # under the vector lane's similarity floor: the exact lane is added
        assert [h.path for h in resp.hits] == ["held"] and "exact" in resp.lanes
        resp = e.search('"of the"', lanes=["bm25", "vector"])  # lanes chosen by the caller stay as chosen
        assert "exact" not in resp.lanes and list(resp.skipped_lanes) == ["bm25"]
        resp = e.search('"of the night"')  # held by no document: said so
        assert resp.hits == [] and resp.notice is not None
        assert e.search('"the question" boats').skipped_lanes == {}  # a word to look up: the word lanes run
