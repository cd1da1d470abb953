"""markdown-it-pyrs against markdown-it-py, page by page: the headings and links sleuth reads of every
markdown page of the corpora, and the CPU each parse takes (sleuth.ingest.markdown_tree).

``python bench/markdown_identity.py [--data ../shared/data] [--folder DIR ...]`` reads every ``.md``
member of ``md-hugo-docs/markdown.tar.gz`` and ``md-tldr/markdown.tar.gz`` (and every ``.md`` file
under each ``--folder``) and prints, per corpus: pages, pages the Rust parser took (the others fall
back to markdown-it-py: ``pyrs_usable`` false, or the parse failed), pages whose headings
(``_headings``) or links (``extract_links``) differ between the two token streams, and the mean
CPU ms a page of ``markdown_it_tokens`` and of ``markdown_tokens``. Exits 1 when a page differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

from sleuth.ingest.links import extract_links, markdown_it_tokens, markdown_tokens
from sleuth.ingest.markdown_tree import tree_tokens
from sleuth.ingest.parsers import _headings


def _archive_pages(archive: Path) -> Iterator[tuple[str, str]]:
    with tarfile.open(archive) as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".md"):
                f = tar.extractfile(member)
                if f is not None:
                    yield member.name, f.read().decode("utf-8", "replace")


def _folder_pages(folder: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(folder.rglob("*.md")):
        if path.is_file():
            yield str(path), path.read_text(encoding="utf-8", errors="replace")


def compare(label: str, pages: Iterator[tuple[str, str]]) -> bool:
    """Print one corpus' line; True when every page gives the same headings and links."""
    n = took = differ = 0
    cpu_it = cpu_ours = 0.0
    shown: list[str] = []
    for name, text in pages:
        n += 1
        started = time.process_time()
        reference = markdown_it_tokens(text)
        cpu_it += time.process_time() - started
        started = time.process_time()
        markdown_tokens(text)
        cpu_ours += time.process_time() - started
        tree = tree_tokens(text)
        if tree is None:
            continue
        took += 1
        if (_headings(text, reference) != _headings(text, tree)
                or extract_links(text, {}, reference) != extract_links(text, {}, tree)):
            differ += 1
            if len(shown) < 5:
                shown.append(name)
    print(json.dumps({"corpus": label, "pages": n, "parsed by markdown-it-pyrs": took, "pages that differ": differ,
                      "first that differ": shown, "markdown-it-py ms a page": round(1000 * cpu_it / max(n, 1), 4),
                      "markdown_tokens ms a page": round(1000 * cpu_ours / max(n, 1), 4)}), flush=True)
    return differ == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--folder", type=Path, action="append", default=[])
    args = ap.parse_args()
    same = True
    for corpus in ("md-hugo-docs", "md-tldr"):
        archive = args.data / corpus / "markdown.tar.gz"
        if archive.exists():
            same = compare(corpus, _archive_pages(archive)) and same
    for folder in args.folder:
        same = compare(str(folder), _folder_pages(folder)) and same
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
