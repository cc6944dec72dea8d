"""The LLM takes part in ComfyUI's memory management.

ComfyUI frees its own models when a sampler, a text encoder or a VAE needs memory
(``comfy.model_management.load_models_gpu`` → ``free_memory``), but it does not know that a
llama.cpp model holds gigabytes of the same GPU (or of RAM). ``install()`` wraps both functions
(as module attributes, so every caller through the module sees the wrappers; signatures and
return values are the originals'): before ComfyUI loads or frees anything, ``make_room`` frees our
LLM(s) that live on that device when ComfyUI's free-memory figure is below what it needs. The LLM
loads again on its next use. An error in our part is logged and ComfyUI goes on as without it.

``load_models_gpu`` only calls ``free_memory`` for non-CPU devices, so the wrapper of
``load_models_gpu`` works out the need itself, for every device: the models' ``model_size() -
loaded_size()`` plus ComfyUI's inference reserve (``max(minimum_inference_memory(),
memory_required + extra_reserved_memory())``, the figure ComfyUI adds itself).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

import comfy.model_management as mm

from ..mangaka.llm.inprocess import make_room as release_for_room
from ..mangaka.llm.memory import MB, device_placement

log = logging.getLogger("mangaka")


def make_room(memory_required: float, device: Any, what: str = "ComfyUI") -> int:
    """Free our LLM(s) on ``device`` when ComfyUI's free memory there is below
    ``memory_required``; returns how many were freed. ``what`` names the model ComfyUI wants
    room for, in the log line."""
    where = device_placement(getattr(device, "type", str(device)))
    free = mm.get_free_memory(device)
    freed = release_for_room(free, memory_required, where)
    for model, size in freed:
        log.info(
            "mangaka: released %s (%.0f MB) for %s: %.0f MB free, %.0f MB needed",
            model.path.name,
            size / MB,
            what,
            free / MB,
            memory_required / MB,
        )
    return len(freed)


def _needs(models: Any, memory_required: float) -> dict[Any, tuple[float, list[str]]]:
    """Per device: the bytes ``load_models_gpu(models, memory_required)`` needs free there, and
    the classes of the models it loads."""
    reserve = max(mm.minimum_inference_memory(), memory_required + mm.extra_reserved_memory())
    needs: dict[Any, tuple[float, list[str]]] = {}
    for patcher in models:
        device = patcher.load_device
        need, names = needs.get(device, (reserve, []))
        name = type(getattr(patcher, "model", patcher)).__name__
        needs[device] = (need + patcher.model_size() - patcher.loaded_size(), [*names, name])
    return needs


def _wrap_load_models_gpu(original: Any) -> Any:
    @functools.wraps(original)
    def load_models_gpu(models, memory_required=0, *args, **kwargs):
        try:
            for device, (need, names) in _needs(models, memory_required).items():
                make_room(need, device, ", ".join(names))
        except Exception:  # never break ComfyUI's loading over our hook
            log.exception("mangaka: could not make room for ComfyUI's models; going on")
        return original(models, memory_required, *args, **kwargs)

    load_models_gpu._mangaka_hooked = True  # type: ignore[attr-defined]
    return load_models_gpu


def _wrap_free_memory(original: Any) -> Any:
    @functools.wraps(original)
    def free_memory(memory_required, device, *args, **kwargs):
        try:
            make_room(memory_required, device)
        except Exception:  # never break ComfyUI's freeing over our hook
            log.exception("mangaka: could not make room in free_memory; going on")
        return original(memory_required, device, *args, **kwargs)

    free_memory._mangaka_hooked = True  # type: ignore[attr-defined]
    return free_memory


def install() -> None:
    """Wrap ``load_models_gpu`` and ``free_memory`` once (a second call changes nothing)."""
    if not getattr(mm.load_models_gpu, "_mangaka_hooked", False):
        mm.load_models_gpu = _wrap_load_models_gpu(mm.load_models_gpu)
    if not getattr(mm.free_memory, "_mangaka_hooked", False):
        mm.free_memory = _wrap_free_memory(mm.free_memory)
