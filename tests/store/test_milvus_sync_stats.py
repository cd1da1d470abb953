"""The sync's statistics from a part's counted terms (``MilvusSync._part_docs``, ``_DfSum``,
the ``milvus_doc_stats`` record): the same numbers as counting each document's blocks one by one
(``sparse.block_stats``, ``sparse.block_term_ids``), documents of one block and of several. Pure:
no catalog, no Milvus."""

from __future__ import annotations

import json
import random
from collections import Counter
from itertools import groupby

import pytest

from sleuth.lanes import sparse
from sleuth.store.milvus_state import DOC_STATS, doc_stats_terms, parse
from sleuth.store.milvus_sync import MilvusSync, SyncBlock, SyncPart, _DfSum

WORDS = [f"w{i}" for i in range(300)]


def part_of(blocks_per_doc: list[int], seed: int = 5) -> tuple[SyncPart, list[dict[str, list[str]]]]:
    rng = random.Random(seed)
    blocks, fields = [], []
    for d, count in enumerate(blocks_per_doc):
        for o in range(count):
            fields.append(sparse.block_fields(" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 30))),
                                              [rng.choice(WORDS)] * (d % 3), [rng.choice(WORDS)], [],
                                              ["p", "/", f"d{d % 7}"]))
            blocks.append(SyncBlock(f"b{d}-{o}", f"d{d:04d}", "p", o))
    return SyncPart(blocks, sparse.count_part(fields)), fields


@pytest.mark.parametrize("shape", ["one block each", "several blocks"])
def test_part_statistics_are_the_per_block_counts(shape: str) -> None:
    rng = random.Random(1)
    sizes = [1] * 300 if shape == "one block each" else [rng.choice([1, 1, 2, 5]) for _ in range(300)]
    part, fields = part_of(sizes)
    docs, ids, counts = MilvusSync._part_docs(part)
    blocks = part.blocks
    assert len(docs) == len(sizes)
    for (doc_id, rows), doc in zip(groupby(range(len(blocks)), key=lambda k: blocks[k].doc_id), docs, strict=True):
        n, lengths, df = sparse.block_stats(fields[k] for k in rows)
        record = parse(doc.record(part.terms.fields)[1], DOC_STATS, "row")
        assert record is not None and doc.doc_id == doc_id
        assert (record["n"], record["len"]) == (n, lengths)
        got = doc_stats_terms(record)
        assert got is not None and dict(zip(got[0].tolist(), got[1].tolist(), strict=True)) == dict(df)
    total: Counter[int] = Counter()
    for f in fields:
        total.update(sparse.block_term_ids(f))
    summed = _DfSum()
    summed.add(ids, counts)
    summed.add(ids[:10], -counts[:10])  # a change taken out again
    summed.add(ids[:10], counts[:10])
    got_ids, got_df = summed.items()
    assert dict(zip(got_ids.tolist(), got_df.tolist(), strict=True)) == dict(total)
    assert (got_ids[1:] > got_ids[:-1]).all()


def test_a_document_over_two_parts_is_merged() -> None:
    part, fields = part_of([4])
    whole = MilvusSync._part_docs(part)[0][0]
    first = MilvusSync._part_docs(SyncPart(part.blocks[:2], sparse.count_part(fields[:2])))[0][0]
    second = MilvusSync._part_docs(SyncPart(part.blocks[2:], sparse.count_part(fields[2:])))[0][0]
    first.merge(second)
    assert json.loads(first.record(sparse.FIELDS)[1]) == json.loads(whole.record(part.terms.fields)[1])
    assert first.n == 4 and int(first.counts.max()) > 1
