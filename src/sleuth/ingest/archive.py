"""Reading documents straight out of tar and zip archives (e.g. a docs bundle), without extracting.

Members are read in memory; nothing is written to disk, so member names cannot escape anywhere.
"""

from __future__ import annotations

import datetime
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sleuth.ingest.walk import ARCHIVE_SUFFIXES, max_bytes_for
from sleuth.types import SkippedFile


@dataclass(frozen=True)
class ArchiveMember:
    """One regular file inside an archive: its path inside, its bytes and its time (ns)."""

    name: str
    data: bytes
    mtime_ns: int


class ArchiveError(Exception):
    """The archive cannot be opened or read (corrupt, truncated, not really an archive)."""


def _too_large(name: str, size_bytes: int) -> str | None:
    """The skip reason when member ``name`` of ``size_bytes`` bytes is over its limit, else None."""
    limit = max_bytes_for(name)
    return f"too large: {size_bytes} bytes > {limit} byte limit" if size_bytes > limit else None


def is_archive(name: str) -> bool:
    """True when ``name`` ends like an archive sleuth reads (``.tar.gz``, ``.zip``, ...)."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def iter_archive(path: Path) -> Iterator[ArchiveMember | SkippedFile]:
    """The regular files of a tar (optionally compressed) or zip archive, in archive order.

    Members larger than ``FILE_MAX_BYTES`` (PDFs: ``PDF_MAX_BYTES``) come out as SkippedFile.
    Raises:
        ArchiveError: the file is not a readable archive.
    """
    try:
        if path.name.lower().endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    if info.is_dir():
                        continue
                    too_large = _too_large(info.filename, info.file_size)
                    if too_large is not None:
                        yield SkippedFile(info.filename, too_large)
                        continue
                    y, mo, d, h, mi, s = info.date_time
                    ts = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.UTC).timestamp()
                    yield ArchiveMember(info.filename, zf.read(info), int(ts * 1e9))
            return
        with tarfile.open(path) as tar:
            for member in tar:
                if not member.isfile():
                    continue
                too_large = _too_large(member.name, member.size)
                if too_large is not None:
                    yield SkippedFile(member.name, too_large)
                    continue
                handle = tar.extractfile(member)
                if handle is not None:
                    yield ArchiveMember(member.name, handle.read(), int(member.mtime * 1e9))
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError) as exc:
        raise ArchiveError(f"cannot read archive: {exc}") from exc
