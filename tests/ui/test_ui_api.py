"""The JSON API of `sleuth ui`, over a real server process: search through the Engine with the
page's filters, locations, the document view, the index page's coverage, the Host/Origin guard,
project restriction and readable errors."""

from __future__ import annotations

import datetime as dt
import json
import os
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.locks import WriteLock
from sleuth.store.folder import WRITE_LOCK_FILE
from sleuth.types import SearchFilters, SearchRequest
from tests.ui.conftest import UiServer, run_cli


def q(**params: object) -> str:
    return "/api/search?" + urllib.parse.urlencode(params, doseq=True)


def paths(body: dict) -> list[tuple[str, str]]:
    return [(h["project"], h["path"]) for h in body["hits"]]


def test_search_goes_through_the_engine_with_lane_contributions(ui_server: UiServer) -> None:
    status, body = ui_server.get(q(q="zebrafinch"))
    assert status == 200
    assert paths(body) == [("other", "secret.md"), ("notes", "notes/lanes.md"), ("notes", "fusion.md")]
    first = body["hits"][0]
    assert sorted(c["lane"] for c in first["explain"]) == ["bm25", "index", "rm3", "vector"]
    assert sum(c["contribution"] for c in first["explain"]) == pytest.approx(first["score"])
    assert first["location"] == {"page": None, "cell": None, "label": "§ Other project · lines 1-3"}
    passage = body["hits"][1]["passages"][0]
    marked = ["".join(list(passage["text"])[a:b]) for a, b in passage["highlights"]]
    assert "Zebrafinch" in marked and passage["location"] == "§ Lanes > Zebrafinch notes"


def test_pdf_hits_are_located_by_page_and_notebooks_without_file_lines(ui_server: UiServer) -> None:
    _, pdf = ui_server.get(q(q="okapiwombat"))
    assert paths(pdf) == [("notes", "papers/evaluation.pdf")]
    assert pdf["hits"][0]["location"]["page"] == 2
    assert pdf["hits"][0]["location"]["label"] == "§ page 2"
    _, notebook = ui_server.get(q(q="pangolinset"))
    assert notebook["hits"][0]["location"]["label"] == "§ Experiments > Loading > cells 2-3"


def test_kind_role_project_and_date_filters(ui_server: UiServer) -> None:
    assert paths(ui_server.get(q(q="quokkabase"))[1]) == [("notes", "plans/roadmap.md"),
                                                          ("notes", "adr/0001-use-sqlite.md")]
    assert paths(ui_server.get(q(q="quokkabase", kind="decision"))[1]) == [("notes", "adr/0001-use-sqlite.md")]
    assert paths(ui_server.get(q(q="quokkabase", role="plan"))[1]) == [("notes", "plans/roadmap.md")]
    # recorded 2024-03-05 (the ADR) and 2025-06-01 (the roadmap), from their front matter
    assert paths(ui_server.get(q(q="quokkabase", until="2024-03-05"))[1]) == [("notes", "adr/0001-use-sqlite.md")]
    assert paths(ui_server.get(q(q="quokkabase", since="2024-03-06", until="2025-06-01"))[1]) == [
        ("notes", "plans/roadmap.md")]
    assert paths(ui_server.get(q(q="zebrafinch", project="other"))[1]) == [("other", "secret.md")]


def _same_on_the_page_and_the_cli(ui_server: UiServer, ui_index: Path,
                                  cases: list[tuple[dict[str, str], list[str]]]) -> None:
    """Each case's date bounds give the expected paths (in order) on the page's search and the CLI's."""
    for bounds, expected in cases:
        status, body = ui_server.get(q(q="quokkabase", **bounds))
        assert (status, [p for _, p in paths(body)]) == (200, expected), bounds
        flags = [x for name, value in bounds.items() for x in (f"--{name}", value)]
        cli = run_cli("search", "quokkabase", "--project", "notes", *flags, "--index", str(ui_index),
                      "--format", "json")
        assert [h["path"] for h in json.loads(cli.stdout)["hits"]] == expected, bounds


