"""Mangaka engine: novel chapter → structured screenplay → Stable Diffusion prompts → manga pages.

Plain Python; never imports ComfyUI or torch. Heavy libraries (llama_cpp) are imported where used:
the names below are loaded on first use, so ``import mangaka`` stays light.

    from mangaka import LlamaCppLLM, LoadOptions, ScreenplayRequest, write_screenplay

    llm = LlamaCppLLM("Qwen3.5-35B-A3B-Q4_K_M.gguf", LoadOptions(n_ctx=32768))
    result = write_screenplay(llm, chapter, ScreenplayRequest(language="en", panels="auto"))
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# The front door: the public name → the module that defines it.
_PUBLIC = {
    "LlamaCppLLM": "mangaka.llm.inprocess",
    "LoadOptions": "mangaka.llm.loading",
    "OpenAICompatibleLLM": "mangaka.llm.openai",
    "ScreenplayRequest": "mangaka.screenplay.request",
    "write_screenplay": "mangaka.screenplay.generate",
    "Screenplay": "mangaka.screenplay.models",
    "screenplay_from_text": "mangaka.compose.extract",
    "compile_prompts": "mangaka.compose.compiler",
    "compose_pages": "mangaka.page.render",
    "save_page": "mangaka.page.render",
    "MangakaError": "mangaka.errors",
    "InputError": "mangaka.errors",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'mangaka' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
