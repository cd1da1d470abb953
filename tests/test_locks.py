"""The one wait of sleuth's locks (``retry_until``: a file's flock, PostgreSQL's advisory lock)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from sleuth.locks import NotALockFile, lock_exclusive, retry_until


def test_retry_until_tries_again_until_the_attempt_succeeds() -> None:
    calls: list[int] = []

    def third_time() -> bool:
        calls.append(1)
        return len(calls) == 3

    assert retry_until(third_time, timeout_s=600, poll_s=0)
    assert len(calls) == 3


def test_retry_until_with_no_time_tries_once_and_passes_errors_on() -> None:
    calls: list[int] = []
    assert not retry_until(lambda: bool(calls.append(1)), timeout_s=0, poll_s=0)
    assert calls == [1]

    def broken() -> bool:
        raise OSError("the server went away")

    with pytest.raises(OSError, match="the server went away"):
        retry_until(broken, timeout_s=600, poll_s=0)


def test_lock_exclusive_returns_none_while_another_descriptor_holds_it_and_refuses_a_folder(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    holder = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # flock locks belong to the open file: another open waits
        before = len(os.listdir("/proc/self/fd"))
        assert lock_exclusive(path, 0) is None
        assert len(os.listdir("/proc/self/fd")) == before  # the descriptor it opened is closed again
    finally:
        os.close(holder)
    fd = lock_exclusive(path, 0)
    assert fd is not None
    os.close(fd)
    (tmp_path / "planted.lock").mkdir()
    with pytest.raises(NotALockFile, match="planted.lock is not a regular file .*remove it"):
        lock_exclusive(tmp_path / "planted.lock", 0)


@pytest.mark.parametrize("raw", ["1e999", "inf", "86401", "-1", "nan", "soon"])
def test_a_write_lock_wait_without_end_or_out_of_range_is_refused(raw: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack session 32 (low): SLEUTH_WRITE_LOCK_TIMEOUT_S=1e999 was taken, and a writer then waited forever."""
    from sleuth.errors import ConfigError
    from sleuth.locks import WRITE_LOCK_TIMEOUT_ENV, write_lock_timeout_s

    monkeypatch.setenv(WRITE_LOCK_TIMEOUT_ENV, raw)
    with pytest.raises(ConfigError) as caught:
        write_lock_timeout_s()
    assert str(caught.value) == f"SLEUTH_WRITE_LOCK_TIMEOUT_S must be a number of seconds from 0 to 86,400, got {raw!r}"
    monkeypatch.setenv(WRITE_LOCK_TIMEOUT_ENV, "86400")
    assert write_lock_timeout_s() == 86_400.0


def test_a_holder_named_by_a_path_that_is_not_utf8_is_written_escaped(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`sleuth index` of a root whose name is not UTF-8 ended in a UnicodeEncodeError traceback once the
    project was chosen under the write lock: the lock writes its holder's command line, which held
    the surrogate-escaped byte. The PostgreSQL lock's application_name would have failed alike."""
    from sleuth.locks import WriteLock
    from sleuth.store.pg import _application_name

    monkeypatch.setattr("sys.argv", ["sleuth", "index", os.fsdecode(b"/tmp/r\xe9pertoire")])
    lock = WriteLock(tmp_path / "write.lock", 1.0)
    assert lock.acquire()
    try:
        assert lock.holder() == f"process {os.getpid()} (sleuth index /tmp/r\\udce9pertoire)"
    finally:
        lock.release()
    assert _application_name() == f"sleuth {os.getpid()} sleuth index r\\udce9pertoire"


def test_the_holder_quoted_is_bounded_and_without_nuls(tmp_path: Path) -> None:
    """Attack round of stop 40: a planted lock file's 4,096 bytes of NULs and text made a waiting
    line and the busy error of about 16 KB each (a NUL escaped is 4 characters)."""
    from sleuth.locks import HOLDER_MAX_CHARS, WriteLock

    path = tmp_path / "write.lock"
    path.write_bytes(b"holder Y" + b"\x00" * 3000 + b"z" * 5000)
    holder = WriteLock(path, 0).holder()
    assert holder == ("holder Y" + "z" * 5000)[:HOLDER_MAX_CHARS] and len(holder) == 240
