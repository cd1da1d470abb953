"""Block vectors as stored: 8-bit codes, a step per block of dimensions, one scale per vector
(catalog format 6; format 5 had one step per vector).

A stored vector of ``dim`` dimensions is ``dim`` signed bytes (the codes), then one little-endian
float16 per block of ``BLOCK_DIMS`` dimensions (the block's step, relative to the vector's largest
component: ``ratio`` in ``(0, 1]``; the last block may be shorter), then one little-endian float32
(the scale): ``dim + 2 * ceil(dim / BLOCK_DIMS) + 4`` bytes, 400 at 384 dimensions (float32: 1,536).
The catalog's ``vectors`` table holds these rows as blobs and the vector lane's file holds the same
rows end to end, so the lane rebuilt from the catalog is bit for bit the lane it replaces.

Encoding (symmetric quantisation with one step per block of the vector, as in e.g. Dettmers et al.
2022, "LLM.int8()", block-wise scales; the scale set to keep the norm): ``peak = max|v|``; for each
block ``ratio = max|v_block| / peak`` rounded up to float16, ``codes = round(v * 127 / (ratio *
peak))``; ``scale = ||v|| / ||codes * ratio||``, so the decoded vector ``codes * ratio * scale`` has
the norm of ``v`` (unit vectors stay unit: cosine stays a dot product). The per-dimension error is
at most half the block's step (``max|v_block| / 254``, up to float16 rounding). A block's largest
component sets its step: with one step per vector (format 5) the largest component of the whole
vector set every block's; per block of 64 the dot-product error falls by a fifth (docs/EVAL.md).
A format-5 row is the format-6 row with every ratio 1 (:func:`from_format_5`): decoded the same.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: Bytes a stored vector takes beyond its codes and block ratios (the float32 scale).
SCALE_BYTES = 4
#: Bytes of one block's ratio (float16).
RATIO_BYTES = 2
#: Dimensions that share one step (the last block of a vector may be shorter).
BLOCK_DIMS = 64
#: Largest code magnitude (codes are in ``[-CODE_MAX, CODE_MAX]``, symmetric around 0).
CODE_MAX = 127


def blocks_of(dim: int) -> int:
    """Blocks of ``BLOCK_DIMS`` dimensions (the last one may be shorter) in ``dim`` dimensions."""
    return -(-dim // BLOCK_DIMS)


def row_dtype(dim: int) -> np.dtype:
    """The numpy record of one stored vector: ``codes`` (int8, ``dim``), ``ratios`` (float16, one per
    block), ``scale`` (float32)."""
    return np.dtype([("codes", "i1", (dim,)), ("ratios", "<f2", (blocks_of(dim),)), ("scale", "<f4")])


def blob_bytes(dim: int) -> int:
    """Bytes of a stored vector of ``dim`` dimensions."""
    return dim + RATIO_BYTES * blocks_of(dim) + SCALE_BYTES


def dim_of_blob(nbytes: int) -> int:
    """Dimensions of a stored vector of ``nbytes`` bytes (``blob_bytes`` grows with ``dim``, so at
    most one ``dim`` fits).

    Raises:
        ValueError: no number of dimensions takes ``nbytes`` bytes.
    """
    guess = max(0, (nbytes - SCALE_BYTES) * BLOCK_DIMS // (BLOCK_DIMS + RATIO_BYTES))
    for dim in range(max(0, guess - 2), guess + 3):
        if blob_bytes(dim) == nbytes:
            return dim
    raise ValueError(f"no stored vector is {nbytes} bytes")


def _block_view(a: np.ndarray, dim: int) -> np.ndarray:
    """``a`` (shape (n, dim)) padded with zeros to whole blocks, shape (n, blocks, BLOCK_DIMS)."""
    nb = blocks_of(dim)
    if nb * BLOCK_DIMS != dim:
        a = np.concatenate([a, np.zeros((len(a), nb * BLOCK_DIMS - dim), dtype=a.dtype)], axis=1)
    return a.reshape(len(a), nb, BLOCK_DIMS)


def encode(vectors: np.ndarray) -> np.ndarray:
    """Stored rows of float vectors.

    Args:
        vectors: shape (n, dim), any float dtype with finite values (a zero vector stays zero).
    Returns:
        shape (n,) records of :func:`row_dtype`; ``.tobytes()`` of a row is its blob.
    Raises:
        ValueError: not of shape (n, dim), or a value that is not finite.
    """
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim != 2:
        raise ValueError(f"vectors must have shape (n, dim), not {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("a vector has a component that is not finite")
    n, dim = v.shape
    v64 = v.astype(np.float64)
    blocks = _block_view(v64, dim)
    peak = np.abs(v64).max(axis=1, initial=0.0)
    safe_peak = np.where(peak > 0, peak, 1.0)
    exact = np.abs(blocks).max(axis=2, initial=0.0) / safe_peak[:, None]  # (n, blocks), in [0, 1]
    ratios = exact.astype(np.float16)
    low = ratios.astype(np.float64) < exact  # rounded down: one float16 step up, so no code passes 127
    ratios[low] = np.nextafter(ratios[low], np.float16(np.inf))
    ratios = np.minimum(ratios, np.float16(1.0))
    ratios[ratios == 0] = np.float16(1.0)  # an all-zero block (its codes are 0 whatever the ratio)
    step = ratios.astype(np.float64) * (safe_peak / CODE_MAX)[:, None]
    codes = np.clip(np.rint(blocks / step[:, :, None]), -CODE_MAX, CODE_MAX).reshape(n, -1)[:, :dim]
    unscaled = _decoded(codes.astype(np.float64), ratios.astype(np.float64), dim)
    code_norm = np.linalg.norm(unscaled, axis=1)
    rows = np.empty(n, dtype=row_dtype(dim))
    rows["codes"] = codes.astype(np.int8)
    rows["ratios"] = ratios
    rows["scale"] = np.where(code_norm > 0, np.linalg.norm(v64, axis=1) / np.where(code_norm > 0, code_norm, 1.0), 0.0)
    return rows


def _decoded(codes: np.ndarray, ratios: np.ndarray, dim: int) -> np.ndarray:
    """``codes * ratio`` of each block (shape (n, dim), the dtype of ``codes``)."""
    out = _block_view(codes, dim) * ratios[:, :, None].astype(codes.dtype)
    return out.reshape(len(codes), -1)[:, :dim]


def encode_blobs(vectors: np.ndarray) -> list[bytes]:
    """The blob of each row of ``vectors`` (shape (n, dim)), as the catalog stores it."""
    return [row.tobytes() for row in encode(vectors)]


def from_blobs(blobs: Sequence[bytes], dim: int) -> np.ndarray:
    """Stored rows (shape (n,), :func:`row_dtype`) from blobs of :func:`blob_bytes` ``(dim)`` bytes each.

    Raises:
        ValueError: a blob of another size.
    """
    width = blob_bytes(dim)
    if any(len(b) != width for b in blobs):
        raise ValueError(f"a stored vector is not {width} bytes ({dim} dimensions)")
    return np.frombuffer(b"".join(blobs), dtype=row_dtype(dim)) if blobs else np.zeros(0, dtype=row_dtype(dim))


def decode(rows: np.ndarray) -> np.ndarray:
    """Float32 vectors (shape (n, dim), C order) of stored rows (shape (n,))."""
    dim = rows.dtype["codes"].shape[0]
    if len(rows) == 0:
        return np.zeros((0, dim), dtype=np.float32)
    out = rows["codes"].astype(np.float32)
    ratios = rows["ratios"].astype(np.float32)
    if dim % BLOCK_DIMS == 0:
        out.reshape(len(rows), -1, BLOCK_DIMS)[:] *= ratios[:, :, None]
    else:
        for b in range(ratios.shape[1]):
            out[:, b * BLOCK_DIMS : (b + 1) * BLOCK_DIMS] *= ratios[:, b, None]
    out *= rows["scale"].astype(np.float32)[:, None]
    return out


#: Bytes a format-5 stored vector takes beyond its codes (its float32 scale).
FORMAT_5_SCALE_BYTES = 4


def from_format_5(blobs: Sequence[bytes]) -> list[bytes]:
    """Format-6 blobs of format-5 blobs (codes, then one float32 scale; of equal size): the same
    codes and scale with every block's ratio 1, so each decodes to the same float32 vector."""
    if not blobs:
        return []
    dim = len(blobs[0]) - FORMAT_5_SCALE_BYTES
    old = np.frombuffer(b"".join(blobs), dtype=np.dtype([("codes", "i1", (dim,)), ("scale", "<f4")]))
    rows = np.empty(len(old), dtype=row_dtype(dim))
    rows["codes"] = old["codes"]
    rows["ratios"] = np.float16(1.0)
    rows["scale"] = old["scale"]
    return [row.tobytes() for row in rows]