def test_date_filters_take_times_as_the_cli_does(ui_server: UiServer, ui_index: Path) -> None:
    # The roadmap is recorded at 2025-06-01T00:00:00Z: a time on that day puts it on either side.
    cases: list[tuple[dict[str, str], list[str]]] = [({"since": "2025-06-01T00:00"}, ["plans/roadmap.md"]),
             ({"since": "2025-06-01T00:00:01Z"}, []),
             ({"since": "2025-06-01T01:00+02:00"}, ["plans/roadmap.md"]),  # 2025-05-31T23:00Z
             ({"until": "2025-05-31T23:59:59.999Z"}, ["adr/0001-use-sqlite.md"]),
             ({"until": "2025-06-01 00:00"}, ["plans/roadmap.md", "adr/0001-use-sqlite.md"]),
             ({"since": "2024-03-05T00:00:00Z", "until": "2024-03-05T00:00:00Z"}, ["adr/0001-use-sqlite.md"]),
             ({"until": "2024-03-04T23:59:59Z"}, [])]
    _same_on_the_page_and_the_cli(ui_server, ui_index, cases)
    status, body = ui_server.get(q(q="x", since="2025-06-01T25:00"))
    assert (status, body) == (400, {"error": "since must be a date (2024-03-05) or a date and time "
                                             "(2024-03-05T10:30, UTC unless a zone is given), got '2025-06-01T25:00'"})


def test_filters_the_pipeline_lacks_are_reported_not_applied_after_top_k(ui_server: UiServer) -> None:
    _, body = ui_server.get(q(q="zebrafinch", path="notes/**", tag="fusion", offset=1))
    lacking = [name for name, fields in (("path", ("paths", "path_globs", "path")), ("tag", ("tags",)))
               if not any(f in SearchFilters.model_fields for f in fields)]
    lacking += [] if "offset" in SearchRequest.model_fields else ["offset"]
    assert body["ignored_filters"] == lacking
    _, facets = ui_server.get("/api/facets")
    assert facets["filters"] == {"path": "path" not in lacking, "tag": "tag" not in lacking,
                                 "offset": "offset" not in lacking}
    assert facets["projects"] == ["notes", "other", "twin"]
    assert [Path(r).name for r in facets["roots"]["twin"]] == ["en", "ja"]


@pytest.mark.parametrize(("params", "status", "error"), [
    ({"q": "x", "since": "yesterday"}, 400, "since must be a date (2024-03-05) or a date and time "
                                            "(2024-03-05T10:30, UTC unless a zone is given), got 'yesterday'"),
    ({"q": "x", "since": "2025-01-02", "until": "2025-01-01"}, 400, "since must not be later than until"),
    ({"q": "x", "role": "boss"}, 400, "unknown role 'boss': one of experiment_record, result, method, log, paper, "
                                      "plan, config, source, report, other"),
    ({"q": "x", "limit": "ten"}, 400, "limit must be a whole number from 1 to 50, got 'ten'"),
    ({"q": "x", "project": "nope"}, 404, "project not found: 'nope'"),
    ({"q": "x" * 4001}, 400, "the query is longer than 4000 characters"),
    ({"q": "zebra\x00fish"}, 400, "the query holds a NUL character (U+0000) at character 5"),  # attack session 31
    ({"q": "x", "kind": "k" * 201}, 400, "kind values must be at most 200 characters, without NUL"),
    # attack session 34: pathspec's re.error and re2 error were 500s
    ({"q": "x", "path": "[z-a]"}, 400, "path glob '[z-a]' is not a valid glob: bad character range z-a"),
    ({"q": "x", "path": "[[:foo:]]"}, 400,
     "path glob '[[:foo:]]' is not a valid glob: invalid character class range: [:foo:]"),
])
def test_bad_parameters_get_one_readable_error(ui_server: UiServer, params: dict, status: int, error: str) -> None:
    assert ui_server.get(q(**params)) == (status, {"error": error})


def test_empty_query_answers_no_hits_without_searching(ui_server: UiServer) -> None:
    status, body = ui_server.get(q(q="   "))
    assert status == 200 and body["hits"] == [] and body["result_count"] == 0


