"""What the LoRA tier's tests share: the LoRA Python (``.venv-lora``, with torch), found or refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def lora_python() -> str:
    python = os.environ.get("MANGAKA_LORA_PYTHON", "")
    if not python or not Path(python).exists():
        if os.environ.get("MANGAKA_REQUIRE_LORA") == "1":
            pytest.fail("MANGAKA_LORA_PYTHON is not set: run the tests with `bash tests/run.sh`")
        pytest.skip("no LoRA Python (MANGAKA_LORA_PYTHON): run the tests with `bash tests/run.sh`")
    return python
