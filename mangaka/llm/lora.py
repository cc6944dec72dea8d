"""LoRA adapters on a loaded model: attached after load (the model's mmap kept), rescaled or
detached just before each call, so handles with different adapters share one loaded model."""

from __future__ import annotations

import ctypes
import logging
import math
from pathlib import Path
from typing import Any

from ..errors import InputError, LoraError
from .loading import LoadedModel, check_lora_file
from .native import import_llama_cpp

# The in-process backend's messages keep the one logger name they had before it was split.
log = logging.getLogger(__name__.rpartition(".")[0] + ".inprocess")

LORA_SCALE_RANGE = (-4.0, 4.0)


def check_lora_scale(scale: Any, label: str = "lora_scale") -> float:
    """``scale`` as a float in ``LORA_SCALE_RANGE``, or ``InputError`` naming ``label``."""
    low, high = LORA_SCALE_RANGE
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not math.isfinite(scale):
        raise InputError(f"{label} must be a number from {low:g} to {high:g}, got {scale!r}")
    if not low <= scale <= high:
        raise InputError(
            f"{label} must be from {low:g} to {high:g} (1 = the adapter as trained), got {scale:g}"
        )
    return float(scale)


def check_adapter(model: LoadedModel, lora: Path) -> None:
    """``lora`` is a LoRA adapter GGUF for ``model``'s architecture (its header only is read)."""
    check_lora_file(lora, model.architecture, model.path.name)


def apply_lora(model: LoadedModel, lora: Path | None, scale: float = 1.0) -> None:
    """Attach, rescale or detach the model's LoRA; resets the KV cache when it changes."""
    llama_cpp = import_llama_cpp()
    wanted = (lora.resolve(), float(scale)) if lora is not None and scale != 0.0 else None
    if wanted == model.active_lora:
        return
    ctx = model.context
    if wanted is None:
        rc = llama_cpp.llama_set_adapters_lora(ctx, None, 0, None)
    else:
        path, value = wanted
        adapter = model.adapters.get(path)
        if adapter is None:
            check_adapter(model, path)
            adapter = llama_cpp.llama_adapter_lora_init(model.llama.model, str(path).encode())
            if not adapter:
                raise LoraError(
                    f"llama.cpp could not load LoRA {path}: its tensors do not match "
                    f"{model.path.name} (wrong base model or rank?)"
                )
            model.adapters[path] = adapter
        arr = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(adapter)
        scales = (ctypes.c_float * 1)(value)
        rc = llama_cpp.llama_set_adapters_lora(ctx, arr, 1, scales)
    if rc != 0:
        raise LoraError(f"llama.cpp refused to set the LoRA adapters (code {rc})")
    model.active_lora = wanted
    model.llama.reset()  # cached KV and snapshots were computed with the old weights
    model.prefix_cache.clear()
    log.info("LoRA %s", f"{wanted[0].name} at {wanted[1]}" if wanted else "detached")
