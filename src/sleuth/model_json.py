"""A model folder's JSON files (``config.json``, ``1_Pooling/config.json``, ``modules.json``) read
as hostile input: a regular file only (a FIFO or device planted there, or a link to one, would
hang or never end the read), of bounded size, parsed with a bounded nesting depth. Links are
followed: a Hugging Face cache's snapshot folder links its files to blobs outside it."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path


def read_model_json(path: Path, max_bytes: int) -> object:
    """The JSON value in the file ``path``.

    Args:
        path: the file (a link to a regular file is followed).
        max_bytes: the largest file read, in bytes.
    Raises:
        OSError: the file cannot be opened or read (missing, no permission).
        ValueError: not a regular file, larger than ``max_bytes``, not UTF-8 JSON, or nested too
            deeply for the parser (Python's recursion limit).
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO opens at once, then is refused
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path.name} is not a regular file")
        if st.st_size > max_bytes:
            raise ValueError(f"{path.name} is larger than {max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes and (chunk := os.read(fd, max_bytes + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:  # grew while read
        raise ValueError(f"{path.name} is larger than {max_bytes} bytes")
    try:
        return json.loads(b"".join(chunks))
    except RecursionError:
        raise ValueError(f"{path.name} is nested too deeply") from None
