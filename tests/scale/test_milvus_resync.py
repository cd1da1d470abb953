"""A Milvus database emptied or replaced under an index whose catalog says Milvus is up to date
(found by an attack session: the sync's progress lives in the catalog, so sleuth never synced
again and the Milvus lanes answered from whatever the database held). Each collection carries a
mark the catalog records (:mod:`sleuth.store.milvus_sync`); a collection with a mark the catalog
does not know is rebuilt, so the lanes answer as before: after the collections are dropped, taken
over by another index configured with the same collection names, or the server's data replaced by
an older copy. A ``milvus-lite server`` of the test's own (a real process: milvus-lite in this
process would keep the old data in memory)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import ConfigError
from sleuth.lanes import milvus as milvus_lanes
from sleuth.store import milvus as milvus_store
from tests.scale.servers import MilvusLiteServer
from tests.scale.test_milvus_lanes import assert_same, index_all, lane_answers, write_projects


class Server:
    """``milvus-lite server`` on a data folder of the test's, stopped and started again at will."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.server: MilvusLiteServer | None = None
        self.port = 0

    def start(self) -> None:
        server = MilvusLiteServer()
        shutil.rmtree(server.root)
        server.root = self.root
        self.root.mkdir(parents=True, exist_ok=True)
        if self.port:
            server.port = self.port
        self.server = server.start()
        self.port = server.port

    def stop(self) -> None:
        assert self.server is not None and self.server.proc is not None
        self.server.proc.terminate()
        self.server.proc.wait(timeout=60)
        self.server = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def client(self) -> Any:
        from pymilvus import MilvusClient

        return MilvusClient(self.uri, dedicated=True)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    s = Server(tmp_path / "milvus")
    s.start()
    try:
        yield s
    finally:
        if s.server is not None:
            s.stop()


def _engine(index: Path, server: Server) -> Engine:
    return Engine(index, Config(milvus_uri=server.uri, milvus_collection="shared"))


@pytest.fixture
def synced(tmp_path: Path, server: Server) -> tuple[Path, dict]:  # type: ignore[type-arg]
    """An index of every project synced to the server, and its lanes' answers."""
    write_projects(tmp_path / "src")
    with _engine(tmp_path / "idx", server) as e:
        index_all(e, tmp_path / "src")
        answers = lane_answers(e)
    assert answers[("bm25", "advisory lock")] and answers[("vector", "advisory lock")]
    return tmp_path / "idx", answers


def _answers(index: Path, server: Server) -> dict:  # type: ignore[type-arg]
    with _engine(index, server) as e:
        return lane_answers(e)


