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

