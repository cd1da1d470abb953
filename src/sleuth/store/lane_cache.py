"""Derived lane data (tfidf matrix, vector matrix) saved beside the catalog, so a new process
loads arrays instead of rebuilding them from every block row. A cache file records the key (catalog
and vector generations) it was built for; a stale, missing or unreadable file is simply rebuilt."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np


def load_arrays(path: Path, key: str) -> dict[str, np.ndarray] | None:
    """The arrays saved at ``path`` for ``key``; None when absent, stale or unreadable."""
    saved = load_saved(path, key)
    return None if saved is None else saved[1]


def load_saved(path: Path, key: str | None = None) -> tuple[str, dict[str, np.ndarray]] | None:
    """``(key, arrays)`` saved at ``path`` (only for ``key`` when given); None when absent or unreadable."""
    try:
        with np.load(path, allow_pickle=False) as data:
            saved_key = str(data["__key__"])
            if key is not None and saved_key != key:
                return None
            return saved_key, {name: data[name] for name in data.files if name != "__key__"}
    except (OSError, ValueError, KeyError, EOFError):
        return None


def save_arrays(path: Path, key: str, **arrays: np.ndarray) -> None:
    """Atomically save ``arrays`` for ``key``; a read-only index folder is silently left alone."""
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            np.savez(handle, __key__=np.asarray(key), **arrays)
        os.replace(tmp, path)
    except OSError:
        return
