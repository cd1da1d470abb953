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

from sleuth.store.urls import redact_driver_message, redact_url

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
    # a raw "/", "?", "#" or space in the password (libpq reads the rest as the host, port or path)
    ("postgresql://u:hun/ter2@h/db", "postgresql://u:***@h/db"),
    ("postgresql://u:hun?ter#2@h:5/db", "postgresql://u:***@h:5/db"),
    ("postgresql://u:hun ter2@h/db", "postgresql://u:***@h/db"),
    ("URI: postgresql://u:hun/ter2@h/db", "URI: postgresql://u:***@h/db"),
    ("/srv/lanes.db", "/srv/lanes.db"),
    # attack session 26b: a raw "?", "#" or space in the user (libpq's user runs to its ":"), a
    # percent-encoded parameter name (libpq decodes it), a backslash-escaped space in a value
    ("postgresql://u?x:hunter2@h/db", "postgresql://u?x:***@h/db"),
    ("postgresql://u#x:hunter2@h/db", "postgresql://u#x:***@h/db"),
    ("postgresql://u x:hunter2@h/db", "postgresql://u x:***@h/db"),
    ("cannot reach postgresql://u?x:hunter2@h/db: refused", "cannot reach postgresql://u?x:***@h/db: refused"),
    ("postgresql://h/db?pass%77ord=hunter2", "postgresql://h/db?pass%77ord=***"),
    ("postgresql://h/db?x=1&%73slpassword=hunter2", "postgresql://h/db?x=1&%73slpassword=***"),
    ("postgresql://h/db?password =hunter2", "postgresql://h/db?password =***"),
    ("host=h password=hun\\ ter2 dbname=x", "host=h password=*** dbname=x"),
    ("x a://u:p@h b://u:q@h", "x a://u:***@h b://u:***@h"),
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


@pytest.mark.parametrize(("message", "url", "shown"), [
    ('invalid percent-encoded token: "hun%ter2"', "postgresql://u:hun%ter2@h/db",
     'invalid percent-encoded token: "..."'),
    ('end of string reached when looking for matching "]" in IPv6 host address in URI: "postgresql://u:hunter2@[h"',
     "postgresql://u:hunter2@[h", 'end of string reached when looking for matching "]" in IPv6 host address in URI:'
     ' "..."'),
    ('invalid integer value "hun" for connection option "port"', "postgresql://u:hun/ter2@h/db",
     'invalid integer value "..." for connection option "port"'),
    ('unexpected spaces found in "hun ter2@h/db", use percent-encoded spaces (%20) instead',
     "postgresql://u:hun ter2@h/db", 'unexpected spaces found in "...", use percent-encoded spaces (%20) instead'),
    ("failed to resolve host 'u': [Errno -8] Servname not supported", "postgresql://u:hun/ter2@h/db",
     "failed to resolve host 'u': [Errno -8] Servname not supported"),
    ('connection to server at "db.example", port 5433 failed: FATAL:  password authentication failed for user "u"',
     "postgresql://u:hunter2@db.example:5433/db", 'connection to server at "db.example", port 5433 failed: FATAL: '
     ' password authentication failed for user "u"'),
    ('database "notes" does not exist', "host=h dbname=notes password=hunter2", 'database "notes" does not exist'),
])
def test_a_driver_message_quotes_only_the_urls_names(message: str, url: str, shown: str) -> None:
    """libpq quotes the token it could not parse, a piece of the password included: every quoted
    fragment but the URL's user, host, port and database, an option's name or one punctuation
    mark is emptied (attack session 26)."""
    assert redact_driver_message(message, url) == shown


def test_many_schemes_without_a_password_are_read_once() -> None:
    """``"://:"`` repeated (no ``@``) was tried again from every ``://`` by ``\\S*@``, quadratic
    (17 s for 80 kB): the run's last ``@`` is found once. Asserted on a text of 2 MB."""
    text = "://:" * 500_000
    assert redact_url(text) == text
    assert redact_url(text + "@h") == "://:***@h"


#: The password of the malformed URLs below: no part of it may be shown.
PIECES = ("Zq9s", "EcReT")


@pytest.mark.parametrize(("url", "problem"), [
    ("postgresql://u:Zq9sEcReT@[bad", 'end of string reached when looking for matching "]" in IPv6 host address'
     ' in URI: "..."'),
    ("postgresql://u:Zq9s%zzEcReT@127.0.0.1:{port}/db", 'invalid percent-encoded token: "..."'),
    ("postgresql://u:Zq9s%EcReT@127.0.0.1:{port}/db", "a percent-encoded part of the URL is not UTF-8 text"),
    ("postgresql://u:Zq9s/EcReT@127.0.0.1:{port}/db", "failed to resolve host 'u':"),
    ("postgresql://:Zq9s/EcReT@127.0.0.1:{port}/db", 'invalid integer value "..." for connection option "port"'),
    ("postgresql://u:Zq9s EcReT@127.0.0.1:{port}/db", 'unexpected spaces found in "...", use percent-encoded'),
    ("host=127.0.0.1 password='Zq9s EcReT", "unterminated quoted string in connection info string"),
    ("postgresql://u?x:Zq9sEcReT@127.0.0.1:{port}/db", "connection failed:"),
    ("postgresql://127.0.0.1:{port}/db?pass%77ord=Zq9sEcReT", "connection failed:"),
], ids=["unmatched bracket", "bad percent-encoding", "percent-encoded non-UTF-8", "raw slash", "raw slash, no user",
        "raw space", "key/value", "raw ? in the user", "percent-encoded parameter name"])
def test_a_malformed_catalog_url_is_named_without_any_part_of_its_password(tmp_path: Path, url: str,
                                                                          problem: str) -> None:
    """libpq's and psycopg's parse errors quoted pieces of the URL (before: ``invalid
    percent-encoded token: "Zq9s%EcReT"``, the whole URL with a raw space in its password): the
    CLI's error names the problem and shows no part of the password. No server is needed."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    env = {**os.environ, "SLEUTH_BROKER": "0", "SLEUTH_MODEL": "none", "PYTHONPATH": os.pathsep.join(sys.path),
           "SLEUTH_CATALOG_URL": url.format(port=_free_port())}
    env.pop("SLEUTH_MILVUS_URI", None)
    done = subprocess.run([sys.executable, "-m", "sleuth", "index", str(tmp_path / "notes"), "--index",
                           str(tmp_path / "idx"), "--project", "p"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode != 0
    assert done.stderr.startswith("error: cannot reach the catalog at ") and problem in done.stderr, done.stderr
    assert not [piece for piece in PIECES if piece in done.stderr + done.stdout], done.stderr
