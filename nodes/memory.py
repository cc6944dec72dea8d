"""The LLM takes part in ComfyUI's memory management, both ways.

ComfyUI frees its own models when a sampler, a text encoder or a VAE needs memory
(``comfy.model_management.load_models_gpu`` → ``free_memory``), but it does not know that a
llama.cpp model holds gigabytes of the same GPU (or of RAM). ``install()`` wraps three functions
(as module attributes, so every caller through the module sees the wrappers; signatures and
return values are the originals'):

- ``load_models_gpu`` and ``free_memory``: before ComfyUI loads or frees anything, ``make_room``
  frees our LLM(s) that live on that device when ComfyUI's free-memory figure is below what it
  needs. The LLM loads again on its next use. ``load_models_gpu`` only calls ``free_memory`` for
  non-CPU devices, so its wrapper works out the need itself, for every device: the models'
  ``model_size() - loaded_size()`` plus ComfyUI's inference reserve.
- ``unload_all_models`` (``POST /free``, the "Free model and node cache" button): our LLMs go too.

The other way, before the engine loads a model (``mangaka.llm.loading.on_load``), ``request_room``
asks ComfyUI's manager for what the load will hold: the weights, the KV cache at its context and
the recurrent state (``RoomRequest``), plus ComfyUI's own reserve, on the device it goes to. So an
image model left resident by the last run (ComfyUI keeps models loaded; 0.38's Dynamic VRAM keeps
them and frees on request) is unloaded for the LLM instead of the LLM running out of memory or
falling back to the CPU. What ComfyUI unloaded is logged.

Newer ComfyUI (feature-detected from the signature, never from a version number):

- ``free_memory(memory_required, device, keep_loaded, for_dynamic, pins_required, ram_required)``:
  ``device=None`` means every device, so our LLMs on each are considered; ``ram_required`` and
  ``pins_required`` (host RAM wanted, e.g. by the RAM-pressure cache policy) free our LLMs held in
  RAM when RAM is short; ``for_dynamic`` (room for a model streamed on demand) is treated as any
  request: a llama.cpp model cannot shrink, so it is released only when free memory is short.
  Our requests pass ``for_dynamic=False`` (the LLM needs the room now) and, for a load into RAM,
  ``ram_required``.
- ComfyUI may put back functions custom nodes replaced (``hook_breaker_ac10a0``, after a prompt).
  ``check_hooks()`` runs at every LLM node and wraps whatever was put back again, logging it.

An error in our part is logged and ComfyUI goes on as without it.
"""

from __future__ import annotations

import functools
import inspect
import logging
from typing import Any

import comfy.model_management as mm

from ..mangaka.llm.loading import RoomRequest, on_load, release_models, resident_models
from ..mangaka.llm.loading import make_room as release_for_room
from ..mangaka.llm.memory import MB, device_placement

log = logging.getLogger("mangaka")
HOOKED = "_mangaka_hooked"


def _cpu() -> Any:
    import torch

    return torch.device("cpu")


@functools.lru_cache(maxsize=32)
def _parameters(func: Any) -> tuple[str, ...]:
    try:
        return tuple(inspect.signature(func).parameters)
    except (TypeError, ValueError):
        return ()


def _original(func: Any) -> Any:
    """The function under our wrapper (``functools.wraps`` keeps it as ``__wrapped__``)."""
    while getattr(func, HOOKED, False) and hasattr(func, "__wrapped__"):
        func = func.__wrapped__
    return func


def accepts(name: str) -> bool:
    """Whether this ComfyUI's ``free_memory`` takes the keyword ``name`` (0.38: ``for_dynamic``,
    ``pins_required``, ``ram_required``)."""
    return name in _parameters(_original(mm.free_memory))


def make_room(memory_required: float, device: Any, what: str = "ComfyUI") -> int:
    """Free our LLM(s) on ``device`` when ComfyUI's free memory there is below
    ``memory_required``; returns how many were freed. ``what`` names the model ComfyUI wants
    room for, in the log line."""
    where = device_placement(getattr(device, "type", str(device)))
    if not resident_models(where):
        return 0
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

    setattr(load_models_gpu, HOOKED, True)
    return load_models_gpu


def _free_memory_request(original: Any, args: tuple, kwargs: dict) -> None:
    """Our part of one ``free_memory`` call, whatever this ComfyUI's signature."""
    try:
        call = inspect.signature(original).bind(*args, **kwargs)
        call.apply_defaults()
        given = call.arguments
    except (TypeError, ValueError):  # a signature we do not know: the first two, by position
        given = dict(zip(("memory_required", "device"), args, strict=False)) | kwargs
    memory_required = given.get("memory_required", 0) or 0
    device = given.get("device")
    if device is None:  # 0.38: every device
        gpu = mm.get_torch_device()
        for each in {str(d): d for d in (gpu, _cpu())}.values():
            make_room(memory_required, each)
    else:
        make_room(memory_required, device)
    ram = (given.get("ram_required") or 0) + (given.get("pins_required") or 0)
    if ram > 0:
        make_room(ram, _cpu(), "ComfyUI's RAM")


