"""Reading documents straight out of tar and zip archives (e.g. a docs bundle), without extracting.

Members are read in memory; nothing is written to disk, so member names cannot escape anywhere.
Still, every name is hostile until checked (:func:`member_name`): backslashes become ``/``, a drive
letter and leading slashes are dropped, ``.`` and empty parts are removed; a name that climbs out
with ``..``, holds a NUL, or is empty after that is skipped with the reason; names that are not
valid UTF-8 or hold control characters are escaped (:mod:`sleuth.ingest.names`).

And every archive is bounded, as bomb-aware readers are (Apache POI's ``ZipSecureFile``, Python's
own ``zipfile`` warnings): at most :data:`ARCHIVE_MAX_MEMBERS` members (the setting
``archive_max_members`` raises it, up to :data:`ARCHIVE_MAX_MEMBERS_CEILING`), at most
:data:`ARCHIVE_MAX_UNCOMPRESSED_BYTES` uncompressed bytes read from one archive, and at most
:data:`ARCHIVE_MAX_RATIO` uncompressed bytes per compressed byte past a grace of
:data:`ARCHIVE_RATIO_GRACE_BYTES`. A member over its limit is skipped with the reason; an archive
that goes over a limit as a whole stops there (:class:`ArchiveLimit`, with the reason), keeping the
members read before.
"""

from __future__ import annotations

import bz2
import datetime
import gzip
import io
import lzma
import os
import re
import stat
import struct
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from sleuth.doc_types import SkippedFile
from sleuth.ingest.confine import Roots, open_file
from sleuth.ingest.limits import ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_MEMBERS_CEILING
from sleuth.ingest.names import index_name, printable
from sleuth.ingest.pdf import PDF_MAX_BYTES
from sleuth.ingest.walk import ARCHIVE_SUFFIXES, FILE_MAX_BYTES, max_bytes_for

#: How the member limit is raised, said when an archive goes over it (before any ``:`` of the reason,
#: so that the skipped-file summaries, which group reasons by the text before it, keep it).
_RAISE_MEMBERS = ("raise archive_max_members in <index>/config.toml or $SLEUTH_ARCHIVE_MAX_MEMBERS, up to "
                  f"{ARCHIVE_MAX_MEMBERS_CEILING:,}")
ARCHIVE_MAX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024
"""At most this many uncompressed bytes are read from one archive (tar: the whole stream, skipped
members included; zip: the members read)."""
ARCHIVE_MAX_RATIO = 100
"""At most this many uncompressed bytes per compressed byte (zip: per member; tar: over the stream)."""
ARCHIVE_RATIO_GRACE_BYTES = 1024 * 1024
"""The ratio limit applies past this many uncompressed bytes (small, repetitive files compress well)."""

#: Longest archive member name, in characters (Linux's PATH_MAX); a longer one is skipped.
MEMBER_NAME_MAX_CHARS = 4096
#: Characters of an over-long member name shown in its skip reason.
MEMBER_NAME_SHOWN_CHARS = 200
TAR_PAX_HEADER_MAX_BYTES = 64 * 1024
"""At most this many bytes in one pax header of a tar (real ones hold a few names, times and
attributes); a longer one stops the archive."""
TAR_PAX_TOTAL_MAX_BYTES = 1024 * 1024
"""At most this many bytes of pax headers in one tar (global headers accumulate over the archive)."""
TAR_PAX_DIGIT_RUN_MAX = 64
"""A pax header holding a longer run of digits stops the archive: such runs make the pax parser of
Python's tarfile take quadratic time (CVE-2024-6232, fixed in Python 3.11.10 and 3.12.6), in the
indexing process itself, outside any per-file budget."""
_PAX_DIGIT_RUN = re.compile(rb"\d{%d}" % (TAR_PAX_DIGIT_RUN_MAX + 1))
TAR_EXTENDED_HEADERS_MAX = 8
"""At most this many extended headers (GNU long names and link names, pax headers) in a row before
one tar member; more stop the archive. Real archives have one or two (a pax header, or a GNU long
name and long link name; a global pax header before the first member); tarfile follows each one
recursively, so a long chain of them is a RecursionError in the indexing process."""

