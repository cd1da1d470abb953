"""Block vectors as stored: 8-bit codes with one scale per vector (catalog format 5).

A stored vector of ``dim`` dimensions is ``dim`` signed bytes (the codes) followed by one
little-endian float32 (the scale): ``dim + 4`` bytes, a quarter of float32's ``4 * dim``. The
catalog's ``vectors`` table holds these rows as blobs and the vector lane's file holds the same rows
end to end, so the lane rebuilt from the catalog is bit for bit the lane it replaces.

Encoding (symmetric per-vector quantisation, as in e.g. Jacob et al. 2018, "Quantization and
Training of Neural Networks for Efficient Integer-Arithmetic-Only Inference", with the scale set to
keep the norm): ``codes = round(v * 127 / max|v|)``, ``scale = ||v|| / ||codes||``, so the decoded
vector ``codes * scale`` has the norm of ``v`` (unit vectors stay unit: cosine stays a dot
product). The per-dimension error is at most half a step (``max|v| / 254``); measured on SciFact
and NPL, nDCG@10 of the vector lane moves by less than 0.001 (docs/BENCH.md, issue 16 item 7).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Bytes a stored vector takes beyond its codes (the float32 scale).
SCALE_BYTES = 4
#: Largest code magnitude (codes are in ``[-CODE_MAX, CODE_MAX]``, symmetric around 0).
CODE_MAX = 127


def row_dtype(dim: int) -> np.dtype:
    """The numpy record of one stored vector: ``codes`` (int8, ``dim``) then ``scale`` (float32)."""
    return np.dtype([("codes", "i1", (dim,)), ("scale", "<f4")])


def dim_of_blob(nbytes: int) -> int:
    """Dimensions of a stored vector of ``nbytes`` bytes."""
    return nbytes - SCALE_BYTES


def encode(vectors: np.ndarray) -> np.ndarray:
    """Stored rows of float vectors.

    Args:
        vectors: shape (n, dim), any float dtype (a zero vector stays zero).
    Returns:
        shape (n,) records of :func:`row_dtype`; ``.tobytes()`` of a row is its blob.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"vectors must have shape (n, dim), not {v.shape}")
    peak = np.abs(v).max(axis=1, initial=0.0).astype(np.float64)
    step = np.where(peak > 0, peak / CODE_MAX, 1.0)
    codes = np.clip(np.rint(v / step[:, None]), -CODE_MAX, CODE_MAX).astype(np.int8)
    code_norm = np.linalg.norm(codes.astype(np.float64), axis=1)
    norm = np.linalg.norm(v.astype(np.float64), axis=1)
    rows = np.empty(len(v), dtype=row_dtype(v.shape[1]))
    rows["codes"] = codes
    rows["scale"] = np.where(code_norm > 0, norm / np.where(code_norm > 0, code_norm, 1.0), 0.0)
    return rows


def encode_blobs(vectors: np.ndarray) -> list[bytes]:
    """The blob of each row of ``vectors`` (shape (n, dim)), as the catalog stores it."""
    return [row.tobytes() for row in encode(vectors)]


def from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored rows (shape (n,), :func:`row_dtype`) from blobs of ``dim + SCALE_BYTES`` bytes each.

    Raises:
        ValueError: a blob of another size.
    """
    width = dim + SCALE_BYTES
    if any(len(b) != width for b in blobs):
        raise ValueError(f"a stored vector is not {width} bytes ({dim} dimensions)")
    return np.frombuffer(b"".join(blobs), dtype=row_dtype(dim)) if blobs else np.zeros(0, dtype=row_dtype(dim))


def decode(rows: np.ndarray) -> np.ndarray:
    """Float32 vectors (shape (n, dim), C order) of stored rows (shape (n,))."""
    if len(rows) == 0:
        return np.zeros((0, rows.dtype["codes"].shape[0]), dtype=np.float32)
    out = rows["codes"].astype(np.float32)
    out *= rows["scale"].astype(np.float32)[:, None]
    return out
