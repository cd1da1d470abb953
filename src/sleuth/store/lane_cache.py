"""Derived lane data (tfidf matrix, vector matrix) saved beside the catalog, so a new process
loads arrays instead of rebuilding them from every block row. A cache file records the key (catalog
and vector generations) it was built for; a stale, missing or unreadable file is simply rebuilt.

The files are uncompressed ``.npz`` archives (``numpy.savez``), so their arrays can also be
memory-mapped (:func:`load_saved` with ``mapped=True``): a new process then reads only the pages a
search touches instead of the whole file (the tfidf cache of 200k blocks is 226 MB). A file is
only ever replaced whole (``os.replace``), so a mapping stays valid while a writer saves a new one.
"""

from __future__ import annotations

import mmap
import os
import struct
import zipfile
from pathlib import Path

import numpy as np

from sleuth.store.scratch import create, replacing

#: Size of a zip local file header before its name and extra field, and where their lengths are.
_ZIP_LOCAL_HEADER_BYTES = 30
_ZIP_LOCAL_NAME_LENGTHS_AT = 26


def load_arrays(path: Path, key: str, mapped: bool = False) -> dict[str, np.ndarray] | None:
    """The arrays saved at ``path`` for ``key``; None when absent, stale or unreadable."""
    saved = load_saved(path, key, mapped)
    return None if saved is None else saved[1]


def load_saved(path: Path, key: str | None = None, mapped: bool = False) -> tuple[str, dict[str, np.ndarray]] | None:
    """``(key, arrays)`` saved at ``path`` (only for ``key`` when given); None when absent or unreadable.

    With ``mapped``, the arrays are read-only views of the file mapped into memory (see the module
    docstring) instead of copies.
    """
    if not path.is_file():  # absent, or a folder, a FIFO (opening one would wait forever), ...
        return None
    try:
        if mapped:
            arrays = _mapped_arrays(path)
            saved_key = str(arrays.pop("__key__"))
        else:
            with np.load(path, allow_pickle=False) as data:
                saved_key = str(data["__key__"])
                if key is not None and saved_key != key:
                    return None
                arrays = {name: data[name] for name in data.files if name != "__key__"}
        if key is not None and saved_key != key:
            return None
        return saved_key, arrays
    except (OSError, ValueError, KeyError, EOFError, struct.error, zipfile.BadZipFile):
        return None


def _mapped_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of the uncompressed ``.npz`` at ``path`` as a read-only view of the mapped file.

    Raises:
        ValueError: a member is compressed, is not an ``.npy`` array or holds Python objects.
        OSError, zipfile.BadZipFile, struct.error: the file is unreadable or not a zip archive.
    """
    out: dict[str, np.ndarray] = {}
    with open(path, "rb") as handle, zipfile.ZipFile(handle) as archive:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            raise ValueError(f"{path} is empty")
        mapping = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or not info.filename.endswith(".npy"):
                raise ValueError(f"{path}: {info.filename} is not a stored .npy member")
            name_len, extra_len = struct.unpack_from("<HH", mapping, info.header_offset + _ZIP_LOCAL_NAME_LENGTHS_AT)
            start = info.header_offset + _ZIP_LOCAL_HEADER_BYTES + name_len + extra_len
            handle.seek(start)
            version = np.lib.format.read_magic(handle)
            shape, fortran_order, dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                                           else np.lib.format.read_array_header_2_0(handle))
            if dtype.hasobject:
                raise ValueError(f"{path}: {info.filename} holds Python objects")
            count = int(np.prod(shape, dtype=np.int64))
            offset = handle.tell()
            if offset + count * dtype.itemsize > start + info.file_size:
                raise ValueError(f"{path}: {info.filename} is truncated")
            array = np.frombuffer(mapping, dtype=dtype, count=count, offset=offset)
            out[info.filename[: -len(".npy")]] = array.reshape(shape, order="F" if fortran_order else "C")
    return out


def save_arrays(path: Path, key: str, **arrays: np.ndarray) -> bool:
    """Atomically save ``arrays`` for ``key``; returns whether it was saved. A folder that cannot
    be written (read-only, full) is left as it was: these files are derived, rebuilt when missing."""
    try:
        with replacing(path) as tmp, create(tmp) as handle:
            # (pyright reads **arrays as possibly allow_pickle; every value is an array)
            np.savez(handle, __key__=np.asarray(key), **arrays)  # pyright: ignore[reportArgumentType]
    except OSError:
        return False
    return True
