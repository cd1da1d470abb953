"""Archives are hostile until checked: member names normalised or skipped with the reason, and
member count, uncompressed bytes and compression ratio bounded (real zip and tar files, built here)."""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from sleuth.ingest import archive as archive_module
from sleuth.ingest.archive import (
    ARCHIVE_MAX_MEMBERS,
    ArchiveError,
    ArchiveLimit,
    ArchiveMember,
    iter_archive,
    member_name,
)
from sleuth.types import SkippedFile


class Zeros(io.RawIOBase):
    """``n`` zero bytes, streamed (a member of any size without holding it in memory)."""

    def __init__(self, n: int) -> None:
        self.n = n

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        k = min(len(buffer), self.n)
        buffer[:k] = b"\0" * k
        self.n -= k
        return k


def add(tf: tarfile.TarFile, name: str, data: bytes | int) -> None:
    info = tarfile.TarInfo(name)
    if isinstance(data, int):
        info.size = data
        tf.addfile(info, io.BufferedReader(Zeros(data)))
    else:
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))


def members(path: Path) -> list[tuple[str, str]]:
    """``(name, "ok" | reason)`` of every member."""
    return [(m.name, "ok") if isinstance(m, ArchiveMember) else (m.path, m.reason) for m in iter_archive(path)]


@pytest.mark.parametrize(("raw", "expected"), [
    ("docs/a.md", ("docs/a.md", None)),
    ("./docs//a.md", ("docs/a.md", None)),
    ("/etc/passwd.md", ("etc/passwd.md", None)),
    ("C:\\Users\\me\\notes.md", ("Users/me/notes.md", None)),
    ("c:/x.md", ("x.md", None)),
    ("docs\\sub\\b.md", ("docs/sub/b.md", None)),
    ("../../etc/evil.md", ("../../etc/evil.md", "member name climbs out of the archive with '..'")),
    ("docs/../../evil.md", ("docs/../../evil.md", "member name climbs out of the archive with '..'")),
    ("..\\evil.md", ("..\\\\evil.md", "member name climbs out of the archive with '..'")),
    ("a\0b.md", ("a\\x00b.md", "member name holds a NUL character")),
    ("/", ("/", "member has no name")),
    (os.fsdecode(b"caf\xe9.md"), ("caf\\xe9.md", None)),
    ("esc\x1b[2J.md", ("esc\\x1b[2J.md", None)),
])
def test_member_names(raw: str, expected: tuple[str, str | None]) -> None:
    assert member_name(raw) == expected


def test_hostile_names_in_a_zip(tmp_path: Path) -> None:
    path = tmp_path / "names.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for name in ("../evil.md", "/abs/x.md", "C:\\win\\y.md", "ok.md", "./ok.md", "dir\\z.md"):
            zf.writestr(name, f"# {name}\n")
    assert members(path) == [
        ("../evil.md", "member name climbs out of the archive with '..'"),
        ("abs/x.md", "ok"),
        ("win/y.md", "ok"),
        ("ok.md", "ok"),
        ("ok.md", "another member of the archive has the same name (the first one is indexed)"),
        ("dir/z.md", "ok"),
    ]


def test_hostile_names_in_a_tar(tmp_path: Path) -> None:
    path = tmp_path / "names.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        for name in ("../../x.md", "/etc/y.md", "ok.md"):
            add(tf, name, b"# x\n")
    assert members(path) == [("../../x.md", "member name climbs out of the archive with '..'"),
                             ("etc/y.md", "ok"), ("ok.md", "ok")]


def test_a_zip_bomb_member_is_skipped_by_its_ratio(tmp_path: Path) -> None:
    path = tmp_path / "bomb.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("bomb.md", b"# x\n" + b" " * (4 * 1024 * 1024))  # 4 MiB of spaces: about 1000 to 1
        zf.writestr("small-but-repetitive.md", b"ab" * 200_000)  # under the grace: read
        zf.writestr("after.md", b"# after\n")
    ((name, reason), second, third) = members(path)
    assert name == "bomb.md" and reason.startswith("compression ratio over the 100:1 limit (4194308 bytes from ")
    assert second == ("small-but-repetitive.md", "ok") and third == ("after.md", "ok")