def test_document_view_marks_the_matched_blocks(ui_server: UiServer) -> None:
    _, found = ui_server.get(q(q="okapiwombat"))
    hit = found["hits"][0]
    status, doc = ui_server.get("/api/document?" + urllib.parse.urlencode(
        {"id": hit["doc_id"], "block": ",".join(hit["block_ids"])}))
    assert status == 200
    assert (doc["path"], doc["kind"], doc["pages"], doc["truncated"]) == ("papers/evaluation.pdf", "paper", 3, False)
    matched = [b for b in doc["blocks"] if b["matched"]]
    assert [b["block_id"] for b in matched] == hit["block_ids"]
    text = doc["text"]
    assert all("okapiwombat" in text[b["start"]:b["end"]] for b in matched)
    assert [b["location"] for b in matched] == ["§ page 2"]
    assert ui_server.get("/api/document?id=nope") == (404, {"error": "document not found: 'nope' (give a document id, "
                                                         "a block id or a path relative to its root, as `sleuth "
                                                         "search` shows them)"})


def test_index_page_coverage_skipped_by_reason_and_embedding(ui_server: UiServer) -> None:
    _, s = ui_server.get("/api/status")
    assert [(c["project"], c["indexed"], c["skipped"], c["failed"]) for c in s["coverage"]] == [
        ("notes", 6, 0, 1), ("other", 1, 0, 0), ("twin", 1, 0, 0), ("twin", 1, 0, 0)]
    assert s["skipped_by_reason"] == [{"reason": "cannot parse", "files": 1, "state": "failed"}]
    assert [f["path"] for f in s["skipped_files"]] == ["broken.ipynb"]
    assert s["stale"] is None and s["writer"] is None
    assert s["embedding"]["available"] is True
    assert s["embedding"]["blocks_with_vectors"] == s["embedding"]["blocks"] == s["blocks"]
    _, with_files = ui_server.get("/api/status?files=1")
    assert with_files["stale"] == []


def test_stale_files_are_counted(ui_index: Path, ui_corpus: Path) -> None:
    note = ui_corpus / "other" / "secret.md"
    before, stat = note.read_text(encoding="utf-8"), note.stat()
    server = UiServer(ui_index)
    try:
        note.write_text(before + "\nA new line.\n", encoding="utf-8")
        _, s = server.get("/api/status?files=1")
        assert [(f["project"], f["path"], f["freshness"]) for f in s["stale"]] == [("other", "secret.md", "stale")]
    finally:
        note.write_text(before, encoding="utf-8")
        os.utime(note, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # as indexed again, for the other tests
        server.stop()


def test_dates_beyond_the_catalogs_range_are_clamped_as_mcp_clamps_them(ui_server: UiServer, ui_index: Path) -> None:
    """An attack: a date outside 1677-2262 (what 64-bit nanoseconds hold) crashed `sleuth search`
    (OverflowError from SQLite, exit 1) and the page's search (500). Such a bound is clamped to the
    catalog's range, as MCP's recorded_after / recorded_before are: every record on its side."""
    both = ["plans/roadmap.md", "adr/0001-use-sqlite.md"]
    cases: list[tuple[dict[str, str], list[str]]] = [({"since": "0001-01-01"}, both), ({"until": "2300-01-01"}, both),
             ({"since": "0001-01-01T00:00-05:00", "until": "9999-12-31T23:59:59+14:00"}, both),
             ({"since": "2262-05-01"}, []), ({"since": "9999-12-31"}, []), ({"until": "1677-01-01"}, [])]
    _same_on_the_page_and_the_cli(ui_server, ui_index, cases)


def test_a_running_writer_is_shown(ui_server: UiServer, ui_index: Path) -> None:
    lock = WriteLock(ui_index / WRITE_LOCK_FILE, 5.0)
    assert lock.acquire()
    try:
        _, s = ui_server.get("/api/status")
        assert s["writer"].startswith("process ")
    finally:
        lock.release()
    assert ui_server.get("/api/status")[1]["writer"] is None


@pytest.fixture(scope="module")
def notes_only(ui_index: Path) -> Iterator[UiServer]:
    server = UiServer(ui_index, "--project", " Notes")  # a name, read as `sleuth index --project` reads it
    yield server
    server.stop()


def test_project_restriction_hides_other_projects_like_unknown_ones(notes_only: UiServer, ui_server: UiServer) -> None:
    assert paths(notes_only.get(q(q="zebrafinch"))[1]) == [("notes", "notes/lanes.md"), ("notes", "fusion.md")]
    assert notes_only.get(q(q="zebrafinch", project="other")) == (404, {"error": "project not found: 'other'"})
    _, facets = notes_only.get("/api/facets")
    assert facets["projects"] == ["notes"]
    _, s = notes_only.get("/api/status")
    assert [c["project"] for c in s["coverage"]] == ["notes"] and s["documents"] == 6
    hidden = ui_server.get(q(q="zebrafinch", project="other"))[1]["hits"][0]["doc_id"]
    assert notes_only.get("/api/document?id=" + urllib.parse.quote(hidden)) == (
        404, {"error": f"document not found: {hidden!r} (give a document id, a block id or a path relative to its "
                       "root, as `sleuth search` shows them)"})


def test_host_and_origin_are_checked(ui_server: UiServer) -> None:
    port = ui_server.port
    assert ui_server.get("/api/facets", {"Host": f"localhost:{port}"})[0] == 200
    assert ui_server.get("/api/facets", {"Origin": f"http://127.0.0.1:{port}"})[0] == 200
    foreign_host = (403, {"error": "This page is served to its own loopback address only (the Host header names "
                                   "another)."})
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}", f"127.0.0.1:{port + 1}"):
        assert ui_server.get("/api/facets", {"Host": host}) == foreign_host
        assert ui_server.get("/", {"Host": host}) == foreign_host
    foreign_origin = (403, {"error": "Requests from other sites' pages are refused (the Origin header names another "
                                     "site)."})
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{port + 1}", f"https://127.0.0.1:{port}"):
        assert ui_server.get(q(q="zebrafinch"), {"Origin": origin}) == foreign_origin
    assert ui_server.get("/api/facets", {"Sec-Fetch-Site": "cross-site"}) == (
        403, {"error": "Requests from other sites' pages are refused."})
    assert ui_server.get("/api/facets", method="POST") == (405, {"error": "This server only answers GET requests."})
    assert ui_server.get("/api/nothing") == (404, {"error": "no such API call: /api/nothing"})


