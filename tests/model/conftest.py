"""Model-tier fixtures: tiny random-weight GGUFs written once per session, and the PyPI models."""

from __future__ import annotations

from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_lora, write_model, write_unsupported_model

TRAINED_CONTEXT = 4096


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("tiny-models")


@pytest.fixture(scope="session")
def qwen35moe(tiny_dir: Path) -> Path:
    return write_model(tiny_dir / "tiny-qwen35moe.gguf", "qwen35moe", context_length=TRAINED_CONTEXT)


@pytest.fixture(scope="session")
def qwen3moe(tiny_dir: Path) -> Path:
    return write_model(tiny_dir / "tiny-qwen3moe.gguf", "qwen3moe", context_length=TRAINED_CONTEXT)


@pytest.fixture(scope="session")
def qwen35moe_lora(tiny_dir: Path, qwen35moe: Path) -> Path:
    return write_lora(tiny_dir / "tiny-qwen35moe-lora.gguf", qwen35moe)


@pytest.fixture(scope="session")
def qwen3moe_lora(tiny_dir: Path, qwen3moe: Path) -> Path:
    return write_lora(tiny_dir / "tiny-qwen3moe-lora.gguf", qwen3moe)


@pytest.fixture(scope="session")
def unsupported_model(tiny_dir: Path) -> Path:
    return write_unsupported_model(tiny_dir / "tiny-qwen99moe.gguf")


@pytest.fixture(scope="session")
def smollm2() -> Path:
    from mangaka.demo import demo_model_path

    return demo_model_path()


@pytest.fixture(autouse=True)
def _release_models():
    yield
    from mangaka.llm.loading import release_models

    release_models()
