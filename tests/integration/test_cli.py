"""The real command line on a real corpus (a sample of the Hugo docs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli


def search_json(index: Path, *args: str) -> dict:
    return json.loads(run_cli("search", *args, "--index", str(index), "--format", "json").stdout)


@pytest.mark.parametrize(
    ("query", "expected_first"),
    [
        ("read environment variable", "functions/os/Getenv.md"),
        ("os.Getenv", "functions/os/Getenv.md"),
        ("image render hook", "render-hooks/images.md"),
        ('"page bundle"', "content-management/page-bundles.md"),
        ("translate content into several languages", "content-management/multilingual.md"),
    ],
)
def test_relevant_page_first(hugo_index: Path, query: str, expected_first: str) -> None:
    resp = search_json(hugo_index, query, "--limit", "3")
    assert resp["hits"][0]["path"] == expected_first
    assert resp["hits"][0]["snippet"]
    assert [h["rank"] for h in resp["hits"]] == list(range(1, len(resp["hits"]) + 1))


def test_json_hit_shape_and_highlights(hugo_index: Path) -> None:
    hit = search_json(hugo_index, "environment variable", "--limit", "1")["hits"][0]
    assert hit["project"] == "hugo"
    assert set(hit["sources"]) <= {"bm25", "tfidf", "index", "rm3", "vector"}
    assert hit["best_block_id"] == hit["block_ids"][0]
    assert hit["best_block_id"].startswith(hit["doc_id"] + ":")
    words = [hit["snippet"][s:e].lower() for s, e in hit["highlights"]]
    assert words and all(w.startswith(("environment", "variable")) for w in words)


def test_json_output_says_each_hit_once_with_its_details(hugo_index: Path) -> None:
    """A new user's trial: the JSON repeated every hit under questions[0], and printed
    source_length 0, body_chars 0 and freshness null for every hit (filled only when asked for)."""
    resp = search_json(hugo_index, "os.Getenv", "--limit", "2")
    assert "questions" not in resp
    assert resp["variants"][0] == "os.Getenv" and len(resp["variants"]) >= 1
    hit = resp["hits"][0]
    assert hit["freshness"] == "current"
    assert hit["source_length"] > 0 and 0 < hit["body_chars"] <= hit["source_length"]


def test_explain_adds_up(hugo_index: Path) -> None:
    for hit in search_json(hugo_index, "render hooks for links", "--explain")["hits"]:
        assert sum(c["contribution"] for c in hit["explain"]) == pytest.approx(hit["score"], rel=1e-12)
        for c in hit["explain"]:  # z-score fusion: weight x shifted z-score, 0 for a repeating lane
            assert c["contribution"] >= 0 and (c["weight"] > 0 or c["contribution"] == 0)


def test_text_explain_output(hugo_index: Path) -> None:
    out = run_cli("search", "render hooks", "--index", str(hugo_index), "--limit", "1", "--explain").stdout
    assert out.startswith(" 1. render-hooks/")
    assert "sum = " in out and "1 result(s)" in out


def test_text_results_show_the_block_id_that_get_takes(hugo_index: Path) -> None:
    """A new user's trial: `sleuth get` says it takes a block id "as `sleuth search` shows them",
    but the text results showed only the document id (block ids were in the JSON alone)."""
    out = run_cli("search", "os.Getenv", "--index", str(hugo_index), "--limit", "1").stdout
    ids = next(line.split() for line in out.splitlines() if line.startswith("    id "))
    doc_id, block_id = ids[1], ids[3]
    assert ids[2] == "block" and block_id.startswith(doc_id + ":")
    shown = run_cli("get", block_id, "--index", str(hugo_index)).stdout
    assert f"block {block_id})" in shown.splitlines()[1]


def test_get_returns_whole_document(hugo_index: Path, hugo_sample: Path) -> None:
    doc_id = search_json(hugo_index, "os.Getenv", "--limit", "1")["hits"][0]["doc_id"]
    doc = json.loads(run_cli("get", doc_id, "--index", str(hugo_index), "--format", "json").stdout)
    assert doc["path"] == "functions/os/Getenv.md"
    assert doc["text"] == (hugo_sample / "functions/os/Getenv.md").read_text(encoding="utf-8")
    missing = run_cli("get", "0000000000000000", "--index", str(hugo_index), check=False)
    assert missing.returncode == 4 and "document not found" in missing.stderr


def test_projects_and_status(hugo_index: Path) -> None:
    projects = json.loads(run_cli("projects", "--index", str(hugo_index), "--format", "json").stdout)
    assert [p["project_id"] for p in projects["projects"]] == ["hugo"]
    assert projects["projects"][0]["documents"] == 39
    status = json.loads(run_cli("status", "--index", str(hugo_index), "--format", "json").stdout)
    assert status["documents"] == 39 and status["generation"] == status["postings_generation"]
    assert status["skipped_files"] == []


@pytest.mark.parametrize("query", ["", "   ", "?!.,;", "the of and", '"', "(", "a:b", "*", "x" * 10_000, "NOT OR -"])
def test_bad_queries_get_clear_answers(hugo_index: Path, query: str) -> None:
    proc = run_cli("search", query, "--index", str(hugo_index), "--format", "json", check=False)
    assert "Traceback" not in proc.stderr
    if proc.returncode == 0:
        resp = json.loads(proc.stdout)
        # Never every document: either a readable notice or only documents matching a term.
        assert resp["result_count"] == 0 and resp["notice"] or resp["result_count"] < 39
    else:
        assert proc.returncode == 2 and proc.stderr.startswith("error: ")


def test_long_query_is_a_readable_error(hugo_index: Path) -> None:
    proc = run_cli("search", "word " * 2000, "--index", str(hugo_index), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: query is 9999 characters long; the limit is 4000"


def test_unknown_project_and_lane(hugo_index: Path) -> None:
    proc = run_cli("search", "x", "--project", "nope", "--index", str(hugo_index), check=False)
    assert proc.returncode == 4 and "project not found: nope" in proc.stderr
    # new-user trial 32: a name is read as `sleuth index --project` reads it ("Hugo!" is the project
    # hugo), in search and get alike; before, "project not found: Hugo!"
    by_name = json.loads(run_cli("search", "front matter", "--project", "Hugo!", "--index", str(hugo_index),
                                 "--format", "json").stdout)
    by_id = json.loads(run_cli("search", "front matter", "--project", "hugo", "--index", str(hugo_index),
                               "--format", "json").stdout)
    assert by_name["projects"] == ["hugo"] and by_name["hits"] == by_id["hits"] and by_id["result_count"] > 0
    first = by_id["hits"][0]["path"]
    assert run_cli("get", first, "--project", " HUGO ", "--index", str(hugo_index)).stdout == \
        run_cli("get", first, "--project", "hugo", "--index", str(hugo_index)).stdout
    proc = run_cli("search", "x", "--project", "!!!", "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "invalid project name '!!!'" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli("projects", "remove", "", "--index", str(hugo_index), check=False)  # the argument, named so
    assert proc.returncode == 2 and proc.stderr.splitlines()[-1] == (
        "Error: Invalid value for 'PROJECT': invalid project name '': it needs a letter or digit ('.', '_' and '-' may"
        " join them)")
    # attack session 32: an unknown name was repeated whole (5,000 characters); now cut as other names are
    proc = run_cli("search", "x", "--project", "p" * 5000, "--index", str(hugo_index), check=False)
    assert proc.returncode == 4 and proc.stderr.strip() == \
        f"error: project not found: {'p' * 60}... (see `sleuth projects`)"
    proc = run_cli("search", "x", "--lanes", "bm25,magic", "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "unknown lane(s) magic" in proc.stderr
    # attack session 24: an empty --lanes ran the configured lanes; a lane name with a terminal
    # escape was echoed as it was
    proc = run_cli("search", "x", "--lanes", "", "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "unknown lane(s) (none given)" in proc.stderr
    proc = run_cli("search", "x", "--lanes", "bm25,\x1b]0;owned\x07", "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "unknown lane(s) \\u001b]0;owned\\u0007;" in proc.stderr
    assert "\x1b" not in proc.stderr


def test_missing_index_is_reported(tmp_path: Path) -> None:
    proc = run_cli("search", "x", "--index", str(tmp_path / "none"), check=False)
    assert proc.returncode == 3 and "not a sleuth index" in proc.stderr


def test_an_index_folder_in_a_symlink_loop_or_of_an_unknown_home_is_a_readable_error(tmp_path: Path) -> None:
    """Attack session 32 (medium): ``--index`` (or ``$SLEUTH_INDEX``) naming a symlink loop ended
    every command with pathlib's ``RuntimeError: Symlink loop`` traceback, and so did
    ``~nosuchuser/x`` ('Could not determine home directory'); ``sleuth index`` into a loop, or into
    a first root whose ``.sleuth`` is one, said 'File exists'."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nsigning keys\n", encoding="utf-8")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    loop = str(tmp_path / "loop1")
    for args in (("search", "keys", "--index", loop), ("status", "--index", loop), ("projects", "--index", loop),
                 ("get", "x", "--index", loop), ("search", "keys", "--index", "~nosuchuser-of-sleuth/x")):
        proc = run_cli(*args, check=False)
        assert (proc.returncode, proc.stderr.splitlines()[-1].endswith(
            "is not a sleuth index (no catalog.sqlite3); run `sleuth index` first")) == (3, True), proc.stderr
    proc = run_cli("search", "keys", check=False, env={"SLEUTH_INDEX": loop})
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    proc = run_cli("index", str(tmp_path / "notes"), "--index", loop, check=False)
    assert (proc.returncode, proc.stderr.strip()) == (2, f"error: {loop} cannot be an index folder: it is not a folder "
                                                         "(a file, a symlink to a file, or a symlink loop)")
    (tmp_path / "notes" / ".sleuth").symlink_to(tmp_path / "notes" / ".sleuth")
    proc = run_cli("index", str(tmp_path / "notes"), check=False)
    assert proc.returncode == 2 and "notes/.sleuth cannot be an index folder" in proc.stderr, proc.stderr


