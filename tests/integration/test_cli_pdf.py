"""PDFs through the real command line: indexed page by page; unusable ones skipped with a reason."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.integration.conftest import run_cli
from tests.pdf_samples import encrypt_pdf, image_only_pdf, make_pdf

LEXICAL = {"SLEUTH_MODEL": "none"}  # embedding is not what these tests are about


def test_index_pdfs_and_report_unusable_ones(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "papers").mkdir(parents=True)
    (root / "papers" / "attention.pdf").write_bytes(make_pdf(
        ["Attention Is All You Need\nSelf-attention replaces recurrence.",
         "Ablations\nThe quokka ablation removes half of the heads.",
         "Results\nTranslation quality improves."],
        title="Attention Is All You Need",
    ))
    (root / "papers" / "locked.pdf").write_bytes(encrypt_pdf(make_pdf(["Secret numbat plans."]), "secret"))
    (root / "papers" / "broken.pdf").write_bytes(make_pdf(["Truncated platypus."])[:300])
    (root / "papers" / "scan.pdf").write_bytes(image_only_pdf())
    with zipfile.ZipFile(root / "bundle.zip", "w") as zf:
        zf.writestr("inner/survey.pdf", make_pdf(["Survey", "Wombat retrieval methods compared."]))
    (root / "notes.md").write_text("# Notes\n\nRead [the paper](papers/attention.pdf).\n")
    index = tmp_path / "idx"

    report = json.loads(run_cli("index", str(root), "--index", str(index), "--format", "json", env=LEXICAL).stdout)

    assert (report["added"], report["scanned"]) == (3, 6)
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert set(reasons) == {"papers/locked.pdf", "papers/broken.pdf", "papers/scan.pdf"}
    assert reasons["papers/locked.pdf"].endswith("locked.pdf: encrypted PDF: a password is required")
    assert "broken.pdf: corrupt PDF: " in reasons["papers/broken.pdf"]
    assert reasons["papers/scan.pdf"].endswith(
        "scan.pdf: no extractable text in 2 page(s) (scanned images need OCR, which sleuth does not do)"
    )

    def first_hit(query: str) -> dict:
        out = run_cli("search", query, "--index", str(index), "--format", "json", "--limit", "1", env=LEXICAL)
        return json.loads(out.stdout)["hits"][0]

    hit = first_hit("quokka ablation")
    # One kind vocabulary (issue 17): kind "paper", the file format apart; the location is the page.
    assert (hit["path"], hit["kind"], hit["format"], hit["heading_path"], hit["location"], hit["lines"]) == (
        "papers/attention.pdf", "paper", "pdf", ["page 2"], "page 2", [4, 5]
    )
    hit = first_hit("wombat retrieval")
    assert (hit["path"], hit["heading_path"]) == ("bundle.zip/inner/survey.pdf", ["page 2"])

    again = json.loads(run_cli("index", str(root), "--index", str(index), "--format", "json", env=LEXICAL).stdout)
    assert (again["added"], again["updated"], again["unchanged"], len(again["skipped"])) == (0, 0, 3, 3)