def test_a_zip_with_too_many_members_is_not_read(tmp_path: Path) -> None:
    path = tmp_path / "many.zip"
    with zipfile.ZipFile(path, "w") as zf:
        for i in range(ARCHIVE_MAX_MEMBERS + 1):
            zf.writestr(f"{i}.md", b"x")
    with pytest.raises(ArchiveLimit, match="more than the 10,000 member limit, not read; raise archive_max_members in "
                                           r"<index>/config.toml or \$SLEUTH_ARCHIVE_MAX_MEMBERS, up to 100,000: "
                                           "10,001 members, a 528,944 byte directory$"):
        list(iter_archive(path))


def test_a_tar_with_too_many_members_stops_there(tmp_path: Path) -> None:
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tf:
        for i in range(ARCHIVE_MAX_MEMBERS + 5):
            add(tf, f"{i}.md", b"x")
    read: list[str] = []
    with pytest.raises(ArchiveLimit, match="partly indexed, its first 10,000 members only .it holds more than the"
                                           " 10,000 member limit; the others were not read, not counted.; raise"
                                           " archive_max_members in"):
        for m in iter_archive(path):
            read.append(m.name)  # type: ignore[union-attr]
    assert len(read) == ARCHIVE_MAX_MEMBERS


@pytest.mark.parametrize("mode", ["w:gz", "w:bz2", "w:xz"])
def test_a_compressed_tar_bomb_stops_within_a_chunk(tmp_path: Path, mode: str) -> None:
    path = tmp_path / f"bomb.tar.{mode[2:]}"
    with tarfile.open(path, mode) as tf:
        add(tf, "zeros.bin", 20_000_000)  # skipped as too large, but skipping it means inflating it
        add(tf, "after.md", b"# after\n")
    got: list[tuple[str, str]] = []
    with pytest.raises(ArchiveLimit, match=r"compression ratio over the 100:1 limit \(1049088 bytes from"):
        for m in iter_archive(path):
            got.append((m.path, m.reason) if isinstance(m, SkippedFile) else (m.name, "ok"))
    assert got == [("zeros.bin", "too large: 20000000 bytes > 5242880 byte limit")]


def test_the_total_of_uncompressed_bytes_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive_module, "ARCHIVE_MAX_UNCOMPRESSED_BYTES", 50_000)
    path = tmp_path / "plain.tar"  # not compressed: no ratio, only the total
    with tarfile.open(path, "w") as tf:
        for i in range(10):
            add(tf, f"{i}.md", b"word " * 2_000)
    with pytest.raises(ArchiveLimit, match="more than the 50000 byte limit of uncompressed data"):
        names = [m.name for m in iter_archive(path)]  # type: ignore[union-attr]
    zpath = tmp_path / "plain.zip"
    with zipfile.ZipFile(zpath, "w") as zf:
        for i in range(10):
            zf.writestr(f"{i}.md", b"word " * 2_000)
    names = []
    with pytest.raises(ArchiveLimit, match="more than the 50000 byte limit"):
        for m in iter_archive(zpath):
            names.append(m.name)  # type: ignore[union-attr]
    assert names == ["0.md", "1.md", "2.md", "3.md", "4.md"]


def test_a_pax_header_bomb_is_refused(tmp_path: Path) -> None:
    """A pax header claiming 100 MB would make tarfile read it whole into memory: refused before a read."""
    path = tmp_path / "pax.tar.gz"
    header = tarfile.TarInfo("././@PaxHeader")
    header.type = tarfile.XHDTYPE
    header.size = 100_000_000
    with tarfile.open(path, "w:gz") as tf:
        tf.addfile(header, io.BufferedReader(Zeros(header.size)))
    with pytest.raises(ArchiveLimit, match="a pax header of 100000000 bytes, over the 65536 byte limit"):
        list(iter_archive(path))


