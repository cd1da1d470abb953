"""Test-wide settings: exported ONNX models go to a cache private to this test session, and
`sleuth serve` runs in-process (no broker) unless a test turns the broker on; brokers started by
tests live in a private folder and are stopped when the session ends; `sleuth index` waits for its
embeddings; progress lines come only at the end of a run."""

from __future__ import annotations

import os
import shutil
import tempfile

# The exported models (~110 MB) are private to one test session and removed when it ends.
_MODEL_CACHE_PREFIX = "sleuth-test-models-"


def pytest_configure(config: object) -> None:
    if "SLEUTH_MODEL_CACHE" not in os.environ:
        os.environ["SLEUTH_MODEL_CACHE"] = tempfile.mkdtemp(prefix=_MODEL_CACHE_PREFIX)
    # Each broker holds the model (~150 MB) until it is idle: only tests/integration/test_broker.py
    # starts them (passing SLEUTH_BROKER=1), in a short private folder (socket paths are limited).
    os.environ["SLEUTH_BROKER"] = "0"
    # `sleuth index` embeds before it returns (as --wait): tests that search by vector after it need
    # the vectors, and no background worker outlives a test; tests of the background worker unset it.
    os.environ.setdefault("SLEUTH_INDEX_WAIT", "1")
    # Plain progress lines only at the end of a run, however slow the machine (tests of the lines
    # themselves set the interval they check).
    os.environ.setdefault("SLEUTH_PROGRESS_INTERVAL_S", "3600")
    os.environ["SLEUTH_BROKER_DIR"] = tempfile.mkdtemp(prefix="sb-", dir="/tmp")


def pytest_unconfigure(config: object) -> None:
    from sleuth.broker.client import stop_brokers

    folder = os.environ.get("SLEUTH_BROKER_DIR", "")
    if os.path.basename(folder).startswith("sb-"):
        stop_brokers(None)
        shutil.rmtree(folder, ignore_errors=True)
    models = os.environ.get("SLEUTH_MODEL_CACHE", "")
    if os.path.basename(models).startswith(_MODEL_CACHE_PREFIX):
        shutil.rmtree(models, ignore_errors=True)
