"""The bm25 lane against an independent BM25 on a real collection (as bm25s's tests/comparison
does against rank_bm25): the same analysed tokens go into both, and the scores must agree."""

from __future__ import annotations

from pathlib import Path

import bm25s
import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.eval import load_beir
from sleuth.lanes.base import LaneQuery
from sleuth.text import analyze, parse_query

CRANFIELD = Path(__file__).resolve().parents[3] / "shared" / "data" / "cranfield"
#: tantivy keeps each block's length in one byte (Lucene's SmallFloat code: exact up to 40, then
#: 3 bits of mantissa, up to 1/8 off), bm25s the exact length; a block's BM25 differs by less than this.
LENGTH_CODE_REL_TOL = 0.06


#: BM25's k1: Lucene (and bm25s's ``lucene`` method) leave the constant factor (k1 + 1) out of the
#: term weight, tantivy keeps it (the order is the same).
K1 = 1.2


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory):
    if not CRANFIELD.is_dir():
        pytest.fail(f"the judged sets are expected at {CRANFIELD} (../shared/data)")
    dataset = load_beir(CRANFIELD)
    engine = Engine(tmp_path_factory.mktemp("cranfield") / "idx", Config(model="none"))
    engine.index_records("cranfield", (Record(d.doc_id, f"{d.title}\n\n{d.text}" if d.title else d.text, d.title)
                                       for d in dataset.corpus))
    yield engine, dataset
    engine.close()


def test_bm25_lane_scores_equal_bm25s_lucene_on_cranfield(cranfield):
    engine, dataset = cranfield
    blocks = [(ib.block.block_id, ib.terms.split()) for ib in engine.catalog.indexed_blocks(0)]
    ids = [b for b, _ in blocks]
    assert len(ids) >= 1400
    reference = bm25s.BM25(method="lucene", k1=1.2, b=0.75)
    reference.index([terms for _, terms in blocks], show_progress=False)
    compared = exact = 0
    worst = 0.0
    for text in dataset.queries.values():
        parsed = parse_query(text)
        query_tokens = [t for t in analyze(text) if t in parsed.terms]  # each term as often as the query says it
        token_ids = reference.get_tokens_ids(query_tokens)
        if not token_ids:
            continue
        expected = reference.get_scores_from_ids(token_ids)
        got = engine.lanes["bm25"].search(LaneQuery(parsed, 10))
        assert got.block_ids, text
        top = np.argsort(-expected, kind="stable")[:10]
        for block_id, score in zip(got.block_ids, got.scores, strict=True):
            want = float(expected[ids.index(block_id)]) * (K1 + 1)
            worst = max(worst, abs(score - want) / want)
            assert score == pytest.approx(want, rel=LENGTH_CODE_REL_TOL), (text, block_id)
            compared += 1
        # the same top 10, but for near-ties (within the length code's error)
        tenth = float(expected[top[-1]])
        for i in set(range(len(ids))) & {ids.index(b) for b in got.block_ids} ^ set(top.tolist()):
            assert float(expected[i]) == pytest.approx(tenth, rel=2 * LENGTH_CODE_REL_TOL), text
        exact += sum(1 for b in got.block_ids if ids.index(b) in set(top.tolist()))
    assert compared >= 2000
    assert exact / compared > 0.97
    print(f"worst relative difference {worst:.4f}, top-10 agreement {exact / compared:.4f}")
