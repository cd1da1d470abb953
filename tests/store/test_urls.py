"""Passwords in the catalog's URL or a Milvus URI never reach a message (found by an attack
session: ``?password=``, key/value connection strings and pymilvus' own error text, quoting the
URI, were shown as given)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.store.urls import redact_url

SECRET = "hunter2"


@pytest.mark.parametrize(("url", "shown"), [
    ("postgresql://u:hunter2@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:hun@ter2@h/db", "postgresql://u:***@h/db"),
    ("postgresql://h/db?password=hunter2", "postgresql://h/db?password=***"),
    ("postgresql://u@h/db?sslpassword=hunter2&sslmode=require", "postgresql://u@h/db?sslpassword=***&sslmode=require"),
    ("host=h password=hunter2 dbname=x", "host=h password=*** dbname=x"),
    ("host=h password = 'hun ter2' dbname=x", "host=h password = *** dbname=x"),
    ("http://root:hunter2@127.0.0.1:19530", "http://root:***@127.0.0.1:19530"),
    ("postgresql://u@h:5432/db", "postgresql://u@h:5432/db"),
    ("/srv/lanes.db", "/srv/lanes.db"),
])
def test_passwords_are_redacted(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("setting", [
    ("SLEUTH_CATALOG_URL", "postgresql://u@127.0.0.1:{port}/db?password=hunter2"),
    ("SLEUTH_CATALOG_URL", "host=127.0.0.1 port={port} dbname=db password=hunter2"),
    ("SLEUTH_MILVUS_URI", "ftp://root:hunter2@127.0.0.1:{port}"),
], ids=["pg query parameter", "pg key/value", "milvus odd scheme"])
def test_a_back_end_that_cannot_be_reached_is_named_without_its_password(tmp_path: Path,
                                                                        setting: tuple[str, str]) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    env = {**os.environ, "SLEUTH_BROKER": "0", "SLEUTH_MODEL": "none",
           "PYTHONPATH": os.pathsep.join(sys.path), setting[0]: setting[1].format(port=_free_port())}
    env.pop("SLEUTH_CATALOG_URL" if setting[0] != "SLEUTH_CATALOG_URL" else "SLEUTH_MILVUS_URI", None)
    done = subprocess.run([sys.executable, "-m", "sleuth", "index", str(tmp_path / "notes"), "--index",
                           str(tmp_path / "idx"), "--project", "p"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode != 0
    assert "cannot reach" in done.stderr and "***" in done.stderr, done.stderr
    assert SECRET not in done.stderr + done.stdout