def test_dropped_collections_are_synced_again(server: Server, synced: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    index, before = synced
    client = server.client()
    for name in client.list_collections():
        client.drop_collection(name)
    client.close()
    assert_same(before, _answers(index, server))


def test_an_older_copy_of_the_milvus_data_is_synced_again(tmp_path: Path, server: Server,
                                                          synced: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    index, _ = synced
    server.stop()
    shutil.copytree(server.root, tmp_path / "old")
    server.start()
    (tmp_path / "src" / "alpha" / "gen.md").write_text("# Generations\n\nThe fusion weights and the lock changed.\n")
    with _engine(index, server) as e:
        index_all(e, tmp_path / "src")
        after = lane_answers(e)
    server.stop()
    shutil.rmtree(server.root)
    shutil.copytree(tmp_path / "old", server.root)
    server.start()
    assert_same(after, _answers(index, server))


@pytest.mark.parametrize("collection", ["shared_lex", "shared_dense"])
def test_rows_deleted_by_another_client_are_synced_again(server: Server, synced: tuple[Path, dict],  # type: ignore[type-arg]
                                                         collection: str) -> None:
    """Found by an attack session: a collection keeps its mark when another client deletes rows
    from it, so the catalog trusted it and the Milvus lanes answered without those rows for good.
    The row count each sync leaves is recorded and compared; a collection that differs is rebuilt."""
    index, before = synced
    client = server.client()
    ids = [r["block_id"] for r in client.query(collection, filter="", output_fields=["block_id"], limit=10_000)]
    client.delete(collection, filter=f"block_id in {json.dumps(ids[: len(ids) // 2])}")
    client.flush(collection)
    client.close()
    assert_same(before, _answers(index, server))


def test_rows_added_by_another_client_are_synced_again(server: Server, synced: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    index, before = synced
    client = server.client()
    rows = client.query("shared_lex", filter="", output_fields=["*"], limit=1)
    row = {**rows[0], "block_id": "f" * 16 + ":" + "0" * 12, "doc_id": "f" * 16}
    client.insert("shared_lex", [row])
    client.flush("shared_lex")
    client.close()
    with _engine(index, server) as e:
        assert_same(before, lane_answers(e))
        assert not any("f" * 16 in h.best_block_id for q in ("advisory lock", "lock") for h in e.search(q).hits)


def test_a_long_running_process_notices_collections_dropped_under_it(
        server: Server, synced: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[type-arg]
    index, before = synced
    monkeypatch.setattr(milvus_lanes, "MILVUS_RECHECK_INTERVAL_S", 0.0)
    with _engine(index, server) as e:
        assert_same(before, lane_answers(e))
        assert e.search("advisory lock").notice is None
        client = server.client()
        for name in client.list_collections():
            client.drop_collection(name)
        client.close()
        rebuilt = e.search("advisory lock")  # waits for the sync that fills Milvus again, and says so
        again = e.search("advisory lock")
        assert_same(before, lane_answers(e))
    assert rebuilt.notice is not None and re.fullmatch(
        r"Milvus was brought up to the catalog before this search answered \(a sync of \d+\.\d s: Milvus had"
        r" been emptied, replaced or left behind\)", rebuilt.notice)
    assert again.notice is None and [h.doc_id for h in again.hits] == [h.doc_id for h in rebuilt.hits]


def test_a_lane_that_fails_is_named_not_reported_as_no_match(
        server: Server, synced: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[type-arg]
    """Found with the released collections below: a search whose only lane failed said "no document
    matches the query" and the text output did not show the failure."""
    from sleuth.commands.reading import render_text

    index, _ = synced
    monkeypatch.setattr(milvus_lanes, "MILVUS_RECHECK_INTERVAL_S", 1e9)  # the process trusts its last sync
    with _engine(index, server) as e:
        assert e.search("advisory lock", lanes=["bm25"]).hits
        client = server.client()
        client.drop_collection("shared_lex")
        client.close()
        resp = e.search("advisory lock", lanes=["bm25"])
    assert not resp.hits and list(resp.failed_lanes) == ["bm25"]
    assert resp.notice is not None and resp.notice.startswith("the bm25 lane failed, so nothing was searched (bm25: ")
    assert "no document matches" not in resp.notice
    assert "(lane bm25 failed: " in render_text(resp, explain=False)


def test_a_new_process_searches_a_milvus_database_it_did_not_write(tmp_path: Path) -> None:
    """Found by this attack session: milvus-lite releases every collection when a process opens its
    database again, so `sleuth search` in any process but the indexing one failed its Milvus lanes
    ("call load() before search") and answered "no results". The lanes load a released collection."""
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "src" / "p").mkdir(parents=True)
    (tmp_path / "src" / "p" / "a.md").write_text("# Locks\n\nThe advisory lock is held by one writer.\n")
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "config.toml").write_text(f'model = "none"\nmilvus_uri = "{tmp_path / "lanes.db"}"\n')
    env = {**os.environ, "SLEUTH_BROKER": "0"}

    def sleuth(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sleuth", *args, "--index", str(tmp_path / "idx")], env=env,
                              capture_output=True, text=True, timeout=600)

    assert sleuth("index", str(tmp_path / "src" / "p"), "--project", "p").returncode == 0
    for _ in range(2):  # a new process each time
        proc = sleuth("search", "advisory lock", "--lanes", "bm25,index,tfidf", "--format", "json")
        assert proc.returncode == 0, proc.stderr
        resp = json.loads(proc.stdout)
        assert [h["path"] for h in resp["hits"]] == ["a.md"] and resp["failed_lanes"] == {}
        assert "MilvusException" not in proc.stderr


def test_a_local_db_held_by_another_process_says_why_it_cannot_be_opened(tmp_path: Path) -> None:
    """Found by a new user's trial: with `milvus_uri = "lanes.db"`, `sleuth search` right after
    `sleuth index` failed with "Open local milvus failed" while the background embedding worker held
    the .db (milvus-lite opens it for one process); the error now says so, and how to avoid it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_text("# Locks\n\nThe advisory lock is held by one writer.\n")
    (tmp_path / "idx").mkdir()
    db = tmp_path / "lanes.db"
    (tmp_path / "idx" / "config.toml").write_text(f'model = "none"\nmilvus_uri = "{db}"\n')
    env = {**os.environ, "SLEUTH_BROKER": "0"}

    def sleuth(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sleuth", *args, "--index", str(tmp_path / "idx")], env=env,
                              capture_output=True, text=True, timeout=600)

    assert sleuth("index", str(tmp_path / "src"), "--project", "p").returncode == 0
    holder = subprocess.Popen(  # another process with the .db open, as the embedding worker has it
        [sys.executable, "-c", "import sys\nfrom pymilvus import MilvusClient\n"
         f"c = MilvusClient({str(db)!r})\nprint('open', flush=True)\nsys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        held = sleuth("search", "advisory lock", "--lanes", "bm25")
    finally:
        holder.communicate("", timeout=120)
    assert held.returncode == 0 and held.stderr == ""  # the search answers, saying why its lane failed
    assert held.stdout.splitlines()[0] == (
        f"(lane bm25 failed: StorageError: cannot reach Milvus at {db}: <ConnectionConfigException: (code=1,"
        f" message=Open local milvus failed)>{milvus_store.LOCAL_DB_HINT})")
    again = sleuth("search", "advisory lock", "--lanes", "bm25", "--format", "json")
    assert again.returncode == 0 and [h["path"] for h in json.loads(again.stdout)["hits"]] == ["a.md"]


def test_another_applications_collection_of_the_same_name_is_never_dropped(tmp_path: Path, server: Server) -> None:
    """Found by an attack session: a sync that rebuilds a collection dropped whatever held its name,
    another application's collection too (``orders_lex`` of ``milvus_collection = "orders"``, its
    rows gone). A collection without sleuth's mark or fields is left alone and the run says why."""
    from pymilvus import DataType

    from sleuth.errors import ConfigError

    client = server.client()
    schema = client.create_schema(auto_id=True)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("v", DataType.FLOAT_VECTOR, dim=4)
    params = client.prepare_index_params()
    params.add_index("v", index_type="FLAT", metric_type="L2")
    client.create_collection("orders_lex", schema=schema, index_params=params)
    client.insert("orders_lex", [{"v": [1.0, 2.0, 3.0, float(i)]} for i in range(5)])
    client.flush("orders_lex")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.md").write_text("# A\n\nThe advisory lock.\n")
    with (Engine(tmp_path / "idx", Config(milvus_uri=server.uri, milvus_collection="orders", model="none")) as e,
          pytest.raises(ConfigError, match="'orders_lex' exists and was not made by sleuth")):
        e.index([tmp_path / "src"], project="p")
    assert client.query("orders_lex", filter="", output_fields=["count(*)"])[0]["count(*)"] == 5
    assert [f["name"] for f in client.describe_collection("orders_lex")["fields"]] == ["id", "v"]
    client.close()


def test_a_cloned_config_cannot_name_another_indexs_collections(tmp_path: Path, server: Server,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack session 25: a cloned repository's ``.sleuth/config.toml`` set ``milvus_collection`` to
    another index's; each sync then found the other's mark and rebuilt the collections, so the two
    indexes wiped each other's by turns. With the Milvus of ``$SLEUTH_MILVUS_URI`` the file's name
    is refused, readably, and the other index's collections are left as they were."""
    write_projects(tmp_path / "src")
    with Engine(tmp_path / "idx", Config(model="none", milvus_uri=server.uri, milvus_collection="victim")) as e:
        index_all(e, tmp_path / "src")
        before = lane_answers(e, lanes=("bm25", "index", "tfidf"))
        marked = e.lanes["bm25"].shared.index.client.describe_collection("victim_lex")["properties"]  # type: ignore[attr-defined]
    clone = tmp_path / "clone"
    (clone / "notes").mkdir(parents=True)
    (clone / "notes" / "x.md").write_text("# Planted\n\nA lock of the cloned repository.\n")
    (clone / ".sleuth").mkdir()
    (clone / ".sleuth" / "config.toml").write_text('model = "none"\nmilvus_collection = "victim"\n')
    monkeypatch.setenv("SLEUTH_MILVUS_URI", server.uri)
    monkeypatch.delenv("SLEUTH_MILVUS_COLLECTION", raising=False)
    with pytest.raises(ConfigError, match=r"milvus_collection in .*config.toml names collections on the Milvus of"
                                          r" \$SLEUTH_MILVUS_URI.*set SLEUTH_MILVUS_COLLECTION"):
        with Engine(clone / ".sleuth") as e:
            e.index([clone / "notes"], project="clone")
    proc = subprocess.run([sys.executable, "-m", "sleuth", "index", str(clone / "notes"), "--index",
                           str(clone / ".sleuth")], env=os.environ, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "taken only from $SLEUTH_MILVUS_COLLECTION" in proc.stderr
    monkeypatch.setenv("SLEUTH_MILVUS_COLLECTION", "clone")  # a name of its own: used
    with Engine(clone / ".sleuth") as e:
        e.index([clone / "notes"], project="clone")
        assert [h.path for h in e.search("lock", lanes=["bm25"]).hits] == ["x.md"]
    monkeypatch.delenv("SLEUTH_MILVUS_URI")
    monkeypatch.delenv("SLEUTH_MILVUS_COLLECTION")
    with Engine(tmp_path / "idx", Config(model="none", milvus_uri=server.uri, milvus_collection="victim")) as e:
        client = e.lanes["bm25"].shared.index.client  # type: ignore[attr-defined]
        assert client.describe_collection("victim_lex")["properties"] == marked  # not rebuilt
        assert lane_answers(e, lanes=("bm25", "index", "tfidf")) == before


def test_two_indexes_naming_the_same_collections_never_drop_each_others(tmp_path: Path, server: Server) -> None:
    """Attack of stop 29: two indexes (two catalogs) given the same ``milvus_collection`` on one
    Milvus took each other's collections for a replaced database: the second rebuilt into the spare
    side, moved the alias and dropped the first's collection, whose searches then found nothing
    (no failure said why), and so on by turns. Each collection now carries its index's identity
    (catalog meta ``milvus:index_id``); another index's is refused, readably, and left as it was."""
    write_projects(tmp_path / "src")
    cfg = Config(milvus_uri=server.uri, milvus_collection="twin", model="none")
    with Engine(tmp_path / "first", cfg) as e:
        index_all(e, tmp_path / "src")
        before = lane_answers(e, lanes=("bm25", "index", "tfidf"))
    with (Engine(tmp_path / "second", cfg) as e,
          pytest.raises(ConfigError, match=r"the Milvus collection 'twin_lex_a' belongs to another sleuth index .*"
                                           r"Set milvus_collection \(or SLEUTH_MILVUS_COLLECTION\) to another name")):
        e.index([tmp_path / "src" / "alpha"], project="alpha")
    client = server.client()
    assert sorted(client.list_collections()) == ["twin_lex_a"]
    client.close()
    with Engine(tmp_path / "first", cfg) as e:
        assert lane_answers(e, lanes=("bm25", "index", "tfidf")) == before
    proc = subprocess.run([sys.executable, "-m", "sleuth", "search", "advisory lock", "--lanes", "bm25", "--index",
                           str(tmp_path / "second")], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SLEUTH_BROKER": "0", "SLEUTH_MILVUS_URI": server.uri,
                               "SLEUTH_MILVUS_COLLECTION": "twin"})
    assert "Traceback" not in proc.stderr and "belongs to another sleuth index" in proc.stdout + proc.stderr


def test_a_search_while_milvus_is_down_answers_from_the_local_lanes(server: Server,
                                                                    synced: tuple[Path, dict]) -> None:  # type: ignore[type-arg]
    """A new user's trial (stop 29): with the Milvus server down, every `sleuth search` exited 6
    ("cannot reach Milvus ..."), though docs/LIMITS.md says a lane that stops answering (an
    unreachable Milvus server) is reported as degraded while the other lanes answer, and rm3 and
    the exact lane are local. Searching and serving now open without Milvus: its lanes are named
    in the failed lanes and the local ones answer. Indexing still fails readably."""
    index, _ = synced
    uri = server.uri
    server.stop()
    env = {**os.environ, "SLEUTH_BROKER": "0", "SLEUTH_MILVUS_URI": uri, "SLEUTH_MILVUS_COLLECTION": "shared"}

    def sleuth(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sleuth", *args, "--index", str(index)], env=env,
                              capture_output=True, text=True, timeout=600)

    proc = sleuth("search", "advisory lock", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    resp = json.loads(proc.stdout)
    assert sorted(resp["failed_lanes"]) == ["bm25", "index", "vector"]
    assert all("cannot reach Milvus at " in why for why in resp["failed_lanes"].values()), resp["failed_lanes"]
    assert resp["hits"][0]["path"] == "locks.md" and set(resp["hits"][0]["sources"]) == {"rm3"}
    assert "Traceback" not in proc.stderr
    text = sleuth("search", "advisory lock")
    assert text.returncode == 0 and "(lane bm25 failed: StorageError: cannot reach Milvus at " in text.stdout
    indexing = sleuth("index", str(index.parent / "src" / "alpha"), "--project", "alpha")
    assert indexing.returncode != 0 and "cannot reach Milvus at " in indexing.stderr
    assert "Traceback" not in indexing.stderr
