"""The embedding model of an open index, loaded once and shared by the vector lane and the indexer."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

from sleuth.embed import Embedder, ModelUnavailable, declared_dim, described_model, load_embedder
from sleuth.errors import NO_MODEL_REASON


class SharedModel:
    """The configured embedding model, loaded on first use (thread-safe).

    Args:
        spec: the model setting (a name, a folder, or ``"none"``).
        quantized: use the int8-quantised graph (None: the default, "auto" in config).
    """

    def __init__(self, spec: str, quantized: bool | None = None) -> None:
        self.spec, self.quantized = spec, quantized
        self._embedder: Embedder | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    @property
    def disabled(self) -> bool:
        """True when no model is configured on purpose (``"none"`` or empty): the vector lane is
        off by choice, not broken. Loads nothing."""
        return not self.spec or self.spec.strip().lower() == "none"

    @property
    def tried(self) -> bool:
        """True once a load was attempted (loaded or failed)."""
        return self._embedder is not None or self._error is not None

    def get(self) -> Embedder | None:
        """The model, loaded once; None when unavailable (the reason in :meth:`unavailable`)."""
        with self._lock:
            if not self.tried:
                try:
                    self._embedder = load_embedder(self.spec, self.quantized)
                    if self._embedder is None:
                        self._error = NO_MODEL_REASON
                except ModelUnavailable as exc:
                    self._error = str(exc)
            return self._embedder

    def unavailable(self) -> str | None:
        """Why there is no model (none configured, or it cannot load), else None; loads it first."""
        return self._error if self.get() is None else None

    def described(self, known_dim: Callable[[str], int | None] | None = None) -> tuple[str, int, str] | None:
        """``(name, dimensions, arithmetic path)`` of the configured model read without loading it
        (no onnxruntime session, no tokenizer): the name and path from its folder
        (:func:`sleuth.embed.described_model`: nothing is built, quantised or written), the
        dimensions as its folder declares them (:func:`sleuth.embed.declared_dim`) or, failing that,
        as ``known_dim(name)`` (a callable, e.g. the catalog's ``vector_dim``) knows them; the
        catalog is asked last because its rows can be planted. None when only loading tells: no
        model configured, its files cannot be found (:meth:`get` then says why), or neither
        declares the dimensions."""
        if self.disabled:
            return None
        with contextlib.suppress(ModelUnavailable):
            files = described_model(self.spec, self.quantized)
            dim = None if files is None else declared_dim(files) or (known_dim(files.name) if known_dim else None)
            if files and dim:
                return files.name, int(dim), files.path
        return None

    def identity(self, known_dim: Callable[[str], int | None] | None = None) -> tuple[str, int]:
        """``(name, dimensions)`` of :meth:`known`; ``("", 0)`` without a model."""
        known = self.known(known_dim)
        return (known[0], known[1]) if known is not None else ("", 0)

    def known(self, known_dim: Callable[[str], int | None] | None = None) -> tuple[str, int, str] | None:
        """``(name, dimensions, arithmetic path)`` of the model's vectors: without loading it when
        :meth:`described` tells them and it was not tried yet; else the loaded model's (loading it);
        None without a model (:meth:`unavailable` says why)."""
        if not self.tried:
            described = self.described(known_dim)
            if described is not None:
                return described
        embedder = self.get()
        return (embedder.name, embedder.dim, embedder.path) if embedder else None
