"""Lane weights in an index's config.toml are bounded (attack session 32, low): ``bm25 = nan``,
``inf`` or ``1e308`` were taken, and every fused score came out nan or inf (``sleuth search
--format json`` then printed ``NaN`` / ``Infinity``, which is not JSON), ``true`` read as 1.0 and a
negative weight silently as 0. A weight is now a number from 0 to ``LANE_WEIGHT_MAX`` (1,000,000)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.config import load_config
from sleuth.errors import ConfigError


@pytest.mark.parametrize(("table", "value"), [("score_weights", "nan"), ("score_weights", "inf"),
                                              ("score_weights", "-inf"), ("lane_weights", "1e308"),
                                              ("lane_weights", "true"), ("score_weights", "-1"),
                                              ("lane_weights", "1000000.5")])
def test_a_weight_that_is_not_a_number_from_0_to_the_maximum_is_refused(tmp_path: Path, table: str,
                                                                          value: str) -> None:
    (tmp_path / "config.toml").write_text(f"[{table}]\nbm25 = {value}\n", encoding="utf-8")
    shown = {"true": "True", "1e308": "1e+308"}.get(value, value)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(f"{table}.bm25 must be a number from 0 to 1,000,000, got {shown} "
                                      f"(settings from {tmp_path / 'config.toml'}")


def test_weights_from_0_to_the_maximum_are_taken(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[score_weights]\nbm25 = 0\nindex = 1e6\n[lane_weights]\nrm3 = 2.5\n",
                                          encoding="utf-8")
    cfg = load_config(tmp_path)
    assert (cfg.score_weights["bm25"], cfg.score_weights["index"], cfg.lane_weights["rm3"]) == (0.0, 1e6,
                                                                                                2.5)


@pytest.mark.parametrize(("text", "unused"), [
    ('fusion = "rrf"\n[score_weights]\nbm25 = 1\n',
     ("[score_weights] is not used: fusion = 'rrf' weighs the lanes by [lane_weights]",)),
    ("[lane_weights]\nbm25 = 1\n",
     ("[lane_weights] is not used: fusion = 'zscore' weighs the lanes by [score_weights]",)),
    ('fusion = "convex"\n[score_weights]\nbm25 = 1\n', ()),
    ('fusion = "rrf"\n[lane_weights]\nbm25 = 1\n', ()),
])
def test_a_weight_table_the_fusion_does_not_read_is_named(tmp_path: Path, text: str, unused: tuple[str, ...]) -> None:
    """Kept, not refused (a config may hold both tables and switch fusion), and said by `sleuth status`:
    a [score_weights] under rrf was ignored without a word (a new user's trial)."""
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    assert load_config(tmp_path).unused == unused


def test_a_top_level_setting_written_below_a_table_is_named_so(tmp_path: Path) -> None:
    """A new user's trial: `fusion = "rrf"` written after `[score_weights]` is that table's key in TOML;
    the error listed the lane names, not where the line belongs."""
    (tmp_path / "config.toml").write_text('[score_weights]\nbm25 = 1\nfusion = "rrf"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value).startswith(
        f"unknown key `score_weights.fusion` in {tmp_path / 'config.toml'}: `fusion` is a top-level setting, read"
        " here as part of [score_weights] because it comes after that table's line: move it above the first"
        " [table] line")
