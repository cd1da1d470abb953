"""Broker paths: a private folder, keys that separate settings, socket paths within the limit."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from sleuth.broker.paths import (
    BROKER_DIR_ENV,
    SOCKET_PATH_MAX_BYTES,
    BrokerPaths,
    BrokerUnavailable,
    broker_dir,
    broker_key,
    ensure_private_dir,
)


def test_key_depends_on_index_and_engine_settings_not_on_session_settings(tmp_path: Path) -> None:
    base = {"PATH": "/bin"}
    key = broker_key(tmp_path / "a", base)
    assert len(key) == 16 and int(key, 16) >= 0
    assert broker_key(tmp_path / "a", base) == key
    assert broker_key(tmp_path / "b", base) != key
    assert broker_key(tmp_path / "a", {**base, "SLEUTH_LANES": "bm25"}) != key
    assert broker_key(tmp_path / "a", {**base, "SLEUTH_FAULT_LANE_DELAY_MS": "vector=10"}) != key
    for session_only in ("SLEUTH_TOOLS", "SLEUTH_GUIDES", "SLEUTH_INDEX", "SLEUTH_BROKER", BROKER_DIR_ENV):
        assert broker_key(tmp_path / "a", {**base, session_only: "x"}) == key
    assert broker_key(tmp_path / "a", {**base, "OTHER": "x"}) == key


def test_folder_choice(tmp_path: Path) -> None:
    assert broker_dir({BROKER_DIR_ENV: str(tmp_path / "b")}) == tmp_path / "b"
    assert broker_dir({"XDG_RUNTIME_DIR": str(tmp_path)}) == tmp_path / "sleuth"
    assert broker_dir({"XDG_RUNTIME_DIR": str(tmp_path / "missing")}).name == f"sleuth-{os.getuid()}"


def test_private_folder_is_created_0700_and_tightened(tmp_path: Path) -> None:
    folder = ensure_private_dir(tmp_path / "brokers")
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    folder.chmod(0o755)
    ensure_private_dir(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_unusable_folders_are_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BrokerUnavailable, match="not a folder"):
        ensure_private_dir(tmp_path / "file")
    (tmp_path / "link").symlink_to(tmp_path)
    with pytest.raises(BrokerUnavailable, match="symlink"):
        ensure_private_dir(tmp_path / "link")
    with pytest.raises(BrokerUnavailable, match="cannot create"):
        ensure_private_dir(tmp_path / "file" / "sub")
    if os.getuid() == 0:  # only root can give a folder away
        other = tmp_path / "other"
        other.mkdir(mode=0o700)
        os.chown(other, 65534, 65534)
        with pytest.raises(BrokerUnavailable, match="another user"):
            ensure_private_dir(other)


def test_socket_path_limit(tmp_path: Path) -> None:
    long_dir = tmp_path / ("x" * SOCKET_PATH_MAX_BYTES)
    with pytest.raises(BrokerUnavailable, match=f"longer than {SOCKET_PATH_MAX_BYTES} bytes"):
        BrokerPaths.for_index(tmp_path / "idx", {BROKER_DIR_ENV: str(long_dir)})
    assert not long_dir.exists()  # refused before anything was created
    paths = BrokerPaths.for_index(tmp_path / "idx", {BROKER_DIR_ENV: str(tmp_path / "b")})
    assert paths.socket.name == f"{paths.key}.sock" and paths.socket.parent == tmp_path / "b"
    assert {p.suffix for p in (paths.socket, paths.run_lock, paths.spawn_lock, paths.info, paths.log)} == {
        ".sock", ".lock", ".spawn", ".json", ".log"}


def test_key_follows_the_index_config_file(tmp_path: Path) -> None:
    """A session after an edit of ``config.toml`` gets a broker that read it (a running broker read
    the file once, when it started)."""
    base = {"PATH": "/bin"}
    index = tmp_path / "idx"
    index.mkdir()
    absent = broker_key(index, base)
    config = index / "config.toml"
    config.write_text('lanes = ["bm25"]\n')
    os.utime(config, ns=(1_000_000_000, 1_000_000_000))
    first = broker_key(index, base)
    assert first != absent and broker_key(index, base) == first
    config.write_text('lanes = ["index"]\n')  # the same size, another time
    os.utime(config, ns=(2_000_000_000, 2_000_000_000))
    assert broker_key(index, base) not in (absent, first)
    third, before = broker_key(index, base), config.stat().st_ctime_ns
    while config.stat().st_ctime_ns == before:  # the change time has a clock tick's resolution
        config.write_text('lanes = ["exact"]\n')  # the same size, its modification time put back (touch -r)
        os.utime(config, ns=(2_000_000_000, 2_000_000_000))
    assert broker_key(index, base) not in (absent, first, third)
    config.unlink()
    assert broker_key(index, base) == absent
