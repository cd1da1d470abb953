"""What a `sleuth` process does first: the model load of a search started before the imports, and
the quick exit of the read-only commands."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from sleuth import startup
from sleuth.cli import _exit_code
from sleuth.embed import DEFAULT_MODEL, Embedder, ModelUnavailable, load_embedder, resolve_model
from sleuth.engine import Engine


@pytest.fixture
def index(tmp_path: Path) -> Path:
    Engine(tmp_path / "idx").close()  # an empty index: a catalog, no config file
    return tmp_path / "idx"


@pytest.fixture(autouse=True)
def _no_load_left_over():
    yield
    try:  # a test that started a load and did not take it must not hand it to a later test
        startup.claim("", False)
    except ModelUnavailable:
        pass


@pytest.mark.parametrize(("args", "expected"), [
    (["some words"], (None, None)),
    (["q", "--index", "/x", "--lanes", "bm25,vector"], ("/x", "bm25,vector")),
    (["q", "--index=/x", "--lanes=bm25"], ("/x", "bm25")),
    (["--limit", "3", "q"], (None, None)),
    (["q", "--help"], None),
    (["q", "--index"], None),
])
def test_search_options(args: list[str], expected) -> None:
    assert startup.search_options(args) == expected


def test_nothing_is_loaded_without_the_vector_lane_or_an_index(index: Path, tmp_path: Path) -> None:
    assert not startup.start_search_model_load(["q", "--index", str(index), "--lanes", "bm25,tfidf"])
    assert not startup.start_search_model_load(["q", "--index", str(tmp_path / "nothing-here")])
    assert not startup.start_search_model_load(["q", "--index", str(index), "--help"])
    assert startup.claim(DEFAULT_MODEL, False) == (False, None)


def test_the_search_takes_the_model_loaded_at_the_start(index: Path) -> None:
    assert startup.start_search_model_load(["q", "--index", str(index)])
    assert not startup.start_search_model_load(["q", "--index", str(index)])  # one load per process
    claimed, embedder = startup.claim(DEFAULT_MODEL, None)  # model_int8 unset: "auto"
    assert claimed and isinstance(embedder, Embedder) and embedder.name == resolve_model(DEFAULT_MODEL).name
    assert embedder.embed(["hybrid search"]).shape == (1, 384)
    assert startup.claim(DEFAULT_MODEL, None) == (False, None)  # taken once


def test_load_embedder_waits_for_the_started_load(index: Path) -> None:
    assert startup.start_search_model_load(["q", "--index", str(index), "--lanes", "vector"])
    preloaded = load_embedder(DEFAULT_MODEL)
    fresh = load_embedder(DEFAULT_MODEL)
    assert preloaded is not fresh  # the second call loaded its own
    texts = ["rotate the signing keys", "cats sleep"]
    assert np.array_equal(preloaded.embed(texts), fresh.embed(texts))


def test_another_model_is_not_handed_out(index: Path) -> None:
    (index / "config.toml").write_text('model_int8 = true\n')
    assert startup.start_search_model_load(["q", "--index", str(index)])
    assert startup.claim(DEFAULT_MODEL, False) == (False, None)  # it loaded the int8 model


def test_a_bad_setting_is_left_to_the_command(index: Path) -> None:
    (index / "config.toml").write_text("rrf_k = -1\n")
    assert startup.start_search_model_load(["q", "--index", str(index)])
    assert startup.claim(DEFAULT_MODEL, False) == (False, None)


def test_an_unavailable_model_fails_as_its_own_load_would(index: Path, tmp_path: Path) -> None:
    (index / "config.toml").write_text(f'model = "{tmp_path / "no-model"}"\n')
    assert startup.start_search_model_load(["q", "--index", str(index)])
    with pytest.raises(ModelUnavailable, match="neither 'all-MiniLM-L6-v2' nor a folder"):
        load_embedder(str(tmp_path / "no-model"))


def test_the_model_none_loads_nothing(index: Path) -> None:
    (index / "config.toml").write_text('model = "none"\n')
    assert startup.start_search_model_load(["q", "--index", str(index)])
    assert startup.claim("none", False) == (False, None)
    assert load_embedder("none") is None


def test_process_defaults_do_not_override_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    monkeypatch.delenv("PYDANTIC_DISABLE_PLUGINS", raising=False)
    startup.set_process_defaults()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "2" and os.environ["PYDANTIC_DISABLE_PLUGINS"] == "__all__"


@pytest.mark.parametrize(("code", "status"), [(None, 0), (0, 0), (3, 3), (True, 1), (256 + 6, 6), ("bad", 1)])
def test_quick_exit_status_is_that_of_sys_exit(code, status, capsys) -> None:
    assert _exit_code(code) == status
    assert capsys.readouterr().err == ("bad\n" if code == "bad" else "")