def test_an_encrypted_zip_member_is_skipped_and_a_corrupt_archive_reported(tmp_path: Path) -> None:
    path = tmp_path / "enc.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("a.md", b"# a\n")
        zf.writestr("b.md", b"# b\n")
    data = bytearray(path.read_bytes())
    # set the "encrypted" flag of the first member in its local and central headers
    for signature in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.index(signature)
        flag_at = at + (6 if signature == b"PK\x03\x04" else 8)
        data[flag_at] |= 0x1
    path.write_bytes(bytes(data))
    assert members(path) == [("a.md", "cannot read member: encrypted (a password is needed)"), ("b.md", "ok")]
    (tmp_path / "junk.zip").write_bytes(b"not a zip")
    with pytest.raises(ArchiveError, match="cannot read archive"):
        list(iter_archive(tmp_path / "junk.zip"))


def test_an_archive_reached_through_a_symlink_is_not_opened(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "real.zip", "w") as zf:
        zf.writestr("a.md", b"# a\n")
    (tmp_path / "link.zip").symlink_to(tmp_path / "real.zip")
    with pytest.raises(ArchiveError, match="symlink"):
        list(iter_archive(tmp_path / "link.zip"))


def test_pax_headers_of_real_archives_are_read(tmp_path: Path) -> None:
    """A POSIX (pax) tar with long names, a global header and extended attributes reads as before
    the pax checks (they stop only headers over their limits)."""
    import tarfile

    path = tmp_path / "pax.tar"
    long_dir = "a-folder-name-well-past-the-hundred-characters-of-a-ustar-header/" * 3
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT, pax_headers={"comment": "made by the test"}) as tar:
        for i in range(3):
            data = f"# Page {i}\n\nText {i}.\n".encode()
            info = tarfile.TarInfo(f"{long_dir}page-{i}.md")
            info.size, info.mtime = len(data), 1_700_000_000.5
            info.pax_headers = {"SCHILY.xattr.user.note": "x" * 2000}
            tar.addfile(info, io.BytesIO(data))
    members = list(iter_archive(path))
    assert [m.name for m in members] == [f"{long_dir}page-{i}.md" for i in range(3)]  # type: ignore[union-attr]


