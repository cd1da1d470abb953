"""An index's config.toml is read like any hostile input (attack session 32, low): an index folder
can come with a cloned repository. Arrays or inline tables nested a few thousand deep ended every
command with tomllib's ``RecursionError`` traceback; a config.toml of any size was read whole (a
200 MB one: 660 MB of memory, half a minute); and one that is a FIFO, a symlink to ``/dev/zero``
or a folder was silently ignored. Each is now a ConfigError naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.config import ServeSettings, load_config, load_default_project, load_serve_settings
from sleuth.errors import ConfigError


def refusal(index: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(index)
    return str(info.value)


@pytest.mark.parametrize("nested", ["a = " + "[" * 5000 + "]" * 5000, "a = " + "{b = " * 3000 + "1" + "}" * 3000])
def test_deep_nesting_is_a_readable_error(tmp_path: Path, nested: str) -> None:
    (tmp_path / "config.toml").write_text(nested + "\n", encoding="utf-8")
    assert refusal(tmp_path) == f"cannot read {tmp_path / 'config.toml'}: arrays or tables nested too deeply"


def test_a_file_over_the_limit_is_refused_unparsed(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("#" * (1024 * 1024) + "\nlanes = 5\n", encoding="utf-8")
    assert refusal(tmp_path) == f"cannot read {tmp_path / 'config.toml'}: larger than 1,048,576 bytes"
    (tmp_path / "config.toml").write_text("#" * (1024 * 1024 - 14) + "\nlanes = 5\n", encoding="utf-8")
    assert refusal(tmp_path).startswith("lanes must be a list of lane names, got 5")  # at the limit: read and parsed


def test_something_other_than_a_regular_file_is_refused_unread(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    os.mkfifo(config)  # opening it would wait for a writer
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.unlink()
    config.symlink_to("/dev/zero")
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.unlink()
    config.mkdir()
    assert refusal(tmp_path) == f"cannot read {config}: not a regular file"
    config.rmdir()
    assert load_config(tmp_path).lanes  # no file: the defaults


KNOWN_KEYS = ("lanes, fusion, rrf_k, score_weights, lane_weights, model, model_int8, tabular, tabular_json_min_bytes,"
              " archive_max_members, milvus_uri, milvus_collection, milvus_dense_index, milvus_consistency,"
              " milvus_partitions, milvus_sync_part_blocks, tools, guides, default_project")


@pytest.mark.parametrize(("text", "said"), [
    ('lanse = ["bm25"]', "unknown key `lanse` in {}: did you mean `lanes`?"),
    ('Lanes = ["bm25"]', "unknown key `Lanes` in {}: did you mean `lanes`?"),
    ("[scoreweights]\nbm25 = 1", "unknown key `scoreweights` in {}: did you mean `score_weights`?"),
    ("[score_weights]\nbmm25 = 1", "unknown key `score_weights.bmm25` in {}: did you mean `score_weights.bm25`?"),
    ("foo = 1", "unknown key in {}: `foo`; known keys: " + KNOWN_KEYS),
    ('"\\u001b]0;x\\u0007" = 1', "unknown key in {}: `\\u001b]0;x\\u0007`; known keys: " + KNOWN_KEYS),
    ("lanse = 1\n[lane_weights]\nBM25 = 1\nmagic = 2",
     "unknown keys in {}: `lanse` (did you mean `lanes`?), `lane_weights.magic`;"
     " lane names: bm25, tfidf, index, rm3, exact, vector, graph"),
])
def test_an_unknown_key_is_refused_with_the_closest_known_one(tmp_path: Path, text: str, said: str) -> None:
    """A new user's trial: ``lanse = ["bm25"]`` was silently ignored and every search ran with the
    default lanes (bad values and broken TOML were reported). Every loader of the file refuses it."""
    (tmp_path / "config.toml").write_text(text + "\n", encoding="utf-8")
    expected = said.format(tmp_path / "config.toml")
    assert refusal(tmp_path) == expected
    for loader in (load_serve_settings, load_default_project):
        with pytest.raises(ConfigError) as info:
            loader(tmp_path, env={})
        assert str(info.value) == expected


def test_thousands_of_unknown_keys_get_a_short_message(tmp_path: Path) -> None:
    """An attack round's finding (low): 40,000 stray keys made a 1 MB error. Ten are named (none of
    them close to a known key here), the rest counted."""
    (tmp_path / "config.toml").write_text("".join(f"zz{i:05d} = 1\n" for i in range(40_000)), encoding="utf-8")
    named = ", ".join(f"`zz{i:05d}`" for i in range(10))
    assert refusal(tmp_path) == (f"unknown keys in {tmp_path / 'config.toml'}: {named} and 39,990 more;"
                                 f" known keys: {KNOWN_KEYS}")


@pytest.mark.parametrize(("text", "said"), [
    ("lanes = [1]", "a lane is named by a string, got 1; choose from "),
    ("lanes = [true]", "a lane is named by a string, got True; choose from "),
    ('lanes = [["bm25"], {a = 1}]', "a lane is named by a string, got ['bm25']; choose from "),
    ("lanes = 5", "lanes must be a list of lane names, got 5"),
    ('lanes = "' + "q" * 200_000 + '"', "unknown lane(s) " + "q" * 60 + "...; choose from "),
    ("lanes = [" + ", ".join(f'"l{i}"' for i in range(20_000)) + "]",
     "unknown lane(s) l0, l1, l2, l3, l4, l5, l6, l7, l8, l9 and 19,990 more; choose from "),
    ('fusion = "' + "f" * 300_000 + '"', "fusion must be one of rrf, convex, zscore, got '" + "f" * 59 + "..."),
    ('model = "' + "m" * 300_000 + '"', "model must be a model name, a folder or 'none' of at most 4,096 characters,"
     " got 300,000 characters ('" + "m" * 59 + "...)"),
])
def test_a_hostile_value_gets_a_short_readable_error(tmp_path: Path, text: str, said: str) -> None:
    """An attack round's findings: ``lanes = [1]`` ended every command with an AttributeError
    traceback, and a long value (a 300,000-character ``fusion`` or ``model``, 20,000 lane names) was
    printed whole in the error."""
    (tmp_path / "config.toml").write_text(text + "\n", encoding="utf-8")
    message = refusal(tmp_path)
    assert message.startswith(said) and len(message) < 400


def test_every_key_the_settings_read_is_known(tmp_path: Path) -> None:
    """A file with every key (and a lane table's key in any case) loads; ``BM25 = 2`` weighs bm25
    (before, it was stored under ``BM25`` and the bm25 lane kept its default weight)."""
    (tmp_path / "config.toml").write_text(
        'lanes = ["bm25", "index"]\nfusion = "zscore"\nrrf_k = 50\nmodel = "none"\nmodel_int8 = "auto"\n'
        'tabular = "skip"\ntabular_json_min_bytes = 10\narchive_max_members = 5\nmilvus_uri = "m.db"\n'
        'milvus_collection = "c"\nmilvus_dense_index = "FLAT"\nmilvus_consistency = "Strong"\n'
        'milvus_partitions = 2\nmilvus_sync_part_blocks = 100\ntools = ["project"]\nguides = "g.json"\n'
        'default_project = "p"\n[score_weights]\nBM25 = 2\n[lane_weights]\nrm3 = 3\n', encoding="utf-8")
    config = load_config(tmp_path)
    assert (config.lanes, config.score_weights["bm25"], config.lane_weights["rm3"], "BM25" in config.score_weights) == (
        ("bm25", "index"), 2.0, 3.0, False)
    assert load_serve_settings(tmp_path, env={}) == ServeSettings(tools=("project",), guides=tmp_path / "g.json")
    assert load_default_project(tmp_path, env={}) == "p"
