"""The archive member limit and its ceiling, apart from :mod:`sleuth.ingest.archive` so that the
configuration reads them without importing the archive readers (tarfile, zipfile, the PDF bounds)."""

ARCHIVE_MAX_MEMBERS = 10_000
"""At most this many members (files, folders, links) are read from one archive, by default
(``archive_max_members`` in ``<index>/config.toml``, or ``$SLEUTH_ARCHIVE_MAX_MEMBERS``)."""
ARCHIVE_MAX_MEMBERS_CEILING = 100_000
"""The largest ``archive_max_members`` accepted: member names are kept to find repeats (a few
hundred bytes each), and a zip's whole directory (at most 1 KiB per member allowed: 100 MiB here)
is read before its members, so the member count bounds the memory of reading one archive (the
512 MiB of uncompressed data bounds its time)."""
