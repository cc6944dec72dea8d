"""``python -m mangaka bench``: speed figures measured side by side in one run on this machine.

Every figure is a ratio or a count taken from runs made here, now, one after the other; nothing
is compared with a number from elsewhere. ``--json`` prints one JSON object whose keys
``docs/performance.md`` documents. The models come from PyPI packages (gemma-3-270m,
SmolLM2-135M) or are written on the spot (tiny random-weight qwen35moe models, one with
Qwen3.5's full 248,320-token vocabulary);
``manga_page`` runs the example workflow in the comfy test tier's ComfyUI when its cache is there.
"""

from __future__ import annotations

import logging
import os
import platform
import time
from collections.abc import Callable
from typing import Any

from ...demo import demo_model_path
from ...errors import MangakaError
from ...llm import native
from ...llm.constrain import DEFAULT_ENGINE
from ..machine import cpu_features, cpu_name
from .common import gemma_path, tiny_model
from .decoding import (
    constrained_vs_free,
    free_vs_llama_bench,
    grammar_cost_248k,
    jump_forward,
    overhead,
    prefix_reuse,
)
from .demo import demo_run
from .export import export_chapter
from .grounded import grounded_vs_free
from .manga_page import manga_page_run
from .memory import lora_memory
from .page import page_compose
from .real_shape import real_shape
from .remote import remote_concurrency
from .split import split_speed
from .training import lora_train
from .video import video_render

log = logging.getLogger(__name__)

# Parts that run only when named with --only: real_shape writes a model of gigabytes (tens without
# --quick) and decodes at up to 32k tokens of context.
ONLY_WHEN_NAMED = frozenset({"real_shape"})


def run(
    *,
    threads: int,
    gpu_layers: int,
    quick: bool,
    engine: str | None,
    only: list[str] | None = None,
    quant: str = "Q4_K_M",
) -> dict[str, Any]:
    """Every part (or those in ``only``) in order, and the machine's facts: one dict of figures."""
    n, reps = (48, 1) if quick else (200, 3)
    steps: dict[str, Callable[[], dict[str, Any]]] = {
        "constrained": lambda: constrained_vs_free(
            gemma_path(), threads, gpu_layers, n, reps if quick else 5, engine
        ),
        "jump_forward": lambda: jump_forward(
            {
                "": gemma_path(),
                "embedded": demo_model_path(),
                "qwen35moe": tiny_model("qwen35moe-32k", arch="qwen35moe", context_length=32768),
            },
            threads,
            gpu_layers,
            n,
            reps if quick else 5,
        ),
        "grounded": lambda: grounded_vs_free(
            {"embedded": demo_model_path(), **({} if quick else {"gemma": gemma_path()})},
            threads,
            gpu_layers,
            1 if quick else 2,
        ),
        "grammar_248k": lambda: grammar_cost_248k(threads, n // 2, reps, engine),
        "overhead": lambda: overhead(demo_model_path(), threads, gpu_layers, n, reps),
        "llama_bench": lambda: free_vs_llama_bench(
            gemma_path(), threads, gpu_layers, n, reps if quick else 5
        ),
        "prefix": lambda: prefix_reuse(threads),
        "lora_memory": lambda: lora_memory(gemma_path(), threads),
        "lora_train": lambda: lora_train(quick),
        "page": lambda: page_compose(reps),
        "export": lambda: export_chapter(reps),
        "split": lambda: split_speed(quick),
        "remote": lambda: remote_concurrency(threads),
        "demo": lambda: demo_run(threads),
        "manga_page": lambda: manga_page_run(threads, 1 if quick else 2),
        "video": lambda: video_render(quick),
        "real_shape": lambda: real_shape(threads, gpu_layers, quick, quant),
    }
    unknown = sorted(set(only or []) - set(steps))
    if unknown:
        raise MangakaError(f"unknown benchmark {', '.join(unknown)}; valid: {', '.join(steps)}")
    figures: dict[str, Any] = {
        "machine": platform.machine(),
        "cpu": cpu_name(),
        "cpu_features": cpu_features(),
        "cores": os.cpu_count(),
        "threads": threads,
        "gpu_layers": gpu_layers,
        "llama_cpp_python": native.version(),
        "system_info": native.system_info(),
        "engine": engine or _default_engine(),
        "quick": quick,
    }
    for name, step in steps.items():
        if (name not in only) if only else (name in ONLY_WHEN_NAMED):
            continue
        started = time.perf_counter()
        log.info("bench: %s …", name)
        figures.update(step())
        log.info("bench: %s done in %.1f s", name, time.perf_counter() - started)
    return figures


def _default_engine() -> str:
    return DEFAULT_ENGINE


def format_table(figures: dict[str, Any]) -> str:
    width = max(len(k) for k in figures)
    lines = []
    for key, value in figures.items():
        shown = f"{value:.3f}" if isinstance(value, float) else str(value)
        lines.append(f"{key.ljust(width)}  {shown}")
    return "\n".join(lines)
