"""``--explain`` shows a lane that repeated another's list as repeated, not as a lane of weight 0.

A trial found ``index rank 1 weight 0 contribution 0.000000`` under every hit of a collection
whose index lane ranks as bm25 does (no titles beyond the text): the lane is counted once and its
weight given to its family (:func:`sleuth.fusion.repeated_lanes`), but the explanation listed it as
if it had taken part. The CLI text says ``repeats bm25, not counted``; the JSON's (and the page's)
trace names the lane it repeats in ``repeats``. Scores and order are unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from sleuth.cli import cli
from sleuth.config import Config
from sleuth.engine import Engine

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"}


def _index(tmp_path: Path) -> Path:
    """Plain text notes (no title, heading or tag: the index lane ranks exactly as bm25)."""
    root = tmp_path / "notes"
    root.mkdir()
    for i, text in enumerate(["wombats dig burrows at night", "wombats sleep by day and dig",
                              "a wombat crossed the road"]):
        (root / f"n{i}.txt").write_text(text + "\n", encoding="utf-8")
    idx = tmp_path / "idx"
    with Engine(idx, Config(model="none")) as engine:
        engine.index([root], project="notes")
    return idx


def _search(idx: Path, *args: str) -> str:
    out = CliRunner().invoke(cli, ["search", "wombats dig", "--index", str(idx), "--lanes", "bm25,index",
                                   *args], env=ENV)
    assert out.exit_code == 0, out.output
    return out.output


def test_explain_shows_a_repeating_lane_as_repeated(tmp_path: Path) -> None:
    idx = _index(tmp_path)
    plain = json.loads(_search(idx, "--format", "json"))
    resp = json.loads(_search(idx, "--format", "json", "--explain"))
    assert [(h["path"], h["score"]) for h in resp["hits"]] == [(h["path"], h["score"]) for h in plain["hits"]]
    # n0 and n1 tie (ties by document id); n2 holds "wombat" alone
    assert [h["path"] for h in resp["hits"]] == ["n1.txt", "n0.txt", "n2.txt"]
    for hit, rank in zip(resp["hits"], (2, 1, 3), strict=True):
        bm25, index = hit["explain"]
        assert (bm25["lane"], bm25["rank"], bm25["weight"], bm25["repeats"]) == ("bm25", rank, 0.6, None)
        assert bm25["contribution"] == hit["score"]  # the index lane's weight 0.12 went to bm25 (0.48)
        assert (index["lane"], index["rank"], index["weight"], index["contribution"], index["repeats"]) == (
            "index", rank, 0.0, 0.0, "bm25")

    text = _search(idx, "--explain").splitlines()
    assert [line for line in text if line.startswith("      ")] == [
        "      bm25   rank    2  weight 0.6  contribution 1.272792  (lane score 0.5894)",
        "      index  rank    2  repeats bm25, not counted  (lane score 0.5894)",
        "      sum = 1.272792",
        "      bm25   rank    1  weight 0.6  contribution 1.272792  (lane score 0.5894)",
        "      index  rank    1  repeats bm25, not counted  (lane score 0.5894)",
        "      sum = 1.272792",
        "      bm25   rank    3  weight 0.6  contribution 0.000000  (lane score 0.1403)",
        "      index  rank    3  repeats bm25, not counted  (lane score 0.1403)",
        "      sum = 0.000000",
    ]
