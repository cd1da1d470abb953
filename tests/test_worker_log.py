"""What ``sleuth status`` says of an embedding worker that ended without finishing: the last line it
wrote to ``embed.log`` other than its progress (a traceback's last line), never an older worker's."""

from __future__ import annotations

import os
from pathlib import Path

from sleuth.background import EMBED_LOG_FILE, LOG_LINE_SHOWN_MAX_CHARS, LOG_TAIL_BYTES, last_log_line


def test_the_workers_own_last_line(tmp_path: Path) -> None:
    log = tmp_path / EMBED_LOG_FILE
    assert last_log_line(tmp_path, 7) is None  # no log
    log.write_text("sleuth embed (process 5): started at t0\nTraceback (most recent call last):\n"
                   "MemoryError: an older worker's\n"
                   "sleuth embed (process 7): started at t1\n"
                   "sleuth embed (process 7): embedding 256/300 blocks, 41 blocks/s\n"
                   "Traceback (most recent call last):\n  File \"x.py\", line 1\n"
                   "onnxruntime.EPFail: \x1b[31mbad\x1b[0m graph  \n\n"
                   "sleuth embed (process 7): embedding 300/300 blocks\n")
    assert last_log_line(tmp_path, 7) == "onnxruntime.EPFail: ?[31mbad?[0m graph"
    assert last_log_line(tmp_path, 5) == "MemoryError: an older worker's"  # up to the next worker's lines
    assert last_log_line(tmp_path, 8) is None  # never started here: nothing is blamed on it
    log.write_text("sleuth embed (process 7): started at t1\nsleuth embed (process 7): embedding 1/3 blocks\n")
    assert last_log_line(tmp_path, 7) is None  # killed: only progress lines
    log.write_text("x" * (2 * LOG_TAIL_BYTES) + "\nsleuth embed (process 7): embedding 1/3\n"
                   + "E" * 1000 + "\n")
    assert last_log_line(tmp_path, 7) == "E" * (LOG_LINE_SHOWN_MAX_CHARS - 1) + "…"
    log.unlink()
    os.symlink(tmp_path / "elsewhere.log", log)
    (tmp_path / "elsewhere.log").write_text("sleuth embed (process 7): s\nsecret\n")
    assert last_log_line(tmp_path, 7) is None  # a symlink is not followed
    log.unlink()
    log.mkdir()  # a folder: no line, no error (sleuth status failed with "Is a directory")
    assert last_log_line(tmp_path, 7) is None
    log.rmdir()
    os.mkfifo(log)  # a FIFO: not read, not waited on
    assert last_log_line(tmp_path, 7) is None



def test_a_hostile_state_file_is_read_as_far_as_it_is_believable(tmp_path: Path) -> None:
    """``embed.state.json`` comes with the index folder (a committed ``.sleuth/``): a field of another
    type or range than a worker writes is left out, and a FIFO, a symlink (to ``/dev/zero``) or an
    oversized file is not read. An attack round: a string or huge pid, a rate of 1e-320 or an
    ``updated_at`` number ended `sleuth status` in a traceback; a FIFO hung it; /dev/zero ran it out
    of memory."""
    from sleuth.background import EMBED_STATE_FILE, STATE_FILE_MAX_BYTES, embed_lock, embedding_progress, read_state
    from sleuth.config import Config
    from sleuth.engine import Engine
    from sleuth.reports import EmbeddingProgress

    state = tmp_path / EMBED_STATE_FILE
    state.write_text('{"pid": "x\\u001b[31m", "state": "loading", "model": 5, "embedded": true, "to_embed": -1,'
                     ' "rate_blocks_per_s": 1e-320, "updated_at": 5, "error": null, "extra": [1]}')
    assert read_state(tmp_path) == {"state": "loading", "error": None, "extra": [1]}
    for pid in (1e300, -5, True, 2**40):
        state.write_text(f'{{"pid": {str(pid).lower()}, "state": "running", "rate_blocks_per_s": 3.5}}')
        assert read_state(tmp_path) == {"state": "running", "rate_blocks_per_s": 3.5}
    state.write_text('{"pid": 42, "state": "running", "rate_blocks_per_s": "fast"}')
    assert read_state(tmp_path) == {"pid": 42, "state": "running"}
    state.write_text('{"state": "failed", "error": "\\ud800"}')  # a lone surrogate: `status --format json` failed
    assert read_state(tmp_path) == {"state": "failed"}
    state.write_text(" " * STATE_FILE_MAX_BYTES + "{}")
    assert read_state(tmp_path) is None
    state.unlink()
    os.mkfifo(state)
    assert read_state(tmp_path) is None  # not waited on
    state.unlink()
    os.symlink("/dev/zero", state)
    assert read_state(tmp_path) is None  # a symlink is not followed
    state.unlink()
    # While a process holds the embed lock, status reads such a file without failing.
    index = tmp_path / "idx"
    with Engine(index, Config(model="none")) as engine, embed_lock(index, 10.0) as held:
        assert held
        for text in ('{"pid": "x", "state": "loading"}', '{"pid": 1e300, "state": "loading"}',
                     '{"pid": 7, "state": "running", "model": "m", "rate_blocks_per_s": 1e-320}',
                     '{"pid": 7, "state": "running", "model": "m", "updated_at": 5}'):
            (index / EMBED_STATE_FILE).write_text(text)
            shown = EmbeddingProgress.model_validate(embedding_progress(engine, "m", 1, 5))
            assert shown.state == "running" and shown.eta_s is None, text


def test_the_log_is_never_written_through_a_symlink_or_a_fifo(tmp_path: Path) -> None:
    """An attack round: `embed.log` as a FIFO hung `sleuth index` for good (starting the worker
    opened it to append); as a symlink, the worker's lines were appended to the file it named."""
    import pytest

    from sleuth.background import EMBED_LOG_FILE, _open_log
    from tests.integration.conftest import run_cli

    log = tmp_path / EMBED_LOG_FILE
    with _open_log(log) as f:
        f.write(b"one\n")
    with _open_log(log) as f:
        f.write(b"two\n")
    assert log.read_bytes() == b"one\ntwo\n"
    log.unlink()
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, log)
    with pytest.raises(OSError, match="embed.log is not a regular file"):
        _open_log(log)
    assert victim.read_text() == "mine\n"
    log.unlink()
    os.mkfifo(log)
    with pytest.raises(OSError, match="embed.log is not a regular file"):
        _open_log(log)
    # `sleuth index` goes on without a worker, and says why.
    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    run_cli("index", str(notes), "--index", str(index), "--no-wait", env={"SLEUTH_MODEL": "none"})
    os.mkfifo(index / EMBED_LOG_FILE)
    out = run_cli("index", str(notes), "--index", str(index), "--no-wait").stdout
    assert (f"  keyword search is ready; the embedding worker could not start ({index / EMBED_LOG_FILE} is not a"
            " regular file (a symlink, FIFO or folder)): run `sleuth embed` to embed 1 block(s)") in out.splitlines()