def test_incremental_reindex_and_default_index_location(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe zephyr protocol handshake.\n", encoding="utf-8")
    (root / "b.md").write_text("# Beta\n\nQuokka migration plan.\n", encoding="utf-8")
    (root / "blob.txt").write_bytes(b"\x00\x01binary")
    first = json.loads(run_cli("index", str(root), "--format", "json").stdout)
    assert first["index_dir"] == str(root / ".sleuth")
    assert (first["added"], first["skipped"]) == (2, [{"path": "blob.txt", "reason": first["skipped"][0]["reason"]}])
    assert first["skipped"][0]["reason"].startswith("binary content")
    (root / "a.md").write_text("# Alpha\n\nThe walrus protocol handshake.\n", encoding="utf-8")
    (root / "b.md").rename(root / "c.md")
    second = json.loads(run_cli("index", str(root), "--format", "json").stdout)
    assert (second["added"], second["updated"], second["removed"], second["unchanged"]) == (1, 1, 1, 0)
    # Commands find the index in the current folder or its parents, as git finds .git.
    (root / "sub").mkdir()
    assert json.loads(run_cli("search", "zephyr", "--format", "json", cwd=root / "sub").stdout)["hits"] == []
    hits = json.loads(run_cli("search", "walrus", "--format", "json", cwd=root / "sub").stdout)["hits"]
    assert [h["path"] for h in hits] == ["a.md"]
    hits = json.loads(run_cli("search", "quokka", "--format", "json", cwd=root).stdout)["hits"]
    assert [h["path"] for h in hits] == ["c.md"]


def test_every_command_has_help() -> None:
    for command in ["index", "search", "get", "projects", "status", "watch", "serve", "eval"]:
        out = run_cli(command, "--help").stdout
        assert out.startswith(f"Usage: sleuth {command}") or f"sleuth {command}" in out
        assert len(out.splitlines()) > 3


def test_index_reads_documents_inside_archives(tmp_path: Path) -> None:
    import shutil
    import tarfile
    import zipfile

    from tests.integration.conftest import HUGO_TAR

    root = tmp_path / "bundle"
    root.mkdir()
    shutil.copyfile(HUGO_TAR, root / "markdown.tar.gz")  # a copy: a symlink to a file outside the roots is not read
    with zipfile.ZipFile(root / "notes.zip", "w") as zf:
        zf.writestr("notes/plan.md", "# Plan\n\nMigrate the flamingo cluster on Friday.\n")
        zf.writestr("notes/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00")
    (root / "broken.tar.gz").write_bytes(b"not really a tarball")
    index = tmp_path / "idx"
    lexical = {"SLEUTH_MODEL": "none"}  # 993 documents: embedding them is not what this test is about
    report = json.loads(run_cli("index", str(root), "--index", str(index), "--format", "json", env=lexical).stdout)
    with tarfile.open(HUGO_TAR) as tar:
        markdown_members = sum(1 for m in tar.getmembers() if m.isfile() and m.name.endswith(".md"))
    assert report["added"] == markdown_members + 1 == 993
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons["notes.zip/notes/logo.png"] == "unsupported format"
    assert reasons["broken.tar.gz"].startswith("cannot read archive")
    hits = search_json(index, "flamingo cluster", "--limit", "1")["hits"]
    assert hits[0]["path"] == "notes.zip/notes/plan.md"
    hits = search_json(index, "image render hooks", "--limit", "1")["hits"]
    assert hits[0]["path"] == "markdown.tar.gz/content/en/render-hooks/images.md"
    again = json.loads(run_cli("index", str(root), "--index", str(index), "--format", "json", env=lexical).stdout)
    assert (again["added"], again["updated"], again["unchanged"]) == (0, 0, 993)


def test_damaged_index_parts_are_rebuilt_or_reported(hugo_sample: Path, tmp_path: Path) -> None:
    import shutil

    index = tmp_path / "idx"
    run_cli("index", str(hugo_sample), "--project", "hugo", "--index", str(index))
    shutil.rmtree(index / "postings")  # lost postings are rebuilt from the catalog
    hits = search_json(index, "os.Getenv", "--limit", "1")["hits"]
    assert hits[0]["path"] == "functions/os/Getenv.md" and "bm25" in hits[0]["sources"]
    (index / "catalog.sqlite3").write_bytes(b"garbage" * 100)
    proc = run_cli("search", "x", "--index", str(index), check=False)
    assert proc.returncode == 6
    assert proc.stderr.startswith("error: the index catalog is damaged (file is not a database)")


def test_config_file_errors_name_the_setting(hugo_index: Path, tmp_path: Path) -> None:
    import shutil

    index = tmp_path / "idx"
    shutil.copytree(hugo_index, index)
    (index / "config.toml").write_text('rrf_k = "x"\n', encoding="utf-8")
    proc = run_cli("search", "hooks", "--index", str(index), check=False)
    source = f"(settings from {index / 'config.toml'})"  # the file to fix, when no flag was given
    assert (proc.returncode, proc.stderr.strip()) == (2, f"error: rrf_k must be a positive integer, got 'x' {source}")
    (index / "config.toml").write_text('lanes = "bm25,index"\n[score_weights]\nbm25 = 2.0\n', encoding="utf-8")
    hit = search_json(index, "hooks", "--limit", "1", "--explain")["hits"][0]
    assert {c["lane"]: c["weight"] for c in hit["explain"]} == {"bm25": 2.0, "index": 0.12}
    (index / "config.toml").write_text('lanes = "bm25,index"\nfusion = "rrf"\n[lane_weights]\nbm25 = 2.0\n',
                                       encoding="utf-8")
    hit = search_json(index, "hooks", "--limit", "1", "--explain")["hits"][0]
    assert {c["lane"]: c["weight"] for c in hit["explain"]} == {"bm25": 2.0, "index": 1.5}
    (index / "config.toml").write_text('fusion = "sum"\n', encoding="utf-8")
    proc = run_cli("search", "hooks", "--index", str(index), check=False)
    assert (proc.returncode, proc.stderr.strip()) == (
        2, f"error: fusion must be one of rrf, convex, zscore, got 'sum' {source}")
    proc = run_cli("search", "hooks", "--index", str(index), check=False, env={"SLEUTH_LANES": "bm25,magic"})
    assert (proc.returncode, proc.stderr.strip()) == (2, "error: unknown lane(s) magic; choose from bm25, tfidf, "
                                                         f"index, rm3, exact, vector, graph (settings from "
                                                         f"{index / 'config.toml'} and $SLEUTH_LANES)")


def test_status_lists_warnings_and_counts_skipped_files(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "broken.md").write_text("---\ntitle: [unclosed\n---\n# Body\n\nStill indexed.\n", encoding="utf-8")
    (root / "empty.md").write_text("", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG")
    report = json.loads(run_cli("index", str(root), "--format", "json").stdout)
    assert (report["scanned"], report["added"], len(report["skipped"])) == (3, 2, 1)
    status = json.loads(run_cli("status", "--index", str(root / ".sleuth"), "--format", "json").stdout)
    assert [(p["path"], p["problem"].startswith("front matter: invalid YAML")) for p in status["problems"]] == [
        ("broken.md", True)]
    hits = search_json(root / ".sleuth", "empty.md")["hits"]
    assert [h["path"] for h in hits][:1] == ["empty.md"]
    out = run_cli("status", "--index", str(root / ".sleuth")).stdout
    assert "2 documents, " in out and ", 1 project(s)" in out and "1 file(s) indexed with a warning" in out


def test_index_without_a_model_and_a_first_run_that_never_finished(tmp_path: Path) -> None:
    import sqlite3

    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nThe zephyr protocol handshake.\n", encoding="utf-8")
    index = tmp_path / "idx"
    out = run_cli("index", str(root), "--index", str(index), env={"SLEUTH_MODEL": "none"}).stdout
    assert out.splitlines()[1] == ("  vector lane unavailable (searches use the lexical lanes):"
                                   " no embedding model configured (model = 'none')")
    bad = run_cli("index", str(root), "--index", str(index), env={"SLEUTH_MODEL": str(tmp_path / "no-model")}).stdout
    assert f"vector lane unavailable (searches use the lexical lanes): model '{tmp_path / 'no-model'}'" in bad
    # A first run killed before it finished leaves the project without a last indexing time.
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        conn.execute("UPDATE projects SET last_indexed = NULL")
    never = "last indexed never (no indexing run has finished; run `sleuth index`)"
    assert run_cli("projects", "--index", str(index)).stdout.splitlines()[0] == (
        f"notes: 1 document, 1 block, {never}")
    status = run_cli("status", "--index", str(index)).stdout.splitlines()
    assert f"  project notes: 1 document, {never}" in status
    # The embedding stopped too (no vector: the default model, no worker): `sleuth embed` alone would
    # leave the index partial, and status said only that (a new user's trial).
    assert any(line.startswith("  embedding stopped: 0 of 1 blocks") for line in status), status
    assert ("  first, no indexing run of project(s) notes has finished (interrupted?): `sleuth index` goes on with"
            " it, then embeds") in status


def test_status_lists_each_projects_roots_under_it_and_doctor_names_the_families_lanes(tmp_path: Path) -> None:
    # Two projects: before, every root line came after the last project line, so the roots of the
    # first seemed to belong to the second; doctor's "lane bm25" read as the bm25 lane alone.
    (tmp_path / "alpha").mkdir()
    (tmp_path / "beta").mkdir()
    (tmp_path / "alpha" / "a.md").write_text("# Alpha\n\nThe zephyr protocol.\n", encoding="utf-8")
    (tmp_path / "beta" / "b.md").write_text("# Beta\n\nThe zephyr handshake.\n", encoding="utf-8")
    index = tmp_path / "idx"
    for name in ("alpha", "beta"):
        run_cli("index", str(tmp_path / name), "--index", str(index), env={"SLEUTH_MODEL": "none"})
    lines = run_cli("status", "--index", str(index), env={"SLEUTH_MODEL": "none"}).stdout.splitlines()
    shown = [line.split(":")[0].strip() for line in lines if line.startswith(("  project ", f"    {tmp_path}"))]
    assert shown == ["project alpha", str(tmp_path / "alpha"), "project beta", str(tmp_path / "beta")]
    assert not any(line.startswith("  config.toml: ") for line in lines)
    (index / "config.toml").write_text('fusion = "rrf"\n[score_weights]\nbm25 = 1\n', encoding="utf-8")
    lines = run_cli("status", "--index", str(index), env={"SLEUTH_MODEL": "none"}).stdout.splitlines()
    assert "  config.toml: [score_weights] is not used: fusion = 'rrf' weighs the lanes by [lane_weights]" in lines
    (index / "config.toml").unlink()
    proc = run_cli("doctor", "--index", str(index), env={"SLEUTH_MODEL": "none"}, check=False)
    doctor = proc.stdout.splitlines()
    assert "  retrieval family bm25 (lanes bm25, tfidf, index, rm3): available" in doctor
    # a model turned off is the user's choice: reported, not counted (it exited 1, "needs attention")
    assert "  retrieval family vector (lanes vector): unavailable: no embedding model configured (model = 'none')" \
        in doctor
    assert proc.returncode == 0 and doctor[0] == f"index {index}: ok"
    report = json.loads(run_cli("doctor", "--index", str(index), "--format", "json",
                                env={"SLEUTH_MODEL": "none"}).stdout)
    assert report["ok"] is True and report["lanes"]["vector"]["available"] is False
    # a model configured but missing still needs attention
    missing = str(tmp_path / "no-model")
    proc = run_cli("doctor", "--index", str(index), env={"SLEUTH_MODEL": missing}, check=False)
    assert proc.returncode == 1 and proc.stdout.splitlines()[0] == f"index {index}: needs attention"
    assert f"  retrieval family vector (lanes vector): unavailable: model '{missing}'" in proc.stdout


def test_two_roots_with_one_folder_name_keep_their_documents_apart(tmp_path: Path) -> None:
    # a/docs and b/docs in one project: the same relative path under each is two documents (before,
    # both got one id and overwrote each other on every run).
    for side, word in (("a", "alphawombat"), ("b", "betawombat")):
        (tmp_path / side / "docs").mkdir(parents=True)
        (tmp_path / side / "docs" / "setup.md").write_text(f"# Setup {side}\n\nAbout {word}.\n", encoding="utf-8")
    index = tmp_path / "idx"
    env = {"SLEUTH_MODEL": "none"}
    args = ("index", str(tmp_path / "a" / "docs"), str(tmp_path / "b" / "docs"), "--project", "two",
            "--index", str(index), "--format", "json")
    first = json.loads(run_cli(*args, env=env).stdout)
    assert first["added"] == 2
    again = json.loads(run_cli(*args, env=env).stdout)
    assert (again["added"], again["unchanged"]) == (0, 2)
    for word, side in (("alphawombat", "a"), ("betawombat", "b")):
        hits = json.loads(run_cli("search", word, "--index", str(index), "--format", "json", env=env).stdout)["hits"]
        assert [(h["path"], h["root"]) for h in hits] == [("setup.md", str(tmp_path / side / "docs"))]
    projects = json.loads(run_cli("projects", "--index", str(index), "--format", "json", env=env).stdout)
    assert [p["documents"] for p in projects["projects"]] == [2]


def test_variants_and_questions_are_bounded_everywhere(hugo_index: Path) -> None:
    """Attack session 24: `--variant` and SearchRequest.variants / questions had no limit (each
    variant runs every lane and embeds its text: 300 variants took 3 s, 10,000 would take minutes);
    now as project_memory_search's: 19 variants, 20 questions."""
    import pydantic

    from sleuth.types import SEARCH_QUESTIONS_MAX, SEARCH_VARIANTS_MAX, Question, SearchRequest

    args = [a for i in range(SEARCH_VARIANTS_MAX + 1) for a in ("--variant", f"other wording {i}")]
    proc = run_cli("search", "x", *args, "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "Invalid value for --variant: 20 given; the limit is 19" in proc.stderr
    paths = [a for i in range(51) for a in ("--path", f"d{i}/**")]
    proc = run_cli("search", "x", *paths, "--index", str(hugo_index), check=False)
    assert proc.returncode == 2 and "Invalid value for --path: 51 given; the limit is 50" in proc.stderr
    assert len(SearchRequest(query="x", variants=["y"] * SEARCH_VARIANTS_MAX).variants) == 19
    with pytest.raises(pydantic.ValidationError, match="at most 19 items"):
        SearchRequest(query="x", variants=["y"] * (SEARCH_VARIANTS_MAX + 1))
    with pytest.raises(pydantic.ValidationError, match="at most 19 items"):
        Question(query="x", variants=["y"] * (SEARCH_VARIANTS_MAX + 1))
    with pytest.raises(pydantic.ValidationError, match="at most 20 items"):
        SearchRequest(questions=[Question(query="x")] * (SEARCH_QUESTIONS_MAX + 1))


#: Modules that loading the embedding model imports (its onnxruntime session, its tokenizer).
MODEL_MODULES = ("onnxruntime", "tokenizers")


def test_status_shows_the_models_name_and_dimensions_without_loading_it(tmp_path: Path) -> None:
    """`sleuth status` loaded the embedding model (an onnxruntime session and the tokenizer) only
    to show its name and dimensions; they are read from the model's files. The real command runs
    in a new interpreter, which then says which of the model's modules it imported."""
    import subprocess
    import sys

    from sleuth.engine import Engine

    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nAbout tides and reefs, note {i}.\n", encoding="utf-8")
    run_cli("index", str(notes), "--index", str(index))  # embedded (SLEUTH_INDEX_WAIT)
    loaded = tmp_path / "loaded.json"
    program = ("import json, sys\nfrom sleuth.cli import cli\ntry:\n"
               "    cli(sys.argv[1:-1], prog_name='sleuth')\nfinally:\n"
               f"    open(sys.argv[-1], 'w').write(json.dumps([m for m in {MODEL_MODULES!r} if m in sys.modules]))\n")
    runs = {fmt: subprocess.run([sys.executable, "-c", program, "status", "--index", str(index), "--format", fmt,
                                 str(loaded)], capture_output=True, text=True, timeout=300)
            for fmt in ("json", "text")}
    assert [(r.returncode, r.stderr) for r in runs.values()] == [(0, ""), (0, "")]
    assert json.loads(loaded.read_text()) == []  # was ["onnxruntime", "tokenizers"]
    with Engine.open(index) as engine:  # the loaded model's own name, dimensions and path
        embedder = engine.embedder()
        assert embedder is not None
        blocks = engine.catalog.counts()["blocks"]
    vector = json.loads(runs["json"].stdout)["vector_lane"]
    assert (vector["available"], vector["model"], vector["dimensions"], vector["path"]) == (
        True, embedder.name, embedder.dim, embedder.path)
    assert embedder.dim == 384 and vector["blocks_with_vectors"] == vector["blocks"] == blocks
    assert (f"  vector lane: {embedder.name} (384 dimensions, {embedder.path}), {blocks} of {blocks} blocks embedded"
            in runs["text"].stdout.splitlines())


def test_get_of_a_skipped_file_says_it_was_skipped_and_why(tmp_path: Path) -> None:
    """A new user's trial: `sleuth get` of a file that indexing skipped said "document not found";
    it says the file was skipped, with the reason the catalog recorded, for each way of naming it."""
    notes = tmp_path / "notes"
    (notes / "sub").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    (notes / "sub" / "tool.exe").write_bytes(b"MZ\0\1binary")
    index = tmp_path / "idx"
    env = {"SLEUTH_MODEL": "none"}
    run_cli("index", str(notes), "--index", str(index), env=env)
    said = ("error: not indexed: {!r} was skipped at indexing: notes/sub/tool.exe (project notes): binary file type:"
            " .exe (`sleuth status --verbose` lists every file not indexed)")
    for ref in ("sub/tool.exe", "notes/sub/tool.exe", str(notes / "sub" / "tool.exe")):
        proc = run_cli("get", ref, "--index", str(index), env=env, check=False)
        assert (proc.returncode, proc.stdout, proc.stderr.strip()) == (4, "", said.format(ref))
    other = run_cli("get", "sub/tool.exe", "--project", "elsewhere", "--index", str(index), env=env, check=False)
    assert other.returncode == 4 and "document not found: 'sub/tool.exe'" in other.stderr  # not in that project
    missing = run_cli("get", "nothing.md", "--index", str(index), env=env, check=False)
    assert missing.returncode == 4 and "document not found: 'nothing.md'" in missing.stderr


def test_counts_in_human_text_have_thousands_separators_everywhere(tmp_path: Path) -> None:
    """A new user's trial: `sleuth index` showed "1,129/1,129 blocks" (the progress line) beside
    "1129 blocks written" (the summary). Every count in the text of index, status, projects and
    doctor has thousands separators; JSON keeps numbers."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(1000):
        (notes / f"n{i:04d}.md").write_text(f"# Note {i}\n\nAbout tides, note {i}.\n", encoding="utf-8")
        (notes / f"t{i:04d}.exe").write_bytes(b"MZ\0\1")
    index, env = tmp_path / "idx", {"SLEUTH_MODEL": "none"}
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=env)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"indexed project 'notes' into {index}: 2,000 files scanned, 1,000 added, 0 updated, "
                               "0 unchanged, 0 removed, 1,000 blocks written, 0 embedded, 1,000 skipped (")
    assert "  1,000 skipped file(s):" in lines
    assert "    1,000 binary file type (t0000.exe, t0001.exe, t0002.exe, ... (997 more))" in lines
    assert "postings 1,000/1,000 blocks" in proc.stderr
    status = run_cli("status", "--index", str(index), env=env).stdout.splitlines()
    assert status[1].startswith("  1,000 documents, 1,000 blocks, 1 project(s), generation ")
    assert f"    {notes}: 1,000 indexed, 1,000 skipped, 0 failed, last indexed " in "\n".join(status)
    assert "  1,000 skipped file(s):" in status
    projects = run_cli("projects", "--index", str(index), env=env).stdout.splitlines()
    assert projects[0].startswith("notes: 1,000 documents, 1,000 blocks, last indexed ")
    doctor = run_cli("doctor", "--index", str(index), env=env).stdout.splitlines()
    assert "  1,000 skipped file(s):" in doctor
    project = f"  project notes: 1,000 documents, 1,000 blocks, 0 stale, 1,000 skipped; memory folder {index}"
    assert f"{project}/memory/notes" in doctor
    again = json.loads(run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                               env=env).stdout)
    assert (again["scanned"], again["unchanged"], len(again["skipped"])) == (2000, 1000, 1000)
    assert json.loads(run_cli("status", "--index", str(index), "--format", "json", env=env).stdout)["blocks"] == 1000


def test_get_of_a_path_in_a_symlink_loop_or_outside_every_root_is_not_found(tmp_path: Path) -> None:
    """An attack: `sleuth get /abs/path/through/a/symlink/loop` ended in a traceback (RuntimeError
    from resolving it) and MCP get_notebook in a bare "Error executing tool"; a NUL byte likewise.
    Any path outside the roots, looped or not, and a looped path inside one, is "not found";
    a NUL byte is refused in words."""
    from tests.integration.mcp_session import session, text_of

    notes, outside = tmp_path / "notes", tmp_path / "outside"
    notes.mkdir()
    outside.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    index = tmp_path / "idx"
    env = {"SLEUTH_MODEL": "none"}
    run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=env)
    for folder in (notes, outside):  # a loop made after indexing, inside the root and outside it
        (folder / "loop").symlink_to(folder / "loop")
    refs = [str(outside / "loop" / "x.md"), str(notes / "loop" / "x.md"), str(outside / "nothing.md")]
    for ref in refs:
        proc = run_cli("get", ref, "--index", str(index), env=env, check=False)
        assert (proc.returncode, proc.stdout) == (4, ""), proc.stderr
        assert proc.stderr.startswith(f"error: document not found: {ref!r} (give a document id"), proc.stderr
    assert run_cli("get", str(notes / "a.md"), "--index", str(index), env=env).stdout.startswith("# A")
    nul = str(outside / "a\0b")
    calls = [("get_notebook", {"project_id": "notes", "item_id": ref}) for ref in [*refs, nul]]
    results = session(["--index", str(index), "--no-broker", "--tools", "project"], calls, env=env)["results"]
    answers = [(bool(r.is_error), text_of(r)) for r in results]
    assert answers == [*((True, f"Error executing tool get_notebook: item not found or access denied: {ref}")
                         for ref in refs),
                       (True, f"item_id holds a NUL character (U+0000) at character {nul.index(chr(0))}; "
                              "arguments must be text")]  # the MCP arguments' own check


def test_status_neither_builds_nor_quantises_the_models_graph(tmp_path: Path) -> None:
    """An attack: with a cold model cache `sleuth status` built or quantised the model's ONNX graph
    (a 400 MB model.onnx: 533 MB RSS, 6.8 s, files written into the cache) only to show its name.
    It reads the name, the arithmetic path and the declared dimensions from the model's folder and
    writes nothing; here the graphs are junk, which building or quantising would have failed on."""
    from sleuth.embed import INT8_INEXACT_SUFFIX, INT8_OUTLIERS_SUFFIX, INT8_SUFFIX, int8_support

    inexact = "" if int8_support().fast else INT8_INEXACT_SUFFIX
    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    run_cli("index", str(notes), "--index", str(index), env={"SLEUTH_MODEL": "none"})
    (index / "config.toml").write_text("model_int8 = true\n", encoding="utf-8")  # quantise on any CPU
    for weights, name in (("model.onnx", f"graph{INT8_SUFFIX}{inexact}"),
                          ("model.safetensors", f"weights{INT8_OUTLIERS_SUFFIX}{inexact}")):
        model, cache = tmp_path / name.split("@")[0], tmp_path / f"cache-{weights}"
        model.mkdir()
        cache.mkdir()
        (model / "config.json").write_text('{"hidden_size": 384}', encoding="utf-8")
        (model / "tokenizer.json").write_text("{}", encoding="utf-8")
        (model / weights).write_bytes(b"\x08junk" * 200)
        env = {"SLEUTH_MODEL": str(model), "SLEUTH_MODEL_CACHE": str(cache)}
        shown = json.loads(run_cli("status", "--index", str(index), "--format", "json", env=env).stdout)
        vector = shown["vector_lane"]
        assert (vector["available"], vector["model"], vector["dimensions"]) == (False, name, 384), vector
        assert vector["reason"].startswith(f"no block has a vector from {name} yet"), vector
        text = run_cli("status", "--index", str(index), env=env).stdout
        assert f"  vector lane unavailable: no block has a vector from {name} yet" in text, text
        assert list(cache.iterdir()) == [], weights  # nothing built, quantised or swept into it


def test_a_dangling_symlink_in_the_model_folder_is_passed_over(tmp_path: Path) -> None:
    """An attack: a dangling symlink among the model folder's *.json files made `sleuth index`,
    `status` and `doctor` exit 2 with "[Errno 2] No such file or directory" (the cache key stat'ed
    every file). It counts by its name: the real model (its files linked) embeds and reports as
    before; a model that cannot be built is reported while the lexical lanes are committed."""
    from sleuth.embed import packaged_minilm_dir

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha reef\n", encoding="utf-8")
    real, junk = tmp_path / "real", tmp_path / "junk"
    for folder in (real, junk):
        folder.mkdir()
        (folder / "dangling.json").symlink_to(tmp_path / "nonexistent" / "x")
    for entry in packaged_minilm_dir().iterdir():
        (real / entry.name).symlink_to(entry)
    (junk / "config.json").write_text('{"hidden_size": 384}', encoding="utf-8")
    (junk / "tokenizer.json").write_text("{}", encoding="utf-8")
    (junk / "model.safetensors").write_bytes(b"junk")
    env = {"SLEUTH_MODEL": str(real)}
    index = tmp_path / "idx-real"
    indexed = run_cli("index", str(notes), "--index", str(index), env=env)
    assert ", 1 block written, 1 embedded, 0 skipped" in indexed.stdout, indexed.stdout
    vector = json.loads(run_cli("status", "--index", str(index), "--format", "json", env=env).stdout)["vector_lane"]
    assert (vector["available"], vector["model"].partition("@")[0], vector["dimensions"],
            vector["blocks_with_vectors"]) == (True, "real", 384, 1)
    doctor = run_cli("doctor", "--index", str(index), env=env)
    assert "  retrieval family vector (lanes vector): available" in doctor.stdout.splitlines(), doctor.stdout
    env, index = {"SLEUTH_MODEL": str(junk)}, tmp_path / "idx-junk"
    why = f"cannot build {junk}'s ONNX graph: model_type None is not supported (only 'bert')"
    indexed = run_cli("index", str(notes), "--index", str(index), env=env)
    assert f"  vector lane unavailable (searches use the lexical lanes): {why}" in indexed.stdout, indexed.stdout
    assert run_cli("status", "--index", str(index), env=env).returncode == 0
    doctor = run_cli("doctor", "--index", str(index), env=env, check=False)
    assert (doctor.returncode, doctor.stderr) == (1, ""), doctor.stderr  # 1: the model needs attention
    assert f"  retrieval family vector (lanes vector): unavailable: {why}" in doctor.stdout.splitlines()
    found = run_cli("search", "reef", "--index", str(index), "--format", "json", env=env)
    assert [h["path"] for h in json.loads(found.stdout)["hits"]] == ["a.md"]


def test_a_model_folder_starting_with_a_tilde_of_no_home_is_a_configuration_error(tmp_path: Path) -> None:
    """An attack: SLEUTH_MODEL='~none' (or model = "~x" in config.toml) made status, doctor and
    index end in "RuntimeError: Could not determine home directory." from expanding the '~'. It is
    a configuration error in words; a model cache under such a '~' leaves the vector lane unavailable."""
    import os
    import subprocess
    import sys

    from sleuth.embed import DEFAULT_MODEL

    notes, index = tmp_path / "notes", tmp_path / "idx"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    run_cli("index", str(notes), "--index", str(index), env={"SLEUTH_MODEL": "none"})
    spec = "~sleuth-no-such-user/model"
    said = (f"error: model '{spec}' starts with \'~\' but names no home folder (no such user, or $HOME unset): "
            "give the folder's full path (settings from {})")
    for command in (["status"], ["doctor"], ["index", str(notes)]):
        proc = run_cli(*command, "--index", str(index), env={"SLEUTH_MODEL": spec}, check=False)
        assert (proc.returncode, proc.stdout, proc.stderr.splitlines()[-1:]) == (
            2, "", [said.format("$SLEUTH_MODEL")]), proc.stderr
    (index / "config.toml").write_text(f'model = "{spec}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SLEUTH_MODEL"}
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "status", "--index", str(index)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert (proc.returncode, proc.stderr.strip()) == (2, said.format(index / "config.toml")), proc.stderr
    (index / "config.toml").unlink()
    cache = "~sleuth-no-such-user/cache"
    shown = run_cli("status", "--index", str(index), "--format", "json",
                    env={"SLEUTH_MODEL_CACHE": cache, "SLEUTH_MODEL": DEFAULT_MODEL}).stdout
    assert json.loads(shown)["vector_lane"]["reason"] == (
        f"the model cache's folder names no home folder ($SLEUTH_MODEL_CACHE={cache!r}; no such user, or $HOME "
        "unset): set $SLEUTH_MODEL_CACHE to a full path")


def test_text_output_says_what_supersedes_a_hit(tmp_path: Path) -> None:
    """A new user's trial (stop 28): a superseded decision record ranked below its replacement
    with nothing in the text output saying why (JSON had ``superseded_by``); ``--explain`` showed
    contributions that did not account for the order."""
    adr = tmp_path / "adr"
    adr.mkdir()
    (adr / "0002-use-postgresql.md").write_text(
        "# 2. Use PostgreSQL\n\nDate: 2020-01-01\n\n## Status\n\nSuperceded by [3. Use SQLite](0003-use-sqlite.md)\n\n"
        "## Context\n\nThe catalog database: PostgreSQL for the catalog database, a catalog server.\n")
    (adr / "0003-use-sqlite.md").write_text(
        "# 3. Use SQLite\n\nDate: 2021-06-15\n\n## Status\n\nAccepted\n\nSupersedes [2. Use PostgreSQL]"
        "(0002-use-postgresql.md)\n\n## Context\n\nThe catalog database is one file, and that is enough for us.\n")
    index = tmp_path / "idx"
    run_cli("index", str(adr), "--project", "adr", "--index", str(index), env={"SLEUTH_MODEL": "none"})
    hits = search_json(index, "catalog database", "--lanes", "bm25")["hits"]
    assert [(h["path"], h["superseded_by"]) for h in hits] == [("0003-use-sqlite.md", []),
                                                              ("0002-use-postgresql.md", [hits[0]["doc_id"]])]
    text = run_cli("search", "catalog database", "--lanes", "bm25", "--index", str(index)).stdout.splitlines()
    assert "    superseded by #1 0003-use-sqlite.md" in text
    explained = run_cli("search", "catalog database", "--lanes", "bm25", "--explain", "--index", str(index)).stdout
    assert "    superseded by #1 0003-use-sqlite.md  (so ranked below it, whatever its fused score)" in explained
    # The replacement says why it ranks first: it was moved above what it supersedes, with that one's score
    # (a new user saw it at #1 with score 0.0000 and every lane's contribution 0).
    assert hits[0]["score"] == hits[1]["score"] > 0 and hits[0]["moved_above"] == [hits[1]["doc_id"]]
    assert "    supersedes #2 0002-use-postgresql.md  (so moved above it; its score is at least that one's)" in text
    lines = explained.splitlines()
    assert lines[0] == f" 1. 0003-use-sqlite.md  [adr]  decision  score {hits[1]['score']:.4f}  lines 11-13"
    bm25 = next(c for c in search_json(index, "catalog database", "--lanes", "bm25", "--explain")["hits"][0]["explain"]
                if c["lane"] == "bm25")
    raise_ = hits[1]["score"] - bm25["contribution"]
    assert lines[6] == (f"      moved above #2 0002-use-postgresql.md, which it supersedes: contribution {raise_:.6f}"
                        f"  (its score {hits[1]['score']:.4f})")
    assert lines[7] == f"      sum = {hits[1]['score']:.6f}"


def test_a_query_of_several_unquoted_words_is_one_query(tmp_path: Path) -> None:
    """A new user's trial: `sleuth search courgettes raised beds` failed with "Got unexpected extra
    arguments"; the words are now one query, as if quoted."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "beds.md").write_text("# Beds\n\nCourgettes grow in raised beds.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--index", str(index), env={"SLEUTH_MODEL": "none"})
    out = json.loads(run_cli("search", "courgettes", "raised", "beds", "--index", str(index), "--format", "json",
                             env={"SLEUTH_MODEL": "none"}).stdout)
    assert (out["query"], [h["path"] for h in out["hits"]]) == ("courgettes raised beds", ["beds.md"])