def _wrap_free_memory(original: Any) -> Any:
    @functools.wraps(original)
    def free_memory(*args, **kwargs):
        try:
            _free_memory_request(original, args, kwargs)
        except Exception:  # never break ComfyUI's freeing over our hook
            log.exception("mangaka: could not make room in free_memory; going on")
        return original(*args, **kwargs)

    setattr(free_memory, HOOKED, True)
    return free_memory


def _wrap_unload_all_models(original: Any) -> Any:
    @functools.wraps(original)
    def unload_all_models(*args, **kwargs):
        try:
            freed = release_models()
            if freed:
                log.info("Mangaka: released %d LLM(s)", freed)
        except Exception:  # never break ComfyUI's freeing over our hook
            log.exception("mangaka: could not release the LLMs; going on")
        return original(*args, **kwargs)

    setattr(unload_all_models, HOOKED, True)
    return unload_all_models


WRAPPERS = {
    "load_models_gpu": _wrap_load_models_gpu,
    "free_memory": _wrap_free_memory,
    "unload_all_models": _wrap_unload_all_models,
}


def _comfy_models() -> dict[int, tuple[str, float]]:
    """ComfyUI's loaded models now: id → (class name, bytes held)."""
    found = {}
    for loaded in list(getattr(mm, "current_loaded_models", [])):
        model = getattr(loaded, "model", None)
        if model is None:
            continue
        held = loaded.model_loaded_memory() if hasattr(loaded, "model_loaded_memory") else 0
        found[id(model)] = (type(getattr(model, "model", model)).__name__, held)
    return found


def request_room(request: RoomRequest) -> None:
    """Ask ComfyUI's manager for the room ``request`` will hold, plus ComfyUI's reserve, on the
    device it goes to, before the engine loads it; what ComfyUI unloads for it is logged."""
    device = mm.get_torch_device() if request.where == "gpu" else _cpu()
    if request.where == "gpu" and getattr(device, "type", "cpu") == "cpu":
        return  # ComfyUI runs on the CPU: the model's layers stay where llama.cpp puts them
    need = request.total + mm.extra_reserved_memory()
    kwargs: dict[str, Any] = {}
    if accepts("for_dynamic"):
        kwargs["for_dynamic"] = False
    if request.where == "ram" and accepts("ram_required"):
        kwargs["ram_required"] = request.total
    before = _comfy_models()
    log.info(
        "mangaka: asking ComfyUI for %.0f MB on %s before loading %s (weights %.0f MB, KV cache %.0f MB, "
        "recurrent state %.0f MB, compute %.0f MB, ComfyUI's reserve %.0f MB)",
        need / MB, device, request.model, request.weights / MB, request.kv_cache / MB,
        request.recurrent / MB, request.compute / MB, (need - request.total) / MB,
    )  # fmt: skip
    mm.free_memory(need, device, **kwargs)
    after = _comfy_models()
    freed, names = 0.0, []
    for key, (name, held) in before.items():
        left = after.get(key, (name, 0.0))[1]
        if left < held:
            freed, names = freed + held - left, [*names, name]
    if names:
        log.info("mangaka: ComfyUI unloaded %s (%.0f MB) for %s", ", ".join(names), freed / MB, request.model)


def install() -> list[str]:
    """Wrap what is not wrapped (``WRAPPERS``) and hook the engine's loads; the names wrapped
    now. A second call changes nothing while the wrappers are in place."""
    wrapped = []
    for name, wrap in WRAPPERS.items():
        current = getattr(mm, name, None)
        if current is not None and not getattr(current, HOOKED, False):
            setattr(mm, name, wrap(current))
            wrapped.append(name)
    on_load(request_room)
    return wrapped


def hooks_in_place() -> dict[str, bool]:
    """Whether each function the pack wraps still has its wrapper (``GET /mangaka/llm``)."""
    return {name: bool(getattr(getattr(mm, name, None), HOOKED, False)) for name in WRAPPERS}


def check_hooks() -> list[str]:
    """At each LLM node: the wrappers still in place, or put back (logged) when ComfyUI restored
    the originals after a prompt; the names wrapped again."""
    again = install()
    if again:
        log.warning(
            "mangaka: ComfyUI had put back its own %s (it undoes custom nodes' changes after a "
            "prompt); wrapped again, so the LLM keeps its place in ComfyUI's memory management",
            ", ".join(again),
        )
    return again