def test_a_zip_member_name_holding_a_nul_is_skipped_not_cut(tmp_path: Path) -> None:
    """zipfile cuts a member's name at a NUL (``x.md\\0../../etc/passwd`` would read as ``x.md``):
    the name as stored is judged, and skipped with the reason."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("x.mdQ../../etc/passwd", "# Hidden\n")
        zf.writestr("ok.md", "# Ok\n")
    path = tmp_path / "nul.zip"
    path.write_bytes(buf.getvalue().replace(b"x.mdQ", b"x.md\0"))
    items = list(iter_archive(path))
    assert [m.name for m in items if not isinstance(m, SkippedFile)] == ["ok.md"]
    (skipped,) = [m for m in items if isinstance(m, SkippedFile)]
    assert skipped.path == "x.md\\x00../../etc/passwd" and "NUL" in skipped.reason


def test_a_zip_member_whose_name_is_a_folder_up_to_a_nul_is_skipped_and_reported(tmp_path: Path) -> None:
    """``docs/\\0secret.md`` cut at its NUL reads as the folder ``docs/`` (zipfile's is_dir()): it
    was dropped without a word (attack session 26); the name as stored is judged, so it is
    reported. A real folder member is still passed over silently."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("docs/", "")
        zf.writestr("docs/Qsecret.md", "# Hidden\n")
        zf.writestr("docs/ok.md", "# Ok\n")
    path = tmp_path / "nul-folder.zip"
    raw = buf.getvalue()
    assert raw.count(b"docs/Qsecret.md") == 2  # its local header and its central directory entry
    path.write_bytes(raw.replace(b"docs/Qsecret.md", b"docs/\0secret.md"))
    assert [(m.path, m.reason) if isinstance(m, SkippedFile) else m.name for m in iter_archive(path)] == [
        ("docs/\\x00secret.md", "member name holds a NUL character"), "docs/ok.md"]


def test_a_zip_folder_entry_with_a_nul_or_holding_bytes_is_reported(tmp_path: Path) -> None:
    """``secret.md\\0/`` ends with ``/`` as stored, so it passed for a folder and was dropped
    without a word, as was a folder entry holding bytes (attack session 26b): both are reported.
    An empty folder entry is still passed over silently."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("docs/", "")
        zf.writestr("secret.mdQ/", "# Hidden\n")
        zf.writestr(zipfile.ZipInfo("notes/"), "# Also hidden\n")
        zf.writestr("docs/ok.md", "# Ok\n")
    path = tmp_path / "nul-slash.zip"
    raw = buf.getvalue()
    assert raw.count(b"secret.mdQ/") == 2
    path.write_bytes(raw.replace(b"secret.mdQ/", b"secret.md\0/"))
    assert [(m.path, m.reason) if isinstance(m, SkippedFile) else m.name for m in iter_archive(path)] == [
        ("secret.md\\x00/", "member name holds a NUL character"),
        ("notes", "a folder entry holding 14 bytes"), "docs/ok.md"]


def test_a_zip_member_with_a_nul_in_its_local_header_name_only_is_skipped(tmp_path: Path) -> None:
    """The central directory says ``x.md``, the member's own header ``x.md\\0../x``: the member is
    not read under the directory's name but skipped with zipfile's reason."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("xQmd", "# Hidden\n")
        zf.writestr("ok.md", "# Ok\n")
    raw = buf.getvalue()
    local = raw.index(b"xQmd")  # the local header comes first, the central directory entry last
    path = tmp_path / "nul-header.zip"
    path.write_bytes(raw[:local] + b"x\0md" + raw[local + 4:])
    items = list(iter_archive(path))
    assert [m.name for m in items if not isinstance(m, SkippedFile)] == ["ok.md"]
    (skipped,) = [m for m in items if isinstance(m, SkippedFile)]
    assert skipped.path == "xQmd"
    assert skipped.reason == "cannot read member: File name in directory 'xQmd' and header b'x\\x00md' differ."


def test_links_and_special_members_are_skipped_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "links.tar"
    with tarfile.open(path, "w") as tf:
        add(tf, "real.md", b"# real\n")
        for name, kind in (("sym.md", tarfile.SYMTYPE), ("hard.md", tarfile.LNKTYPE), ("fifo.md", tarfile.FIFOTYPE),
                           ("dev.md", tarfile.CHRTYPE)):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, "/etc/passwd" if kind == tarfile.SYMTYPE else "real.md"
            tf.addfile(info)
    assert members(path) == [
        ("real.md", "ok"),
        ("sym.md", "a symbolic link inside the archive (not followed)"),
        ("hard.md", "a hard link to another member of the archive (indexed under that member's name)"),
        ("fifo.md", "not a regular file (a device, FIFO or other special member)"),
        ("dev.md", "not a regular file (a device, FIFO or other special member)"),
    ]
    zipped = tmp_path / "links.zip"
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("real.md", "# real\n")
        link = zipfile.ZipInfo("sym.md")
        link.external_attr = (0o120777 << 16)  # what `zip --symlinks` stores: the mode of a symbolic link
        zf.writestr(link, "/etc/passwd")
    assert members(zipped) == [("real.md", "ok"), ("sym.md", "a symbolic link inside the archive (not followed)")]


def test_over_long_member_names_are_skipped_and_gnu_long_names_bounded(tmp_path: Path) -> None:
    path = tmp_path / "long.tar"
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tf:
        add(tf, "d/" + "n" * 5_000 + ".md", b"# long\n")
        add(tf, "ok.md", b"# ok\n")
    assert members(path) == [("d/" + "n" * 198 + "...", "member name is 5005 characters long; the limit is 4096"),
                             ("ok.md", "ok")]
    huge = tmp_path / "huge.tar"
    with tarfile.open(huge, "w", format=tarfile.GNU_FORMAT) as tf:
        add(tf, "n" * 100_000 + ".md", b"# huge\n")
    with pytest.raises(ArchiveLimit, match="a GNU long name of 100004 bytes, over the 16384 byte limit"):
        members(huge)


def test_a_tar_member_whose_gnu_long_name_holds_a_nul_is_skipped_not_cut(tmp_path: Path) -> None:
    """tarfile cuts a GNU long name (the ``././@LongLink`` entry before the member) at its first
    NUL: ``.../secret\\0.md`` was read as ``.../secret`` and ``.../\\0secret.md`` as ``...``, each
    indexed under a name that is not the stored one. The name as stored is judged, so both are
    skipped with the reason; a long name without a NUL and a pax name holding one read as before."""
    folder = "docs/" + "a" * 120
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for name in (f"{folder}/secretQ.md", f"{folder}/Qhidden.md", f"{folder}/long-ok.md", "ok.md"):
            add(tf, name, b"# Page\n")
    raw = buf.getvalue()
    assert raw.count(b"secretQ.md") == 1 and raw.count(b"/Qhidden.md") == 1  # in the long-name entries only
    path = tmp_path / "nul-long.tar"
    path.write_bytes(raw.replace(b"secretQ.md", b"secret\0.md").replace(b"/Qhidden.md", b"/\0hidden.md"))
    assert members(path) == [
        (f"{folder}/secret\\x00.md", "member name holds a NUL character"),
        (f"{folder}/\\x00hidden.md", "member name holds a NUL character"),
        (f"{folder}/long-ok.md", "ok"),
        ("ok.md", "ok"),
    ]
    pax = tmp_path / "nul-pax.tar"
    with tarfile.open(pax, "w", format=tarfile.PAX_FORMAT) as tf:
        info = tarfile.TarInfo("x.md")
        info.pax_headers = {"path": "secret\0.md"}
        info.size = 3
        tf.addfile(info, io.BytesIO(b"# x"))
        add(tf, "ok.md", b"# ok\n")
    assert members(pax) == [("secret\\x00.md", "member name holds a NUL character"), ("ok.md", "ok")]


# Hand-built tar headers (ustar with the GNU magic), for archives tarfile itself would not write.
BLOCK = tarfile.BLOCKSIZE
END = b"\0" * (2 * BLOCK)


def header(name: bytes, size: int, kind: bytes = b"0", checksum: bytes | None = None) -> bytes:
    """One 512-byte tar header for a member ``name`` of ``size`` bytes and type ``kind``."""
    block = bytearray(BLOCK)
    for offset, value in ((0, name[:100]), (100, b"0000644\0"), (108, b"0000000\0"), (116, b"0000000\0"),
                          (124, b"%011o\0" % size), (136, b"%011o\0" % 1_700_000_000), (148, b" " * 8),
                          (156, kind), (257, b"ustar  \0")):
        block[offset:offset + len(value)] = value
    block[148:156] = checksum if checksum is not None else b"%06o\0 " % sum(block)
    return bytes(block)


def padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % BLOCK)