#: The largest single read a tar reader may ask of the stream: a member up to its size limit
#: (a read for a bigger header, e.g. a pax or GNU long-name record, is a bomb).
_TAR_READ_MAX_BYTES = max(FILE_MAX_BYTES, PDF_MAX_BYTES) + tarfile.BLOCKSIZE
#: A zip's central directory may hold at most this many bytes per member it is allowed.
_ZIP_DIRECTORY_ENTRY_MAX_BYTES = 1024
#: A compressed tar stream is read (and checked) this many bytes at a time.
_STREAM_CHUNK_BYTES = 1024 * 1024
_ZIP_EOCD = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_EOCD = struct.Struct("<4sQ2H2L4Q")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class ArchiveMember:
    """One regular file inside an archive: its path inside (normalised, index form), its bytes and
    its time (ns)."""

    name: str
    data: bytes
    mtime_ns: int


class ArchiveError(Exception):
    """The archive cannot be opened or read (corrupt, truncated, not really an archive)."""


class ArchiveLimit(ArchiveError):
    """The archive goes over one of the archive limits; the message is the skip reason."""


def _too_large(name: str, size_bytes: int) -> str | None:
    """The skip reason when member ``name`` of ``size_bytes`` bytes is over its limit, else None."""
    limit = max_bytes_for(name)
    return f"too large: {size_bytes} bytes > {limit} byte limit" if size_bytes > limit else None


def is_archive(name: str) -> bool:
    """True when ``name`` ends like an archive sleuth reads (``.tar.gz``, ``.zip``, ...)."""
    return name.lower().endswith(ARCHIVE_SUFFIXES)


def member_name(raw: str) -> tuple[str, str | None]:
    """``(name, None)``: the normalised index-form name of an archive member named ``raw``; or
    ``(shown, reason)`` when the member is skipped (``shown``: the raw name, escaped).

    Backslashes become ``/``; a drive letter (``C:``), leading slashes, ``.`` and empty parts are
    dropped. Skipped: a name over :data:`MEMBER_NAME_MAX_CHARS`, a NUL in the name, a ``..`` part,
    nothing left. Pure.
    """
    if len(raw) > MEMBER_NAME_MAX_CHARS:
        return index_name(raw[:MEMBER_NAME_SHOWN_CHARS]) + "...", (
            f"member name is {len(raw)} characters long; the limit is {MEMBER_NAME_MAX_CHARS}")
    shown = index_name(raw)
    if "\0" in raw:
        return shown, "member name holds a NUL character"
    name = _DRIVE.sub("", raw.replace("\\", "/"))
    parts = [part for part in name.split("/") if part not in ("", ".")]
    if ".." in parts:
        return shown, "member name climbs out of the archive with '..'"
    if not parts:
        return shown, "member has no name"
    return index_name("/".join(parts)), None


def _zip_directory(handle: BinaryIO) -> tuple[int, int] | None:
    """``(members, central directory bytes)`` from a zip's end records, None when not found
    (then :mod:`zipfile` reports the damage)."""
    size = handle.seek(0, os.SEEK_END)
    tail_start = max(0, size - (_ZIP_EOCD.size + 0xFFFF))
    handle.seek(tail_start)
    tail = handle.read()
    at = tail.rfind(b"PK\x05\x06")
    if at < 0 or len(tail) - at < _ZIP_EOCD.size:
        return None
    _sig, _disk, _cd_disk, _here, total, cd_bytes, _cd_offset, _comment = _ZIP_EOCD.unpack_from(tail, at)
    locator_at = at - _ZIP64_LOCATOR.size
    if (total == 0xFFFF or cd_bytes == 0xFFFFFFFF) and locator_at >= 0 and tail[locator_at:].startswith(b"PK\x06\x07"):
        _sig, _disk, eocd64_offset, _disks = _ZIP64_LOCATOR.unpack_from(tail, locator_at)
        handle.seek(eocd64_offset)
        record = handle.read(_ZIP64_EOCD.size)
        if len(record) == _ZIP64_EOCD.size and record.startswith(b"PK\x06\x06"):
            fields = _ZIP64_EOCD.unpack(record)
            total, cd_bytes = fields[7], fields[8]
    handle.seek(0)
    return total, cd_bytes


