"""The tabular rule's suffix test, without a path object, gives what PurePosixPath gives."""

from __future__ import annotations

from pathlib import PurePosixPath

from sleuth.ingest.tabular import TabularRule, suffix_of

NAMES = ["a.csv", "A.CSV", "dir.csv/b.md", "x/y.tar.gz", ".csv", "x/.json", "a.", "a..csv", "noext", "x/y/",
         "data.JSON", "t.tsv", "x.zip/inner/c.Tsv", "..", "a.b.c.Json", "é/ü.CSV"]


def test_suffix_of_matches_pure_posix_path() -> None:
    assert [suffix_of(n) for n in NAMES] == [PurePosixPath(n.lower()).suffix for n in NAMES]


def test_is_tabular_by_suffix_and_json_size() -> None:
    rule = TabularRule(json_min_bytes=100)
    assert [n for n in NAMES if rule.is_tabular(n, 99)] == ["a.csv", "A.CSV", "a..csv", "t.tsv",
                                                             "x.zip/inner/c.Tsv", "é/ü.CSV"]
    assert [n for n in NAMES if rule.is_tabular(n, 100) and n.lower().endswith("json")] == ["data.JSON",
                                                                                          "a.b.c.Json"]
    assert rule.reason("x/data.JSON", 100) == ('tabular data file: .json of 100 bytes (set tabular = "index" in'
                                               ' config.toml to index it)')
