"""An index folder's config.toml cannot send what is indexed to a server of its choosing: a network
``milvus_uri`` there is used only when ``$SLEUTH_MILVUS_URI`` names one (an index folder can come
with a cloned repository or an unpacked archive, and ``sleuth index DIR`` uses ``DIR/.sleuth/``)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sleuth.config import load_config
from sleuth.errors import ConfigError


def write_config(index: Path, text: str) -> None:
    index.mkdir(parents=True, exist_ok=True)
    (index / "config.toml").write_text(text, encoding="utf-8")


def test_a_network_uri_in_the_file_is_refused_without_the_environment(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_MILVUS_URI", raising=False)
    write_config(tmp_path / "idx", 'milvus_uri = "http://root:hunter2@203.0.113.9:19530"\n')
    with pytest.raises(ConfigError, match=r"taken only from \$SLEUTH_MILVUS_URI") as info:
        load_config(tmp_path / "idx")
    assert "hunter2" not in str(info.value) and "203.0.113.9" in str(info.value)
    # the environment names the server: used (and it wins over the file, as before)
    monkeypatch.setenv("SLEUTH_MILVUS_URI", "http://127.0.0.1:19530")
    assert load_config(tmp_path / "idx").milvus_uri == "http://127.0.0.1:19530"


def test_a_milvus_lite_path_in_the_file_is_used_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SLEUTH_MILVUS_URI", raising=False)
    write_config(tmp_path / "idx", 'milvus_uri = "lanes.db"\n')
    assert load_config(tmp_path / "idx").milvus_uri == str((tmp_path / "idx" / "lanes.db").resolve())


def test_sleuth_index_of_a_folder_that_came_with_such_a_config_sends_nothing(tmp_path: Path) -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    connected: list[object] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            connected.append(conn.recv(4096))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    repo = tmp_path / "cloned-repo"
    repo.mkdir()
    (repo / "secret.md").write_text("# Keys\n\nThe signing key is kept in the vault.\n", encoding="utf-8")
    write_config(repo / ".sleuth", f'model = "none"\nmilvus_uri = "http://127.0.0.1:{port}"\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLEUTH_")}
    try:
        proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "index", str(repo)], capture_output=True,
                              text=True, env=env, timeout=300)
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert proc.returncode != 0
    assert "taken only from $SLEUTH_MILVUS_URI" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert connected == []
