"""The engine keeps its vector matrix and HNSW index up to date incrementally (add and remove)
across re-indexing and new processes, with exact results: removed documents never come back."""

from __future__ import annotations

from pathlib import Path

import pytest

from sleuth.engine import Engine
from sleuth.lanes import vector as vector_module
from sleuth.lanes.vector import VectorMatrix
from sleuth.types import SearchRequest

NOTES = {
    "keys.md": "# Signing keys\n\nRotate the signing keys every ninety days; revoke the old key after the switch.\n",
    "cats.md": "# Cats\n\nCats sleep most of the day in warm places.\n",
    "deploy.md": "# Deploy\n\nShip the container to production with the pipeline.\n",
    "tea.md": "# Tea\n\nBrew green tea at eighty degrees for two minutes.\n",
    "bikes.md": "# Bicycles\n\nOil the chain of your bicycle every month.\n",
}


@pytest.fixture()
def ann_everywhere(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Force the HNSW path (above 2 blocks) and count full HNSW builds."""
    monkeypatch.setattr(vector_module, "VECTOR_EXACT_MAX_BLOCKS", 2)
    builds: list[int] = []
    real = VectorMatrix._build_ann

    def counting(self: VectorMatrix, *args: object) -> object:
        builds.append(self.live)
        return real(self, *args)

    monkeypatch.setattr(VectorMatrix, "_build_ann", counting)
    return builds


def write_notes(root: Path, names: list[str]) -> None:
    root.mkdir(exist_ok=True)
    for name in names:
        (root / name).write_text(NOTES[name], encoding="utf-8")


def vector_paths(engine: Engine, query: str) -> list[str]:
    resp = engine.search(SearchRequest(query=query, lanes=["vector"], limit=50))
    return [h.path for h in resp.hits]


def test_removed_documents_never_come_back_and_added_ones_are_found(tmp_path: Path, ann_everywhere: list[int]) -> None:
    notes = tmp_path / "notes"
    write_notes(notes, ["keys.md", "cats.md", "deploy.md"])
    e = Engine(tmp_path / "idx")
    e.index([notes], project="notes")
    m = e.lanes["vector"].matrix()
    assert m.ann is not None and len(m) == 3 and ann_everywhere == [3]
    assert vector_paths(e, "feline naps")[0] == "cats.md"

    (notes / "cats.md").unlink()
    write_notes(notes, ["tea.md"])
    e.index([notes], project="notes")
    m = e.lanes["vector"].matrix()
    assert m.ann is not None and len(m) == 3
    assert ann_everywhere == [3], "the HNSW index was rebuilt instead of updated"
    assert "cats.md" not in vector_paths(e, "feline naps")
    assert "cats.md" not in vector_paths(e, "Cats sleep most of the day in warm places.")
    assert vector_paths(e, "brewing green tea")[0] == "tea.md"

    # A new process loads the saved state (no build) and sees the same.
    fresh = Engine(tmp_path / "idx")
    m2 = fresh.lanes["vector"].matrix()
    assert m2.ann is not None and ann_everywhere == [3]
    assert sorted(b.split(":")[0] for b in m2.block_ids if b) == sorted(b.split(":")[0] for b in m.block_ids if b)
    assert "cats.md" not in vector_paths(fresh, "Cats sleep most of the day in warm places.")
    assert vector_paths(fresh, "brewing green tea")[0] == "tea.md"

    # That process catches up incrementally with a change written by another one.
    write_notes(notes, ["bikes.md"])
    (notes / "deploy.md").write_text("# Deploy\n\nRoll out the release to the staging cluster.\n", encoding="utf-8")
    e.index([notes], project="notes")
    assert vector_paths(fresh, "maintaining a bicycle chain")[0] == "bikes.md"
    assert "deploy.md" in vector_paths(fresh, "staging cluster rollout")
    assert ann_everywhere == [3]
    live = [b for b in fresh.lanes["vector"].matrix().block_ids if b]
    assert len(live) == len(set(live)) == 4


def test_saved_state_survives_a_reopen_without_the_catalog_changing(tmp_path: Path, ann_everywhere: list[int]) -> None:
    notes = tmp_path / "notes"
    write_notes(notes, list(NOTES))
    Engine(tmp_path / "idx").index([notes], project="notes")
    files = sorted(p.name for p in (tmp_path / "idx").glob("vectors.*"))
    assert sorted(f.rsplit(".", 1)[-1] for f in files) == ["hnsw", "npz", "q8"]
    again = Engine(tmp_path / "idx")
    assert vector_paths(again, "feline naps")[0] == "cats.md"
    assert sorted(p.name for p in (tmp_path / "idx").glob("vectors.*")) == files
    assert ann_everywhere == [5]


def test_exact_path_is_updated_too(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    write_notes(notes, ["keys.md", "cats.md"])
    e = Engine(tmp_path / "idx")
    e.index([notes], project="notes")
    assert e.lanes["vector"].matrix().ann is None
    (notes / "cats.md").unlink()
    write_notes(notes, ["tea.md"])
    e.index([notes], project="notes")
    assert "cats.md" not in vector_paths(e, "Cats sleep most of the day in warm places.")
    assert vector_paths(e, "brewing green tea")[0] == "tea.md"
    assert vector_paths(Engine(tmp_path / "idx"), "brewing green tea")[0] == "tea.md"


def test_an_hnsw_index_before_the_model_does_not_crash_the_process(tmp_path: Path) -> None:
    """usearch loads its kernels with RTLD_GLOBAL and onnxruntime imported after them crashed the
    process (SIGSEGV): a new engine loads saved vectors (usearch) before the model (onnxruntime)."""
    import subprocess
    import sys

    code = ("import sys; from sleuth.lanes.vector import new_hnsw; new_hnsw(4)\n"
            "from sleuth.embed import DEFAULT_MODEL, load_embedder\n"
            "print(load_embedder(DEFAULT_MODEL).embed(['hnsw first']).shape)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "(1, 384)\n"), proc.stderr[-2000:]


def test_a_program_that_loaded_usearch_first_gets_a_reason_instead_of_a_crash(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = ("import usearch.index\n"
            "from sleuth.embed import DEFAULT_MODEL, ModelUnavailable, load_embedder\n"
            "try:\n    load_embedder(DEFAULT_MODEL)\nexcept ModelUnavailable as exc:\n    print(exc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, "onnxruntime cannot load in a process that loaded usearch before"
                                                 " it (the process would crash): import onnxruntime before usearch\n")
