"""Lane cache files: saved, loaded as copies or memory-mapped, refused when stale or damaged."""

from __future__ import annotations

import numpy as np
import pytest

from sleuth.lanes.tfidf import TfidfModel
from sleuth.store.lane_cache import load_arrays, load_saved, save_arrays


def test_mapped_arrays_equal_the_saved_ones_and_are_read_only(tmp_path):
    path = tmp_path / "x.cache.npz"
    arrays = {"f": np.arange(7, dtype=np.float32), "m": np.arange(12, dtype=np.int64).reshape(3, 4),
              "fortran": np.asfortranarray(np.arange(6, dtype=np.int32).reshape(2, 3)),
              "u": np.asarray(["ab", "ćd", ""], dtype=str), "s": np.asarray([b"a", b"bc"]),
              "empty": np.zeros(0, dtype=np.float32)}
    save_arrays(path, "key 1", **arrays)
    key, mapped = load_saved(path, mapped=True)
    assert key == "key 1"
    assert sorted(mapped) == sorted(arrays)
    for name, want in arrays.items():
        assert mapped[name].dtype == want.dtype and np.array_equal(mapped[name], want)
    assert not mapped["f"].flags.writeable
    with pytest.raises(ValueError):
        mapped["f"][0] = 1.0
    assert load_arrays(path, "key 2", mapped=True) is None  # stale


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_cache_is_not_loaded(tmp_path, damage):
    path = tmp_path / "x.cache.npz"
    save_arrays(path, "k", a=np.arange(1000, dtype=np.float64))
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"not a zip file" * 10, "empty": b""}[damage])
    assert load_saved(path, mapped=True) is None
    assert load_saved(path) is None


def test_compressed_archive_is_not_mapped(tmp_path):
    path = tmp_path / "x.cache.npz"
    np.savez_compressed(path, __key__=np.asarray("k"), a=np.arange(10))
    assert load_saved(path, mapped=True) is None
    assert load_saved(path)[0] == "k"  # a copy still loads


def test_tfidf_model_from_mapped_arrays_scores_like_the_built_one(tmp_path):
    rows = [("d1:0", "p", "apple pear pear"), ("d2:0", "p", "pear kiwi"), ("d3:0", "q", "ελιά apple"),
            ("d4:0", "q", "kiwi " * 3), ("d5:0", "p", "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")]
    built = TfidfModel(rows)
    save_arrays(tmp_path / "t.npz", "k", **built.to_arrays())
    loaded = TfidfModel.from_arrays(load_arrays(tmp_path / "t.npz", "k", mapped=True))
    queries = [["apple"], ["pear", "kiwi"], ["ελιά"], ["nowhere"], ["z" * 200], ["apple", "apple", "ελιά"], []]
    for query in queries:
        assert np.array_equal(loaded.scores(query), built.scores(query)), query
        got, want = loaded.matching(query), built.matching(query)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    # An update of the mapped model equals one of the built model (it builds the vocabulary then).
    added = [("d6:0", "q", "kiwi fig")]
    assert np.array_equal(loaded.updated(["d2"], added).scores(["kiwi", "fig"]),
                          built.updated(["d2"], added).scores(["kiwi", "fig"]))
    assert loaded.vocab == built.vocab


def test_tfidf_model_of_no_blocks_round_trips(tmp_path):
    built = TfidfModel([])
    save_arrays(tmp_path / "t.npz", "k", **built.to_arrays())
    loaded = TfidfModel.from_arrays(load_arrays(tmp_path / "t.npz", "k", mapped=True))
    assert len(loaded) == 0 and loaded.matching(["x"])[0].size == 0


def test_a_fifo_or_folder_in_place_of_the_cache_is_ignored_and_leaves_nothing_behind(tmp_path):
    import os

    fifo, folder = tmp_path / "f.cache.npz", tmp_path / "d.cache.npz"
    os.mkfifo(fifo)
    folder.mkdir()
    assert load_saved(fifo, mapped=True) is None and load_saved(fifo) is None  # does not wait for a writer
    save_arrays(folder, "k", a=np.arange(3))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.cache.npz", "f.cache.npz"]
