"""Hostile files against the real command line and a real MCP session (issue 12, items 1-3).

1. Confinement: nothing outside a project's roots is indexed or served, whatever the symlinks say;
   a symlink to another file of the roots does not make a second document; archive member names
   cannot escape; a file swapped for a link after indexing is no longer served.
2. Hostile content: an alias bomb, a PDF built to be slow, a file that hangs in C code or eats
   memory: each costs bounded time and memory and is reported, the rest is indexed. Slowness and
   memory are injected through the fault hooks (SLEUTH_FAULT_*), so that nothing depends on the
   machine's speed; the one real slow file (a 100 KB PDF that takes minutes) is 100 times past its
   budget.
3. File names that are not UTF-8: indexed under a lossless escaped name, found, read, listed.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import threading
import time
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.ingest.test_front_matter import billion_laughs
from tests.integration.conftest import SLEUTH, run_cli
from tests.integration.mcp_session import session, text_of

LEXICAL = {"SLEUTH_MODEL": "none"}
SECRET = "zebraquasar"


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def index_json(root: Path, index: Path, env: dict[str, str] | None = None, project: str = "repo") -> dict:
    out = run_cli("index", str(root), "--project", project, "--index", str(index), "--format", "json",
                  env={**LEXICAL, **(env or {})})
    assert "Traceback" not in out.stderr
    return json.loads(out.stdout)


def search_json(index: Path, query: str, *args: str) -> dict:
    return json.loads(run_cli("search", query, "--index", str(index), "--format", "json", *args, env=LEXICAL).stdout)


def get_json(index: Path, doc_id: str) -> subprocess.CompletedProcess[str]:
    return run_cli("get", doc_id, "--index", str(index), "--format", "json", check=False, env=LEXICAL)


def payload(result: object) -> dict:
    """The JSON of a successful tool call."""
    assert not result.is_error, text_of(result)  # type: ignore[attr-defined]
    return json.loads(text_of(result))


def files_of(index: Path) -> dict[str, dict]:
    status = json.loads(run_cli("status", "--files", "--index", str(index), "--format", "json", env=LEXICAL).stdout)
    return {f["path"]: f for f in status["files"]}


# ============================================================================ 1. confinement


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, Path]:
    """A repository whose folders each hold ``README.md -> index.md``, with links that lead out."""
    outside = tmp_path / "outside"
    write(outside, "secret.md", f"# Secret\n\nThe launch code is {SECRET}.\n")
    write(outside, "more/other.md", f"# Other\n\nAlso {SECRET}.\n")
    root = tmp_path / "repo"
    write(root, "docs/index.md", "# Install guide\n\nHow to install the flux capacitor.\n")
    write(root, "api/index.md", "# API reference\n\nThe flux capacitor API.\n")
    write(root, "notes.md", "# Notes\n\nFlux capacitor notes.\n")
    for folder in ("docs", "api"):
        (root / folder / "README.md").symlink_to("index.md")
    (root / "leak.md").symlink_to(outside / "secret.md")
    (root / "passwd.txt").symlink_to("/etc/passwd")
    (root / "more").symlink_to(outside / "more", target_is_directory=True)
    with zipfile.ZipFile(root / "bundle.zip", "w") as zf:
        zf.writestr("../../outside/escape.md", f"# Escape\n\n{SECRET}\n")
        zf.writestr("/etc/abs.md", "# Absolute\n\nAn absolute member name.\n")
        zf.writestr("C:\\win\\page.md", "# Windows\n\nA member named with a drive and backslashes.\n")
    return root, tmp_path / "idx"


def test_nothing_outside_the_roots_is_indexed_and_each_file_once(repo: tuple[Path, Path]) -> None:
    root, index = repo
    report = index_json(root, index)
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {
        "api/README.md": "symlink to api/index.md: each file is indexed once, under its own path",
        "docs/README.md": "symlink to docs/index.md: each file is indexed once, under its own path",
        "leak.md": "symlink to a file outside the project's roots",
        "passwd.txt": "symlink to a file outside the project's roots",
        "more": "symlinked directory not followed",
        "bundle.zip/../../outside/escape.md": "member name climbs out of the archive with '..'",
    }
    assert report["added"] == 5  # docs/index.md, api/index.md, notes.md and two archive members
    assert search_json(index, SECRET)["hits"] == []
    assert search_json(index, "root daemon nologin bin bash")["hits"] == []
    paths = [h["path"] for h in search_json(index, "flux capacitor", "--limit", "5")["hits"]]
    assert sorted(paths) == ["api/index.md", "docs/index.md", "notes.md"]  # no page twice
    assert sorted(p for p in files_of(index) if p.startswith("bundle.zip/")) == [
        "bundle.zip/../../outside/escape.md", "bundle.zip/etc/abs.md", "bundle.zip/win/page.md"]
    for hit in search_json(index, "flux capacitor member name", "--limit", "20")["hits"]:
        doc = json.loads(get_json(index, hit["doc_id"]).stdout)
        assert SECRET not in doc["text"] and "root:x:0:0" not in doc["text"]


def test_a_file_swapped_for_a_link_is_no_longer_served(repo: tuple[Path, Path], tmp_path: Path) -> None:
    root, index = repo
    index_json(root, index)
    (hit,) = search_json(index, "install guide", "--limit", "1")["hits"]
    assert hit["path"] == "docs/index.md"
    (root / "docs/README.md").unlink()
    (root / "docs/index.md").unlink()
    (root / "docs/index.md").symlink_to(tmp_path / "outside" / "secret.md")  # after indexing, before any re-index
    gone = get_json(index, hit["doc_id"])
    assert gone.returncode == 4 and "document not found" in gone.stderr and "Traceback" not in gone.stderr
    again = index_json(root, index)
    assert {s["path"]: s["reason"] for s in again["skipped"]}["docs/index.md"] == (
        "symlink to a file outside the project's roots")
    assert again["removed"] == 1 and search_json(index, SECRET)["hits"] == []


def test_an_mcp_session_serves_nothing_from_outside(repo: tuple[Path, Path], tmp_path: Path) -> None:
    root, index = repo
    index_json(root, index)
    (guide,) = search_json(index, "install guide", "--limit", "1")["hits"]
    assert guide["path"] == "docs/index.md"
    (root / "notes.md").unlink()
    (root / "notes.md").symlink_to(tmp_path / "outside" / "secret.md")  # swapped after indexing
    notes_id = next(h["doc_id"] for h in search_json(index, "notes", "--limit", "5")["hits"]
                    if h["path"] == "notes.md")
    out = session(["--index", str(index)], [
        ("search_project", {"project_id": "repo", "query": f"launch code {SECRET}"}),
        ("get_notebook", {"project_id": "repo", "item_id": guide["doc_id"]}),
        ("get_notebook", {"project_id": "repo", "item_id": notes_id}),
        ("project_memory_search", {"query": f"{SECRET} launch code", "project_id": "repo"}),
        ("project_memory_search", {"query": "flux capacitor notes", "project_id": "repo"}),
    ], cwd=tmp_path, env=LEXICAL)
    search, notebook, swapped, memory_secret, memory_flux = out["results"]
    assert json.loads(text_of(search))["items"] == []
    assert not notebook.is_error and "flux capacitor" in text_of(notebook) and SECRET not in text_of(notebook)
    assert swapped.is_error and text_of(swapped).endswith(f"item not found or access denied: {notes_id}")
    assert payload(memory_secret)["results"] == []
    handles = {r["path"]: r["body_handle"] for r in payload(memory_flux)["results"]}
    assert "notes.md" in handles
    reads = session(["--index", str(index)], [
        ("project_memory_read", {"body_handle": handles["notes.md"]}),
        ("project_memory_read", {"body_handle": handles["docs/index.md"]}),
    ], cwd=tmp_path, env=LEXICAL)["results"]
    assert reads[0].is_error and "record not found" in text_of(reads[0]) and SECRET not in text_of(reads[0])
    assert not reads[1].is_error and "flux capacitor" in payload(reads[1])["body"]["text"]


# ============================================================================ 2. hostile content


def slow_pdf(operators: int) -> bytes:
    """A valid one-page PDF whose content stream holds ``operators`` text operators: a few KB on disk
    (the stream compresses 500 to 1), and minutes for a PDF library to walk through."""
    content = b"BT /F1 12 Tf 72 720 Td " + b"(ab) Tj 1 0 Td " * operators + b"ET\n"
    stream = zlib.compress(content, 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % o for o in offsets))
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def test_hostile_content_costs_bounded_time_and_memory(tmp_path: Path) -> None:
    root = tmp_path / "content"
    bomb = f"---\n{billion_laughs()}title: Bomb\n---\n# Bomb page\n\nThe body of the bomb page is indexed.\n"
    write(root, "bomb.md", bomb)
    write(root, "deep.md", "---\nx: " + "[" * 40 + "]" * 40 + "\n---\n# Deep\n\nDeeply nested front matter.\n")
    write(root, "slow.md", "# Slow\n\nA page whose parser is slow (injected).\n")
    write(root, "stuck.md", "# Stuck\n\nA page whose parser hangs in C code (injected).\n")
    write(root, "hog.md", "# Hog\n\nA page whose parser eats memory (injected).\n")
    write(root, "ok.md", "# Fine\n\nA perfectly ordinary page about otters.\n")
    (root / "slow.pdf").write_bytes(slow_pdf(4_000_000))  # 60 MB of operators: minutes for pypdf, budget 2 s
    env = {"SLEUTH_FILE_BUDGET_S": "2", "SLEUTH_PARSE_MEMORY_MB": "256", "SLEUTH_FAULT_SLOW_FILE": "slow.md=600000",
           "SLEUTH_FAULT_STUCK_FILE": "stuck.md", "SLEUTH_FAULT_HOG_FILE": "hog.md"}
    index = tmp_path / "idx"
    report = index_json(root, index, env)
    too_long = "took too long: more than the 2 s per-file time budget"
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {
        "hog.md": "needs more memory than the 256 MiB limit of a parse process",
        "slow.md": too_long, "slow.pdf": too_long, "stuck.md": too_long}
    assert {p["path"]: p["problem"] for p in report["problems"]} == {
        "bomb.md": "front matter: not read, over a limit: more than 10000 values with aliases expanded",
        "deep.md": "front matter: not read, over a limit: nested deeper than 32 levels"}
    assert report["added"] == 3
    assert [h["path"] for h in search_json(index, "body of the bomb page")["hits"]][:1] == ["bomb.md"]
    assert [h["path"] for h in search_json(index, "otters")["hits"]] == ["ok.md"]
    states = {p: f["state"] for p, f in files_of(index).items()}
    assert states == {"bomb.md": "indexed", "deep.md": "indexed", "ok.md": "indexed", "hog.md": "failed",
                      "slow.md": "failed", "slow.pdf": "failed", "stuck.md": "failed"}


def test_an_archive_bomb_is_bounded(tmp_path: Path) -> None:
    root = tmp_path / "bundles"
    root.mkdir()
    with zipfile.ZipFile(root / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("huge.md", b"# Huge\n" + b"\n" * (4 * 1024 * 1024))
        zf.writestr("page.md", "# Page\n\nAn ordinary page about walruses.\n")
    report = index_json(root, tmp_path / "idx")
    (skip,) = report["skipped"]
    assert skip["path"] == "bomb.zip/huge.md" and skip["reason"].startswith("compression ratio over the 100:1 limit")
    assert [h["path"] for h in search_json(tmp_path / "idx", "walruses")["hits"]] == ["bomb.zip/page.md"]



def pax_redos_tar_gz(digits: int) -> bytes:
    """A tar.gz whose first member's pax header is ``digits`` digits: Python's tarfile (before
    3.11.10 / 3.12.6, CVE-2024-6232) takes quadratic time to parse it (1M digits: hours)."""
    import gzip
    import tarfile

    buf = io.BytesIO()
    payload = b"1" * digits
    header = tarfile.TarInfo("././@PaxHeader")
    header.type, header.size = tarfile.XHDTYPE, len(payload)
    buf.write(header.tobuf(format=tarfile.USTAR_FORMAT) + payload + b"\0" * (-len(payload) % tarfile.BLOCKSIZE))
    page = b"# Page\n\nAn ordinary page about walruses.\n"
    member = tarfile.TarInfo("page.md")
    member.size = len(page)
    buf.write(member.tobuf(format=tarfile.USTAR_FORMAT) + page + b"\0" * (-len(page) % tarfile.BLOCKSIZE))
    buf.write(b"\0" * 2 * tarfile.BLOCKSIZE)
    return gzip.compress(buf.getvalue(), 9)


def test_a_tar_built_to_be_slow_to_parse_is_skipped_at_once(tmp_path: Path) -> None:
    # The archive is listed in the indexing process, beside the per-file budget of the parse
    # workers: its pax headers are checked before tarfile parses them.
    root = tmp_path / "bundles"
    root.mkdir()
    (root / "slow.tar.gz").write_bytes(pax_redos_tar_gz(60_000))  # under 1 KB; a minute or more to parse
    (root / "huge.tar.gz").write_bytes(pax_redos_tar_gz(1_000_000))  # about 1 KB; hours to parse
    write(root, "notes.md", "# Notes\n\nAbout walruses too.\n")
    report = index_json(root, tmp_path / "idx")
    assert sorted((s["path"], s["reason"]) for s in report["skipped"]) == [
        ("huge.tar.gz", "a pax header of 1000000 bytes, over the 65536 byte limit; the rest was not read"),
        ("slow.tar.gz", "a pax header holding a run of more than 64 digits (malformed; slow to parse); the rest "
                        "was not read"),
    ]
    assert [h["path"] for h in search_json(tmp_path / "idx", "walruses")["hits"]] == ["notes.md"]


def test_a_tar_with_a_chain_of_extended_headers_is_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    """200 GNU long names (300 pax headers) before one member made tarfile recurse past Python's
    limit: the RecursionError ended `sleuth index` and nothing was indexed (an attack on the archive reader).
    Each archive is reported with the reason, its first member and the files beside it indexed."""
    from tests.ingest.test_archive import END, entry, long_name, pax_header

    root = tmp_path / "bundles"
    root.mkdir()
    first = entry(b"docs/first.md", b"# First\n\nA page about walruses.\n")
    (root / "gnu.tar").write_bytes(first + long_name(b"docs/x.md") * 200 + entry(b"x.md", b"# X\n") + END)
    (root / "pax.tar").write_bytes(first + pax_header(comment="c") * 300 + entry(b"x.md", b"# X\n") + END)
    write(root, "notes.md", "# Notes\n\nAbout walruses too.\n")
    out = run_cli("index", str(root), "--project", "repo", "--index", str(tmp_path / "idx"), "--format", "json",
                  check=False, env=LEXICAL)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    report = json.loads(out.stdout)
    reason = ("more than 8 extended headers (GNU long names, pax headers) in a row before one member; the rest was"
              " not read")
    assert sorted((s["path"], s["reason"]) for s in report["skipped"]) == [("gnu.tar", reason), ("pax.tar", reason)]
    assert sorted(h["path"] for h in search_json(tmp_path / "idx", "walruses")["hits"]) == [
        "gnu.tar/docs/first.md", "notes.md", "pax.tar/docs/first.md"]


def test_a_tar_that_ends_at_a_bad_header_is_reported_and_its_members_before_kept(tmp_path: Path) -> None:
    """A member with a wrong checksum between two good ones: tarfile ended the archive there and
    nothing was said (an attack on the archive reader). The archive is reported, its first member
    indexed; a folder entry holding bytes is reported and the member after it indexed."""
    from tests.ingest.test_archive import END, entry, header, padded

    root = tmp_path / "bundles"
    root.mkdir()
    bad = header(b"docs/mid.md", 6, checksum=b"0000001\0") + padded(b"# Mid\n")
    (root / "corrupt.tar.gz").write_bytes(gzip.compress(
        entry(b"docs/before.md", b"# Before\n\nWalruses.\n") + bad + entry(b"docs/lost.md", b"# Lost\n") + END))
    (root / "folder.tar").write_bytes(entry(b"docs/hidden.md/", b"# Hidden\n", b"\0")
                                      + entry(b"docs/after.md", b"# After\n\nWalruses.\n") + END)
    report = index_json(root, tmp_path / "idx")
    assert sorted((s["path"], s["reason"]) for s in report["skipped"]) == [
        ("corrupt.tar.gz", "a header after member 1 could not be read; the rest of the archive was not read"),
        ("folder.tar/docs/hidden.md", "a folder entry holding 9 bytes"),
    ]
    assert sorted(h["path"] for h in search_json(tmp_path / "idx", "walruses")["hits"]) == [
        "corrupt.tar.gz/docs/before.md", "folder.tar/docs/after.md"]


# ============================================================================ 3. file names


def test_names_that_are_not_utf8_are_indexed_losslessly(tmp_path: Path) -> None:
    root = tmp_path / "names"
    root.mkdir()
    (root / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\nA page about espresso machines.\n")
    (root / os.fsdecode(b"dir\xff")).mkdir()
    (root / os.fsdecode(b"dir\xff") / "inner.md").write_text("# Inner\n\nA page about grinders.\n")
    (root / "esc\x1b[31m.md").write_text("# Escape\n\nA page about milk frothers.\n")
    (root / "back\\slash.md").write_text("# Backslash\n\nA page about tampers.\n")
    (root / "plain.md").write_text("# Plain\n\nA page about kettles.\n")
    (root / os.fsdecode(b"bad\xe9.pdf")).write_bytes(b"%PDF-1.4\nnot really a PDF\n")  # its error quotes its name
    index = tmp_path / "idx"
    report = index_json(root, index)
    assert report["added"] == 5
    ((skipped, reason),) = [(s["path"], s["reason"]) for s in report["skipped"]]
    assert skipped == "bad\\xe9.pdf" and reason.startswith("unreadable: ") and "bad\\xe9.pdf: " in reason
    expected = {"espresso": "caf\\xe9.md", "grinders": "dir\\xff/inner.md", "frothers": "esc\\x1b[31m.md",
                "tampers": "back\\\\slash.md", "kettles": "plain.md"}
    for word, path in expected.items():
        (hit,) = search_json(index, word)["hits"]
        assert hit["path"] == path
        doc = json.loads(get_json(index, hit["doc_id"]).stdout)
        assert doc["path"] == path and word in doc["text"]
    listed = files_of(index)
    assert {p: (f["state"], f.get("freshness")) for p, f in listed.items()} == {
        **{p: ("indexed", "current") for p in expected.values()}, "bad\\xe9.pdf": ("failed", None)}
    text = run_cli("status", "--files", "--index", str(index), env=LEXICAL).stdout
    assert "caf\\xe9.md" in text and "\x1b" not in text  # nothing in the listing can drive the terminal
    (hit,) = search_json(index, "espresso")["hits"]
    mcp = session(["--index", str(index)], [
        ("search_project", {"project_id": "repo", "query": "espresso machines"}),
        ("get_notebook", {"project_id": "repo", "item_id": hit["doc_id"]}),
        ("project_memory_search", {"query": "espresso machines", "project_id": "repo"}),
    ], cwd=tmp_path, env=LEXICAL)["results"]
    assert [i["item"]["path"] for i in payload(mcp[0])["items"]] == ["caf\\xe9.md"]
    assert payload(mcp[1])["item"]["path"] == "caf\\xe9.md"
    assert [r["path"] for r in payload(mcp[2])["results"]][:1] == ["caf\\xe9.md"]
    assert index_json(root, index)["unchanged"] == 5
    (root / os.fsdecode(b"caf\xe9.md")).unlink()
    assert index_json(root, index)["removed"] == 1


def test_a_root_whose_own_name_is_not_utf8_gets_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "above" / os.fsdecode(b"r\xe9pertoire")
    write(root, "a.md", "# Armadillo\n")
    proc = run_cli("index", str(root), "--index", str(tmp_path / "idx"), check=False, env=LEXICAL)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "r\\xe9pertoire has a name that is not valid UTF-8: index a folder above it" in proc.stderr
    above = index_json(tmp_path / "above", tmp_path / "idx2", project="above")
    assert (above["added"], [h["path"] for h in search_json(tmp_path / "idx2", "armadillo")["hits"]]) == (
        1, ["r\\xe9pertoire/a.md"])


# ============================================================================ watch


def wait_until(what: str, condition: Callable[[], bool], wait_s: float = 60.0) -> None:
    deadline = time.monotonic() + wait_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not seen within {wait_s:.0f} s: {what}")
        time.sleep(0.05)


def test_watch_keeps_one_current_copy_and_survives_names_that_are_not_utf8(tmp_path: Path) -> None:
    root = tmp_path / "wiki"
    write(root, "guide/index.md", "# Guide\n\nThe guide is about wombats.\n")
    (root / "guide/README.md").symlink_to("index.md")
    index = tmp_path / "idx"
    index_json(root, index, project="wiki")
    proc = subprocess.Popen([*SLEUTH, "watch", "--index", str(index), "--format", "json", "--debounce-ms", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **LEXICAL})
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)  # type: ignore[arg-type]
    reader.start()
    try:
        assert "watching 1 root(s) of 1 project(s): wiki" in proc.stderr.readline()  # type: ignore[union-attr]

        def paths(query: str) -> list[str]:
            return [h["path"] for h in search_json(index, query, "--limit", "5")["hits"]]

        write(root, "guide/index.md", "# Guide\n\nThe guide is now about echidnas.\n")
        wait_until("the edit", lambda: paths("echidnas") == ["guide/index.md"] and paths("wombats") == [])
        (root / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\nA page about numbats.\n")
        wait_until("a file whose name is not UTF-8", lambda: paths("numbats") == ["caf\\xe9.md"])
        write(root, "after.md", "# After\n\nThe watch still runs: quokkas.\n")
        wait_until("a later file", lambda: paths("quokkas") == ["after.md"])
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
        reader.join(timeout=10)
    assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]


def test_terminal_escapes_in_a_file_never_reach_the_terminal(tmp_path: Path) -> None:
    # A title and body holding OSC 0 (window title), CSI 2J (clear screen) and OSC 52 (write the
    # clipboard): the text output shows them escaped; JSON escapes them as JSON does.
    root = tmp_path / "notes"
    evil = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;ZWNobyBvd25lZA==\x07"
    write(root, "page.md", f"# Escwords {evil}title\n\nEscwords in the body {evil} here.\n")
    index_json(root, tmp_path / "idx")
    out = run_cli("search", "escwords", "--index", str(tmp_path / "idx"), env=LEXICAL).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;owned\\x07\\x1b[2J" in out
    (hit,) = search_json(tmp_path / "idx", "escwords")["hits"]
    got = run_cli("get", hit["doc_id"], "--index", str(tmp_path / "idx"), env=LEXICAL).stdout
    assert "\x1b" not in got and "Escwords in the body \\x1b]0;owned" in got


def test_watch_keeps_working_under_a_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    # watchfiles cannot set up a watch over such a folder: the watcher says so and rescans instead.
    root = tmp_path / "wiki"
    write(root, "start.md", "# Start\n\nA page about wombats.\n")
    (root / os.fsdecode(b"d\xe9")).mkdir()
    index = tmp_path / "idx"
    index_json(root, index, project="wiki")
    proc = subprocess.Popen([*SLEUTH, "watch", "--index", str(index), "--debounce-ms", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, **LEXICAL})
    try:
        first = proc.stderr.readline()  # type: ignore[union-attr]
        second = proc.stderr.readline()  # type: ignore[union-attr]
        assert "cannot watch for changes" in first and "not valid UTF-8" in first, first
        assert "watching 1 root(s) of 1 project(s): wiki" in second, second
        write(root, "new.md", "# New\n\nA page about numbats.\n")
        wait_until("a new file", lambda: [h["path"] for h in search_json(index, "numbats")["hits"]] == ["new.md"])
    finally:
        proc.terminate()
        assert proc.wait(timeout=30) == 0
    assert "Traceback" not in proc.stderr.read()  # type: ignore[union-attr]