def test_answers_carry_a_strict_content_security_policy(ui_server: UiServer) -> None:
    import urllib.request

    request = urllib.request.Request(ui_server.base, headers={"Authorization": f"Bearer {ui_server.token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        headers = response.headers
        page = response.read().decode()
    assert "script-src 'self'" in headers["content-security-policy"]
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert headers["x-content-type-options"] == "nosniff"
    assert '<script src="static/app.js"></script>' in page and "http" not in page.split("<body>")[1].replace(
        "http://www.w3.org", "")


def test_ui_refuses_an_unknown_project_and_a_busy_port(ui_index: Path, ui_server: UiServer) -> None:
    import subprocess

    from tests.ui.conftest import SLEUTH

    bad = subprocess.run([*SLEUTH, "ui", "--port", "0", "--index", str(ui_index), "--project", "nope"],
                         capture_output=True, text=True, timeout=120)
    assert (bad.returncode, bad.stderr.strip()) == (4, "error: project not found: 'nope'")
    busy = subprocess.run([*SLEUTH, "ui", "--port", str(ui_server.port), "--index", str(ui_index)],
                          capture_output=True, text=True, timeout=120)
    assert busy.returncode == 2
    assert busy.stderr.strip() == (f"error: cannot listen on 127.0.0.1 port {ui_server.port}: Address already in "
                                   "use; pass another --port")


def test_date_bounds_are_whole_utc_days() -> None:
    from sleuth.ui.api import _date_ns

    start = int(dt.datetime(2024, 3, 5, tzinfo=dt.UTC).timestamp()) * 10**9
    assert _date_ns("2024-03-05", "since", end_of_day=False) == start
    assert _date_ns("2024-03-05", "until", end_of_day=True) == start + 86_400 * 10**9 - 1
    assert _date_ns("", "since", end_of_day=False) is None
    assert _date_ns("2024-03-05T10:30", "until", end_of_day=True) == start + 37_800 * 10**9
    assert _date_ns("2024-03-05T10:30+01:00", "since", end_of_day=False) == start + 34_200 * 10**9
