"""Fixtures of the scale-out tests: one PostgreSQL server and one milvus-lite server per test
session (real processes on loopback ports), a fresh database per test."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest

from tests.scale.servers import MilvusLiteServer, PgServer

_databases = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    server = PgServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def catalog_url(pg_server: PgServer, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh database, set as ``$SLEUTH_CATALOG_URL`` for the test."""
    url = pg_server.new_database(f"sleuth_test_{next(_databases)}")
    monkeypatch.setenv("SLEUTH_CATALOG_URL", url)
    return url


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[MilvusLiteServer]:
    server = MilvusLiteServer().start()
    try:
        yield server
    finally:
        server.stop()