def entry(name: bytes, data: bytes, kind: bytes = b"0") -> bytes:
    """A member: its header and its data, padded to whole blocks."""
    return header(name, len(data), kind) + padded(data)


def long_name(name: bytes) -> bytes:
    """A GNU long name (the ``././@LongLink`` entry) for the member after it."""
    return entry(b"././@LongLink", name, b"L")


def pax_header(kind: bytes = b"x", **records: str) -> bytes:
    """A pax header (``kind`` ``x``: for the member after it; ``g``: global) holding ``records``."""
    body = b""
    for key, value in records.items():
        record = f" {key}={value}\n".encode()
        length = len(record) + 1
        while len(str(length)) + len(record) != length:
            length += 1
        body += str(length).encode() + record
    return entry(b"././@PaxHeader", body, kind)


def test_a_chain_of_extended_headers_stops_the_archive_with_the_reason(tmp_path: Path) -> None:
    """Hundreds of GNU long names (or pax headers) before one member made tarfile recurse once per
    header: a RecursionError out of the indexing run (an attack on the archive reader). At most
    TAR_EXTENDED_HEADERS_MAX in a row are read; the members before are kept."""
    first = entry(b"docs/first.md", b"# First\n")
    cases = {"gnu.tar": long_name(b"docs/x.md") * 200, "pax.tar": pax_header(comment="c") * 300}
    for name, chain in cases.items():
        path = tmp_path / name
        path.write_bytes(first + chain + entry(b"x.md", b"# X\n") + END)
        read: list[str] = []
        with pytest.raises(ArchiveLimit) as caught:
            for m in iter_archive(path):
                read.append(m.name)  # type: ignore[union-attr]
        assert read == ["docs/first.md"]
        assert str(caught.value) == ("more than 8 extended headers (GNU long names, pax headers) in a row before one"
                                     " member; the rest was not read")
    # as many as real archives hold (a global pax header, a pax header, GNU long name and link name) read as before
    path = tmp_path / "ok.tar"
    path.write_bytes(first + pax_header(b"g", comment="all") + pax_header(comment="c")
                     + long_name(b"docs/" + b"n" * 120 + b".md") + entry(b"x.md", b"# X\n") + END)
    assert members(path) == [("docs/first.md", "ok"), ("docs/" + "n" * 120 + ".md", "ok")]


