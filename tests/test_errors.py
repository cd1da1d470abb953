"""sleuth.errors.storage_error: real failures (SQLite's, the OS's, tantivy's messages) become the
error a person can act on, and nothing else is mistaken for one."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

import pytest

from sleuth.errors import IndexGone, IndexReadOnly, StorageFull, storage_error, storage_errors


def sqlite_failure(path: Path, setup: str, write: str, uri: str = "") -> sqlite3.Error:
    con = sqlite3.connect(uri or path, uri=bool(uri), isolation_level=None)
    try:
        con.executescript(setup)
        with pytest.raises(sqlite3.Error) as failed:
            con.executescript(write)
        return failed.value
    finally:
        con.close()


def test_sqlite_full_readonly_and_moved(tmp_path: Path) -> None:
    db = tmp_path / "c.sqlite3"
    full = sqlite_failure(db, "CREATE TABLE t (x TEXT); PRAGMA max_page_count = 3;",
                          "INSERT INTO t VALUES (zeroblob(100000));")
    err = storage_error(full, tmp_path, "the catalog")
    assert isinstance(err, StorageFull) and err.exit_code == 8
    assert str(err) == (f"no space left on device while writing the catalog in {tmp_path}: free some space and run"
                        " `sleuth index` again; the index still answers from its last committed state")

    read_only = sqlite_failure(db, "", "INSERT INTO t VALUES ('x');", uri=f"{db.as_uri()}?mode=ro")
    err = storage_error(read_only, tmp_path, "the catalog", retry="write it again")
    assert isinstance(err, IndexReadOnly) and err.exit_code == 9
    assert "make the folder writable and write it again" in str(err)

    con = sqlite3.connect(db, isolation_level=None)
    con.execute("SELECT 1 FROM t").fetchall()
    os.rename(tmp_path, tmp_path.with_name("moved"))  # the folder moves away under the open database
    with pytest.raises(sqlite3.Error) as moved:
        con.execute("INSERT INTO t VALUES ('x')")
    con.close()
    err = storage_error(moved.value, tmp_path, "the catalog")
    assert isinstance(err, IndexGone) and err.exit_code == 10
    assert str(err).startswith(f"the index folder {tmp_path} was deleted or moved")


@pytest.mark.parametrize(("code", "kind", "said"), [
    (errno.ENOSPC, StorageFull, "no space left on device"), (errno.EDQUOT, StorageFull, "disk quota exceeded"),
    (errno.EFBIG, StorageFull, "file too large"), (errno.EROFS, IndexReadOnly, "read-only file system"),
    (errno.EACCES, IndexReadOnly, "permission denied"),
])
def test_os_errors(tmp_path: Path, code: int, kind: type, said: str) -> None:
    err = storage_error(OSError(code, os.strerror(code), str(tmp_path / "f")), tmp_path, "the lane files")
    assert isinstance(err, kind) and said in str(err) and "the lane files" in str(err)


def test_tantivy_messages_name_the_os_error(tmp_path: Path) -> None:
    commit = ValueError("Internal error: 'No space left on device (os error 28)'")
    assert isinstance(storage_error(commit, tmp_path, "the postings"), StorageFull)
    lock = ValueError('Failed to acquire Lockfile: IoError(Os { code: 30, kind: ReadOnlyFilesystem, message: '
                      '"Read-only file system" }). None')
    assert isinstance(storage_error(lock, tmp_path, "the postings"), IndexReadOnly)


def test_other_failures_are_left_alone(tmp_path: Path) -> None:
    assert storage_error(ValueError("invalid literal for int()"), tmp_path, "x") is None
    assert storage_error(KeyError("a"), tmp_path, "x") is None
    assert storage_error(OSError(errno.ENOENT, "No such file", "f"), tmp_path, "x") is None  # the folder is there
    with pytest.raises(KeyError), storage_errors(tmp_path, "x"):
        raise KeyError("a")
    with pytest.raises(StorageFull) as raised, storage_errors(tmp_path, "the postings"):
        raise OSError(errno.ENOSPC, "No space left on device")
    assert isinstance(raised.value.__cause__, OSError)
