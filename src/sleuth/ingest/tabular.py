"""Tabular data files (CSV, TSV, large JSON): skipped by default, as a documented, configurable rule.

Why skip rather than index them with a penalty: a table is rows of cells, not passages. Split into
blocks, a 15,000-line CSV becomes hundreds of blocks that each carry the file's name and header
words, so it crowds prose out of the results of a query that names its format ("read a csv file")
and costs more embedding time than the rest of a vault; a score penalty would still leave its
hundreds of blocks in every lane's depth and in the embedding queue. Nothing is lost silently:
each such file is reported as skipped with the reason ``tabular data file`` and the setting that
indexes it.

config.toml::

    tabular = "skip"                 # or "index": tabular files are indexed as text (as before)
    tabular_json_min_bytes = 262144  # JSON files at least this large count as data (0: every JSON)

Small JSON files (``package.json``, ``tsconfig.json``, notebooks' metadata) stay indexed: they are
configuration people search for by key.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sleuth.doc_types import SkippedFile

if TYPE_CHECKING:
    from sleuth.indexer import FileCandidate

#: File name extensions of tables, always tabular.
TABULAR_EXTENSIONS = (".csv", ".tsv")
#: JSON files (``.json``) at least this many bytes are tabular data (exports, dumps, datasets).
TABULAR_JSON_MIN_BYTES = 256 * 1024
#: The values of the ``tabular`` setting.
TABULAR_MODES = ("skip", "index")
#: The reason a tabular file is reported with (its category in the skipped-file summaries).
TABULAR_REASON = "tabular data file"


def suffix_of(rel_path: str) -> str:
    """The lower-cased suffix of the last part of ``/``-separated ``rel_path``, as
    ``PurePosixPath(rel_path.lower()).suffix`` gives it (``""`` for ``.json`` or ``a.``), without
    building a path: it is asked of every file of every run (0.16 s of CPU for 38,404 paths)."""
    name = rel_path.rpartition("/")[2].lower()
    dot = name.rfind(".")
    return name[dot:] if 0 < dot < len(name) - 1 else ""


@dataclass(frozen=True)
class TabularRule:
    """What the indexer does with tabular files: ``mode`` ``skip`` (default) or ``index``;
    ``json_min_bytes``: the size from which a JSON file is tabular."""

    mode: str = "skip"
    json_min_bytes: int = TABULAR_JSON_MIN_BYTES

    def is_tabular(self, rel_path: str, size_bytes: int) -> bool:
        """Whether the file ``rel_path`` of ``size_bytes`` is tabular data by this rule."""
        suffix = suffix_of(rel_path)
        return suffix in TABULAR_EXTENSIONS or (suffix == ".json" and size_bytes >= self.json_min_bytes)

    def reason(self, rel_path: str, size_bytes: int) -> str:
        """The skip reason of a tabular file, naming the setting that would index it."""
        suffix = suffix_of(rel_path)
        what = f"{suffix} of {size_bytes} bytes" if suffix == ".json" else suffix
        return f"{TABULAR_REASON}: {what} (set tabular = \"index\" in config.toml to index it)"

    def apply(self, items: Iterable[FileCandidate | SkippedFile]) -> Iterator[FileCandidate | SkippedFile]:
        """``items`` with each tabular candidate replaced by a SkippedFile (unchanged when ``mode`` is index)."""
        for item in items:
            if self.mode == "skip" and not isinstance(item, SkippedFile) and \
                    self.is_tabular(item.rel_path, item.size_bytes):
                yield SkippedFile(item.rel_path, self.reason(item.rel_path, item.size_bytes))
            else:
                yield item