def test_an_unexpected_error_inside_tarfile_is_the_archive_s_failure(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the chain limit, 2,000 long names make tarfile raise RecursionError: it comes out
    as ArchiveError with the reason (the indexer reports the archive and goes on), not as a crash."""
    monkeypatch.setattr(archive_module, "TAR_EXTENDED_HEADERS_MAX", 1_000_000)
    path = tmp_path / "deep.tar"
    path.write_bytes(long_name(b"docs/x.md") * 2_000 + entry(b"x.md", b"# X\n") + END)
    with pytest.raises(ArchiveError, match="^cannot read archive: RecursionError: maximum recursion depth exceeded"):
        list(iter_archive(path))


def test_a_tar_that_ends_at_a_bad_header_is_reported_with_the_members_before(tmp_path: Path) -> None:
    """tarfile takes a header it cannot read, after the first member, for the end of the archive:
    the members after it vanished without a word (an attack on the archive reader). The archive is
    now reported (ArchiveError after the members read); its normal end, padded with empty blocks,
    is not."""
    before, after = entry(b"docs/before.md", b"# Before\n"), entry(b"docs/lost.md", b"# Lost\n")
    bad = header(b"docs/mid.md", 6, checksum=b"0000001\0") + padded(b"# Mid\n")
    cases = {
        "checksum.tar": (before + bad + after + END, "a header after member 1 could not be read; the rest of the"
                                                     " archive was not read"),
        "cut.tar": (before + header(b"docs/lost.md", 7)[:300], "a header after member 1 could not be read; the"
                                                                " rest of the archive was not read"),
        "after-end.tar": (before + END + after + END, "data after the end-of-archive marker (after member 1) was"
                                                      " not read"),
    }
    for name, (data, reason) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        read: list[str] = []
        with pytest.raises(ArchiveError) as caught:
            for m in iter_archive(path):
                read.append(m.name)  # type: ignore[union-attr]
        assert (read, str(caught.value)) == (["docs/before.md"], reason), name
    for name, data in {"ends.tar": before + END + b"\0" * 9 * BLOCK, "no-end.tar": before}.items():
        (tmp_path / name).write_bytes(data)
        assert members(tmp_path / name) == [("docs/before.md", "ok")], name


def test_a_tar_folder_entry_holding_bytes_is_reported_and_the_members_after_read(tmp_path: Path) -> None:
    """An old-style regular member (type NUL) named ``x.md/`` is a folder to tarfile, which read
    its bytes as the next header: it and the member after it vanished. Its bytes are passed over
    and it is reported (as a zip's folder entry holding bytes is), as is a regular member whose GNU
    long name ends with ``/``; an empty folder entry is still passed over silently."""
    path = tmp_path / "folder.tar"
    path.write_bytes(entry(b"docs/", b"", b"5") + entry(b"docs/hidden.md/", b"# Hidden marker\n", b"\0")
                     + long_name(b"docs/" + b"n" * 100 + b".md/") + entry(b"x", b"# Also hidden\n", b"0")
                     + entry(b"docs/after.md", b"# After\n") + END)
    assert members(path) == [("docs/hidden.md", "a folder entry holding 16 bytes"),
                             ("docs/" + "n" * 100 + ".md", "a folder entry holding 14 bytes"),
                             ("docs/after.md", "ok")]


def old_gnu_sparse(name: bytes, extension_blocks: int) -> bytes:
    """An old GNU sparse member (type ``S``) whose map runs on for ``extension_blocks`` blocks of 21
    entries each (and holds no data), as an attacker would write it."""
    def octal(n: int) -> bytes:
        return b"%011o\0" % n

    block = bytearray(header(name, 0, b"S", checksum=b" " * 8))
    for i in range(4):  # the map's first entries, in the header itself
        block[386 + i * 24:410 + i * 24] = octal(i + 1) + octal(1)
    block[482], block[483:495] = 1, octal(100)  # extended; the file's real size
    block[148:156] = b"%06o\0 " % sum(block)
    extension = bytearray(b"".join(octal(5) + octal(1) for _ in range(21)) + b"\0" * 8)
    extension[504] = 1
    last = bytearray(extension)
    last[504] = 0
    return bytes(block) + bytes(extension) * (extension_blocks - 1) + bytes(last)


def print_members(path: str) -> None:
    """Print the members of the archive at ``path`` (a child of run_with_data_headroom)."""
    try:
        print(members(Path(path)))
    except ArchiveError as exc:
        print(f"ArchiveError: {exc}")


def test_a_sparse_member_is_skipped_without_reading_its_map(tmp_path: Path) -> None:
    """An old GNU sparse member whose map's extension blocks fill the archive made tarfile keep
    every entry: 100 MB of them took 867 MB in the indexing process (an attack on the archive
    reader). Sparse members are skipped with the reason and their map passed over, not kept: 40 MB
    of map (1.7 million entries) is read with 32 MiB to spare; the member after is read."""
    from tests.data_limit import run_with_data_headroom

    path = tmp_path / "sparse.tar"
    path.write_bytes(old_gnu_sparse(b"docs/sparse.md", 80_000) + entry(b"after.md", b"# After\n") + END)
    assert path.stat().st_size > 40_000_000
    out = run_with_data_headroom("tests.ingest.test_archive:print_members", 32, str(path))
    assert (out.returncode, out.stderr) == (0, "")
    expected = [("docs/sparse.md", "a sparse file inside the archive (not read)"), ("after.md", "ok")]
    assert out.stdout == f"{expected!r}\n"
    # a pax (GNU 1.0) sparse member: its map, at the start of its data, is not read either
    data = b"2\n0\n3\n10\n3\n" + b"abcdef"
    pax = tmp_path / "pax-sparse.tar"
    pax.write_bytes(pax_header(**{"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "docs/p.md",
                                  "GNU.sparse.realsize": "13"})
                    + entry(b"GNUSparseFile.0/p.md", data) + entry(b"after.md", b"# After\n") + END)
    assert members(pax) == [("docs/p.md", "a sparse file inside the archive (not read)"), ("after.md", "ok")]


def test_a_tar_member_with_two_gnu_long_names_is_reported_under_the_last(tmp_path: Path) -> None:
    """With two long names before one member tarfile took the first and GNU tar takes the last:
    ``docs/first.md`` + ``docs/sec\\0ond.md`` was indexed as ``docs/first.md`` and the NUL never
    seen (an attack on the archive reader). The last name is the one checked and shown, and the
    member is reported whatever it is; one long name reads as before."""
    path = tmp_path / "chain.tar"
    body = entry(b"x.md", b"# X\n")
    path.write_bytes(long_name(b"docs/first.md") + long_name(b"docs/sec\0ond.md") + body
                     + long_name(b"docs/first\0.md") + long_name(b"docs/second.md") + body
                     + long_name(b"docs/a.md") + long_name(b"docs/b.md") + long_name(b"docs/c.md") + body
                     + long_name(b"docs/" + b"n" * 120 + b".md") + body + END)
    reason = "more than one GNU long name for one member (tar tools disagree on which one is its name)"
    assert members(path) == [("docs/sec\\x00ond.md", "member name holds a NUL character"),
                             ("docs/second.md", reason), ("docs/c.md", reason), ("docs/" + "n" * 120 + ".md", "ok")]
