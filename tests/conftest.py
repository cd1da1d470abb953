"""Test-wide settings: exported ONNX models go to a cache private to this test session."""

from __future__ import annotations

import os
import tempfile


def pytest_configure(config: object) -> None:
    if "SLEUTH_MODEL_CACHE" not in os.environ:
        os.environ["SLEUTH_MODEL_CACHE"] = tempfile.mkdtemp(prefix="sleuth-test-models-")