def _ratio_reason(uncompressed: int, compressed: int) -> str | None:
    if uncompressed > ARCHIVE_RATIO_GRACE_BYTES and uncompressed > ARCHIVE_MAX_RATIO * max(compressed, 1):
        return (f"compression ratio over the {ARCHIVE_MAX_RATIO}:1 limit ({uncompressed} bytes from"
                f" {compressed} compressed bytes)")
    return None


def _total_reason(total: int) -> str:
    return (f"archive holds more than the {ARCHIVE_MAX_UNCOMPRESSED_BYTES} byte limit of uncompressed data"
            f" (read {total} bytes); the rest was not read")


def _members_reason(max_members: int) -> str:
    # "partly indexed" first: the archive's first members are searchable, though it is listed with
    # the skipped files (a new user read "skipped" as "nothing of it indexed")
    return (f"archive partly indexed, its first {max_members:,} members only (it holds more than the {max_members:,}"
            f" member limit; the others were not read, not counted); {_RAISE_MEMBERS}")


class _Names:
    """Member names already given out (a name met twice keeps its first member)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def check(self, raw: str) -> tuple[str, str | None]:
        name, reason = member_name(raw)
        if reason is None and name in self.seen:
            return name, "another member of the archive has the same name (the first one is indexed)"
        self.seen.add(name)
        return name, reason


def _iter_zip(handle: BinaryIO, max_members: int) -> Iterator[ArchiveMember | SkippedFile]:
    directory = _zip_directory(handle)
    if directory is not None and (directory[0] > max_members
                                  or directory[1] > max_members * _ZIP_DIRECTORY_ENTRY_MAX_BYTES):
        raise ArchiveLimit(f"archive holds more than the {max_members:,} member limit, not read; {_RAISE_MEMBERS}:"
                           f" {directory[0]:,} members, a {directory[1]:,} byte directory")
    names, total = _Names(), 0
    with zipfile.ZipFile(handle) as zf:
        infos = zf.infolist()
        if len(infos) > max_members:
            raise ArchiveLimit(f"archive holds more than the {max_members:,} member limit, not read; {_RAISE_MEMBERS}:"
                               f" {len(infos):,} members")
        for info in infos:
            # orig_filename: the name as stored (zipfile cuts filename at a NUL, which hides it, and
            # is_dir() reads the cut name: "docs/\0x.md" would pass for a folder, dropped unreported);
            # a folder is an empty entry whose name ends with "/" and holds no NUL ("x.md\0/" did)
            folder = info.orig_filename.endswith("/") and "\0" not in info.orig_filename
            if folder and info.file_size == 0:
                continue
            name, reason = names.check(info.orig_filename)
            if folder and reason is None:
                reason = f"a folder entry holding {info.file_size} bytes"
            if reason is None and stat.S_ISLNK(info.external_attr >> 16):
                reason = SYMLINK_MEMBER
            reason = reason or _too_large(name, info.file_size) or _ratio_reason(info.file_size, info.compress_size)
            if reason is not None:
                yield SkippedFile(name, reason)
                continue
            if total + info.file_size > ARCHIVE_MAX_UNCOMPRESSED_BYTES:
                raise ArchiveLimit(_total_reason(total + info.file_size))
            limit = max_bytes_for(name)
            try:
                with zf.open(info) as member:
                    data = member.read(limit + 1)  # never more, whatever the header says
            except RuntimeError:  # what zipfile raises for an encrypted member
                yield SkippedFile(name, "cannot read member: encrypted (a password is needed)")
                continue
            except (NotImplementedError, zipfile.BadZipFile, zlib.error, EOFError) as exc:
                yield SkippedFile(name, printable(f"cannot read member: {exc}"))  # e.g. an unknown compression
                continue
            total += len(data)
            if len(data) > limit:
                yield SkippedFile(name, f"too large: more than {limit} bytes > {limit} byte limit")
                continue
            y, mo, d, h, mi, s = info.date_time
            ts = datetime.datetime(y, mo, d, h, mi, s, tzinfo=datetime.UTC).timestamp()
            yield ArchiveMember(name, data, int(ts * 1e9))


class _BoundedStream(io.RawIOBase):
    """A read-only view of a (decompressed) tar stream that refuses to go past the archive limits:
    the total (:data:`ARCHIVE_MAX_UNCOMPRESSED_BYTES`, checked before a read), the ratio to the
    compressed bytes taken from ``raw`` (checked after each chunk, so a bomb stops within a chunk)
    and the largest single read (``_TAR_READ_MAX_BYTES``). Skipping forward reads and drops."""

    def __init__(self, stream: BinaryIO, raw: BinaryIO) -> None:
        super().__init__()
        self.stream, self.raw, self.pos = stream, raw, 0
        self.compressed = stream is not raw
        self.last = b""  # what the last read returned (after tarfile's last member: the header it stopped at)

    def _check_total(self, end: int) -> None:
        if end > ARCHIVE_MAX_UNCOMPRESSED_BYTES:
            raise ArchiveLimit(_total_reason(end))

    def _advance(self, size: int, keep: bool) -> bytes:
        chunks: list[bytes] = []
        while size > 0:
            chunk = self.stream.read(min(_STREAM_CHUNK_BYTES, size))
            if not chunk:
                break
            self.pos += len(chunk)
            size -= len(chunk)
            reason = _ratio_reason(self.pos, self.raw.tell())
            if reason is not None:
                raise ArchiveLimit(f"{reason}; the rest was not read")
            if keep:
                chunks.append(chunk)
        return b"".join(chunks)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0 or size > _TAR_READ_MAX_BYTES:
            asked = "all the" if size is None or size < 0 else f"{size}"
            raise ArchiveLimit(f"archive asks for a read of {asked} bytes, more than any member may hold;"
                               " the rest was not read")
        self._check_total(self.pos + size)
        if not self.compressed:
            data = self.stream.read(size)
            self.pos += len(data)
        else:
            data = self._advance(size, keep=True)
        self.last = data
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        if whence == os.SEEK_CUR:
            offset += self.pos
        elif whence != os.SEEK_SET:
            raise io.UnsupportedOperation("seek from the end")
        self._check_total(offset)
        if not self.compressed or offset < self.pos:
            self.pos = self.stream.seek(offset)
        else:
            self._advance(offset - self.pos, keep=False)
        return self.pos


def _decompressed(raw: BinaryIO) -> BinaryIO:
    """``raw`` decompressed by the format its first bytes name (gzip, bzip2, xz), or ``raw``."""
    magic = raw.read(6)
    raw.seek(0)
    if magic.startswith(b"\x1f\x8b"):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if magic.startswith(b"BZh"):
        return bz2.BZ2File(raw)  # type: ignore[return-value]
    if magic.startswith(b"\xfd7zXZ\x00"):
        return lzma.LZMAFile(raw)  # type: ignore[return-value]
    return raw


class _Replay:
    """A tar's stream that answers the next read with bytes already read (a pax header, checked by
    :class:`_BoundedTarInfo` before tarfile parses it), then reads on from the stream."""

    def __init__(self, data: bytes, stream: Any) -> None:
        self.data, self.stream = data, stream

    def read(self, size: int = -1) -> bytes:
        if self.data:
            data, self.data = self.data, b""
            return data
        return self.stream.read(size)

    def tell(self) -> int:
        return self.stream.tell() - len(self.data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class _BoundedTarInfo(tarfile.TarInfo):
    """tarfile's member header, with its pax headers checked against the limits above before
    tarfile parses them (:data:`TAR_PAX_HEADER_MAX_BYTES`, :data:`TAR_PAX_TOTAL_MAX_BYTES`,
    :data:`TAR_PAX_DIGIT_RUN_MAX`), and at most :data:`TAR_EXTENDED_HEADERS_MAX` extended headers
    before one member."""

    def _proc_member(self, tar: Any) -> Any:
        if self.type not in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE,
                             tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
            return super()._proc_member(tar)  # type: ignore[misc]
        # an extended header: tarfile reads the member it belongs to from inside this call
        depth = getattr(tar, "sleuth_extended_depth", 0) + 1
        if depth > TAR_EXTENDED_HEADERS_MAX:
            raise ArchiveLimit(f"more than {TAR_EXTENDED_HEADERS_MAX} extended headers (GNU long names, pax headers)"
                               " in a row before one member; the rest was not read")
        tar.sleuth_extended_depth = depth
        try:
            return super()._proc_member(tar)  # type: ignore[misc]
        finally:
            tar.sleuth_extended_depth = depth - 1

    def _proc_builtin(self, tar: Any) -> Any:
        member = super()._proc_builtin(tar)  # type: ignore[misc]
        if member.isdir() and member.size > 0:
            # a folder holding bytes (e.g. an old-style regular member named "x.md/"): tarfile would read
            # its bytes as the next header and end the archive there; they are passed over, the entry reported
            tar.offset = member.offset_data + self._block(member.size)  # pyright: ignore[reportAttributeAccessIssue] -- TarInfo._block
        return member

    def _proc_sparse(self, tar: Any) -> Any:
        # An old GNU sparse member: tarfile keeps every entry of its map, and the map's extension
        # blocks may run on for the whole archive (100 MB of them: 867 MB in memory). sleuth does not
        # read sparse files (their holes are no text), so the blocks are passed over, not kept.
        _structs, extended, real_size = self._sparse_structs  # pyright: ignore[reportAttributeAccessIssue] -- set by frombuf
        del self._sparse_structs  # pyright: ignore[reportAttributeAccessIssue]
        while extended:
            block = tar.fileobj.read(tarfile.BLOCKSIZE)
            if len(block) < tarfile.BLOCKSIZE:
                raise tarfile.ReadError("unexpected end of data in a sparse member's map")
            extended = bool(block[504])
        self.sparse = []  # pyright: ignore[reportAttributeAccessIssue] -- typeshed says bytes; tarfile keeps a list (here: not read)
        self.offset_data = tar.fileobj.tell()
        tar.offset = self.offset_data + self._block(self.size)  # pyright: ignore[reportAttributeAccessIssue] -- TarInfo._block
        self.size = real_size
        return self

    def _proc_gnusparse_10(self, next: Any, pax_headers: Any, tar: Any) -> None:
        # A pax (GNU 1.0) sparse member's map is the first part of its data, as long as it says: not read.
        next.sparse = []

    def _proc_gnulong(self, tar: Any) -> Any:
        # A GNU long name or link name: read whole by tarfile, so bounded like a pax header.
        if self.size > MEMBER_NAME_MAX_CHARS * 4:
            raise ArchiveLimit(f"a GNU long name of {self.size} bytes, over the {MEMBER_NAME_MAX_CHARS * 4} byte "
                               "limit; the rest was not read")
        stream = tar.fileobj
        data = stream.read(self._block(self.size))  # pyright: ignore[reportAttributeAccessIssue] -- TarInfo._block
        tar.fileobj = _Replay(data, stream)
        try:
            member = super()._proc_gnulong(tar)  # type: ignore[misc]
        finally:
            tar.fileobj = stream
        if self.type != tarfile.GNUTYPE_LONGNAME:
            return member
        # Two long names before one member: tarfile names it by the first, GNU tar by the last. The
        # last one is kept (checked as any name) and the member reported, as tools disagree on its name.
        last = getattr(member, "sleuth_long_name", None)  # set by a long name nearer the member
        if last is not None:
            member.name, member.sleuth_reason = last, _LONG_NAMES_REASON
            return member
        # tarfile cuts the name at its first NUL ("secret\0.md" read as "secret"): the member keeps
        # the name as stored (its NULs of padding aside), which member_name skips with the reason
        stored = data[: self.size].rstrip(b"\0")
        if b"\0" in stored:
            member.name = stored.decode(tar.encoding, tar.errors)
        member.sleuth_long_name = member.name
        return member

    def _proc_pax(self, tar: Any) -> Any:
        if self.size > TAR_PAX_HEADER_MAX_BYTES:
            raise ArchiveLimit(f"a pax header of {self.size} bytes, over the {TAR_PAX_HEADER_MAX_BYTES} byte limit;"
                               " the rest was not read")
        total = getattr(tar, "sleuth_pax_bytes", 0) + self.size
        if total > TAR_PAX_TOTAL_MAX_BYTES:
            raise ArchiveLimit(f"pax headers of more than {TAR_PAX_TOTAL_MAX_BYTES} bytes in all;"
                               " the rest was not read")
        tar.sleuth_pax_bytes = total
        stream = tar.fileobj
        data = stream.read(self._block(self.size))  # pyright: ignore[reportAttributeAccessIssue] -- TarInfo._block
        if _PAX_DIGIT_RUN.search(data, 0, self.size):
            raise ArchiveLimit(f"a pax header holding a run of more than {TAR_PAX_DIGIT_RUN_MAX} digits"
                               " (malformed; slow to parse); the rest was not read")
        tar.fileobj = _Replay(data, stream)
        try:
            return super()._proc_pax(tar)  # type: ignore[misc]
        finally:
            tar.fileobj = stream


#: Why a sparse file in a tar is not indexed (its map is not read: a map may be made to fill memory).
SPARSE_MEMBER = "a sparse file inside the archive (not read)"
#: Why a tar member with more than one GNU long name is skipped.
_LONG_NAMES_REASON = "more than one GNU long name for one member (tar tools disagree on which one is its name)"
#: Why an archive member that is a symbolic link is not indexed (its target is a name, maybe outside the archive).
SYMLINK_MEMBER = "a symbolic link inside the archive (not followed)"


def _not_regular(member: tarfile.TarInfo) -> str | None:
    """Why a tar member that is not a regular file is skipped (None: it is one)."""
    if member.issparse():
        return SPARSE_MEMBER
    if member.isfile():
        return None
    if member.issym():
        return SYMLINK_MEMBER
    if member.islnk():
        return "a hard link to another member of the archive (indexed under that member's name)"
    return "not a regular file (a device, FIFO or other special member)"


def _end_reason(stream: _BoundedStream, count: int) -> str | None:
    """Why the place where tarfile stopped reading, after ``count`` members, is not the archive's
    end (None: it is). tarfile takes a header it cannot read (a wrong checksum, a member's bytes
    read as a header) for the end, silently; the end is an empty block followed by nothing but
    empty blocks (or the data ending at a header)."""
    block = stream.last  # the header tarfile stopped at
    if not block:
        return None
    if len(block) < tarfile.BLOCKSIZE or block.count(0) != len(block):
        return f"a header after member {count} could not be read; the rest of the archive was not read"
    while stream.pos < ARCHIVE_MAX_UNCOMPRESSED_BYTES:
        chunk = stream.read(min(_STREAM_CHUNK_BYTES, ARCHIVE_MAX_UNCOMPRESSED_BYTES - stream.pos))
        if not chunk:
            return None
        if chunk.count(0) != len(chunk):
            return f"data after the end-of-archive marker (after member {count}) was not read"
    return None


def _iter_tar(handle: BinaryIO, max_members: int) -> Iterator[ArchiveMember | SkippedFile]:
    stream = _BoundedStream(_decompressed(handle), handle)
    names, count = _Names(), 0
    with tarfile.open(fileobj=stream, mode="r:", tarinfo=_BoundedTarInfo) as tar:  # type: ignore[call-overload]
        while True:
            member = tar.next()
            if member is None:
                reason = _end_reason(stream, count)
                if reason is not None:
                    raise ArchiveError(reason)
                return
            count += 1
            if count > max_members:
                raise ArchiveLimit(_members_reason(max_members))
            tar.members.clear()  # pyright: ignore[reportAttributeAccessIssue] -- tarfile keeps every member it met; nothing here needs them again
            if member.isdir():
                if member.size > 0:
                    name, reason = names.check(member.name)
                    yield SkippedFile(name, reason or f"a folder entry holding {member.size} bytes")
                continue
            if member.isfile() and member.name.endswith("/"):  # a folder to GNU tar (e.g. a long name "x.md/")
                if member.size == 0:
                    continue
                name, reason = names.check(member.name)
                yield SkippedFile(name, reason or getattr(member, "sleuth_reason", None)
                                  or f"a folder entry holding {member.size} bytes")
                continue
            name, reason = names.check(member.name)
            reason = (reason or getattr(member, "sleuth_reason", None) or _not_regular(member)
                      or _too_large(name, member.size))
            if reason is not None:
                yield SkippedFile(name, reason)
                continue
            source = tar.extractfile(member)
            if source is not None:
                yield ArchiveMember(name, source.read(member.size), int(member.mtime * 1e9))


def iter_archive(path: Path, identity: tuple[int, int] | None = None, roots: Roots | None = None,
                 max_members: int = ARCHIVE_MAX_MEMBERS) -> Iterator[ArchiveMember | SkippedFile]:
    """The regular files of a tar (optionally gzip, bzip2 or xz compressed) or zip archive, in
    archive order, with normalised names (:func:`member_name`).

    The archive is opened as :func:`sleuth.ingest.confine.open_file` opens files (``identity``,
    ``roots``: see there). Folders are passed over (a folder entry holding bytes comes out as
    SkippedFile, as does a sparse file of a tar). Members larger than ``FILE_MAX_BYTES`` (PDFs:
    ``PDF_MAX_BYTES``), with a name that is skipped, with a name met before, or (zip) compressed
    more than :data:`ARCHIVE_MAX_RATIO` to 1 come out as SkippedFile with the reason.
    ``max_members``: the member limit (members: files, folders, links; see
    :data:`ARCHIVE_MAX_MEMBERS`).

    Raises:
        ArchiveLimit: the archive goes over a limit of the module docstring (after yielding what
            came before); the message is the reason.
        ArchiveError: the file is not a readable archive (any error while reading it, e.g. a
            RecursionError inside tarfile, comes out as this; the message is the reason); or, for a
            tar, after yielding the members before, a header that cannot be read before the
            archive's end, or data after its end-of-archive marker.
    """
    try:
        fd = open_file(path, identity, roots)
    except OSError as exc:
        raise ArchiveError(f"cannot read archive: {exc.strerror or exc}") from exc
    with os.fdopen(fd, "rb") as handle:
        try:
            if path.name.lower().endswith(".zip"):
                yield from _iter_zip(handle, max_members)
            else:
                yield from _iter_tar(handle, max_members)
        except ArchiveError:  # ArchiveLimit too
            raise
        except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, ValueError, lzma.LZMAError,
                NotImplementedError) as exc:
            raise ArchiveError(printable(f"cannot read archive: {exc}")) from exc
        except Exception as exc:  # e.g. a RecursionError deep in tarfile: this archive's failure, not the run's
            raise ArchiveError(printable(f"cannot read archive: {type(exc).__name__}: {exc}")) from exc
