"""The pack's part in ComfyUI's memory management against a FAKE ``comfy.model_management`` shaped
like ComfyUI 0.38's (issue 29), for what the 0.3.75 the comfy tier runs cannot show:

- ``free_memory(memory_required, device, keep_loaded, for_dynamic, pins_required, ram_required)``,
  ``device=None`` meaning every device; ``InterruptProcessingException`` a ``BaseException``;
- a hook breaker that puts back the functions custom nodes replaced, after a prompt.

The fake (``FakeManager``) is a test double, named so: a memory pool, ComfyUI models that take
room in it and are unloaded (most recent last) when ``free_memory`` asks, and a record of every
call. The pack's ``nodes/memory.py`` is loaded from this checkout as it is in ComfyUI, with the
fake in ``sys.modules``; the LLM is the tiny random-weight model, loaded by the real engine.
"""

from __future__ import annotations

import importlib
import logging
import sys
import types
from pathlib import Path

import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.llm.base import CallContext

ROOT = Path(__file__).resolve().parents[2]
MB = 1024 * 1024
PACKAGE = "mangaka_pack_under_fake_comfy"


class FakeDevice:
    def __init__(self, kind: str) -> None:
        self.type = kind

    def __repr__(self) -> str:
        return f"device(type={self.type!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakeDevice) and other.type == self.type

    def __hash__(self) -> int:
        return hash(self.type)


class FakeModel:
    """A ComfyUI model (the patcher and its inner model are one object here)."""

    def __init__(self, name: str, size: int, device: FakeDevice) -> None:
        self.name, self.size, self.load_device = name, size, device
        self.model = type(name, (), {})()
        self.loaded = 0

    def model_size(self) -> int:
        return self.size

    def loaded_size(self) -> int:
        return self.loaded


class FakeLoaded:
    def __init__(self, model: FakeModel) -> None:
        self.model, self.device = model, model.load_device

    def model_loaded_memory(self) -> int:
        return self.model.loaded


class FakeInterrupt(BaseException):  # 0.38: InterruptProcessingException is a BaseException
    pass


def fake_manager(total: int, llm_bytes) -> types.ModuleType:
    """A module shaped like 0.38's ``comfy.model_management`` over a pool of ``total`` bytes,
    shared by ComfyUI's models and the LLM (``llm_bytes()``)."""
    mm = types.ModuleType("comfy.model_management")
    mm.calls = []
    mm.current_loaded_models = []
    gpu, cpu = FakeDevice("cuda"), FakeDevice("cpu")
    mm.InterruptProcessingException = FakeInterrupt

    def get_torch_device():
        return gpu

    def get_free_memory(dev=None, torch_free_too=False):
        """One pool of ``total`` per device: ComfyUI's models there and the LLM placed there."""
        dev = dev or gpu
        held = sum(m.model_loaded_memory() for m in mm.current_loaded_models if m.device == dev)
        free = total - held - llm_bytes("gpu" if dev.type == "cuda" else "ram")
        return (free, free) if torch_free_too else free

    def extra_reserved_memory():
        return 16 * MB

    def minimum_inference_memory():
        return 32 * MB

    def free_memory(
        memory_required, device, keep_loaded=(), for_dynamic=False, pins_required=0, ram_required=0
    ):
        mm.calls.append(
            {
                "need": memory_required,
                "device": device,
                "for_dynamic": for_dynamic,
                "ram_required": ram_required,
            }
        )
        for loaded in list(reversed(mm.current_loaded_models)):
            if get_free_memory(device) >= memory_required:
                break
            if loaded not in keep_loaded and (device is None or loaded.device == device):
                loaded.model.loaded = 0
                mm.current_loaded_models.remove(loaded)

    def load_models_gpu(
        models,
        memory_required=0,
        force_patch_weights=False,
        minimum_memory_required=None,
        force_full_load=False,
    ):
        for model in models:
            free_memory(model.size + minimum_inference_memory(), model.load_device)
            model.loaded = model.size
            mm.current_loaded_models.append(FakeLoaded(model))

    def unload_all_models():
        free_memory(1e30, None)

    for func in (get_torch_device, get_free_memory, extra_reserved_memory, minimum_inference_memory,
                 free_memory, load_models_gpu, unload_all_models):  # fmt: skip
        setattr(mm, func.__name__, func)
    mm.gpu, mm.cpu = gpu, cpu
    return mm


@pytest.fixture
def pack(tmp_path, monkeypatch):
    """nodes/memory.py under the fake manager, with its own copy of the engine (as in ComfyUI)."""
    engine = importlib.import_module("mangaka.llm.loading")
    llm_bytes = lambda where: sys.modules[f"{PACKAGE}.mangaka.llm.loading"].loaded_bytes(where)  # noqa: E731
    mm = fake_manager(900 * MB, llm_bytes)
    comfy = types.ModuleType("comfy")
    comfy.model_management = mm
    torch = types.ModuleType("torch")  # the fake's devices; the pack's .venv has no torch
    torch.device = FakeDevice
    monkeypatch.setitem(sys.modules, "comfy", comfy)
    monkeypatch.setitem(sys.modules, "comfy.model_management", mm)
    if importlib.util.find_spec("torch") is None:
        monkeypatch.setitem(sys.modules, "torch", torch)
    for name, path in ((PACKAGE, ROOT), (f"{PACKAGE}.nodes", ROOT / "nodes")):
        package = types.ModuleType(name)
        package.__path__ = [str(path)]
        monkeypatch.setitem(sys.modules, name, package)
    memory = importlib.import_module(f"{PACKAGE}.nodes.memory")
    loading = sys.modules[f"{PACKAGE}.mangaka.llm.loading"]
    assert loading is not engine  # the pack's own copy, as ComfyUI imports it
    memory.install()
    yield types.SimpleNamespace(memory=memory, mm=mm, loading=loading, tmp=tmp_path)
    loading.on_load(None)
    loading.release_models()
    for name in [n for n in sys.modules if n.startswith(PACKAGE)]:
        del sys.modules[name]


def tiny(folder: Path) -> Path:
    return write_model(folder / "tiny-qwen35moe.gguf", "qwen35moe", context_length=4096)


def llm(pack, model: Path):
    options = pack.loading.LoadOptions(n_ctx=4096, n_threads=1, n_gpu_layers=-1)  # ComfyUI's default
    return pack.loading.load_model(model, options)


@pytest.mark.parametrize("where", ["gpu", "ram"])
def test_image_then_llm_then_image_twice_each_side_makes_room_and_says_so(pack, caplog, monkeypatch, where):
    """The LLM's load asks the manager for its weights + KV cache + recurrent state (+ reserve),
    with 0.38's keywords, on the device it goes to; the image model there is unloaded for it,
    logged; the next image load releases the LLM, logged. Twice, with nothing over the pool.
    "gpu": as a CUDA build places it (this CPU build is told it offloads; llama.cpp still runs it
    on the CPU); "ram": as with ComfyUI on the CPU, ``ram_required`` given too."""
    monkeypatch.setattr(pack.loading, "gpu_offload", lambda: where == "gpu")
    mm, model = pack.mm, tiny(pack.tmp)
    request = pack.loading.room_request(
        model,
        pack.loading.check_model_file(model),
        pack.loading.LoadOptions(n_ctx=4096, n_threads=1, n_gpu_layers=-1),
    )
    assert request.weights == model.stat().st_size and request.kv_cache > 0 and request.recurrent > 0
    device = mm.gpu if where == "gpu" else mm.cpu
    assert request.where == where
    unet = FakeModel("FakeUNet", 900 * MB - request.total, device)  # the pool holds one or the other
    caplog.set_level(logging.INFO, logger="mangaka")
    for _ in range(2):
        mm.load_models_gpu([unet])  # the image run
        assert unet.loaded == unet.size
        mm.calls.clear()
        llm(pack, model)  # the Screenwriter run: the LLM loads
        [call] = mm.calls
        assert call["need"] == request.total + mm.extra_reserved_memory() and call["device"] == device
        assert call["for_dynamic"] is False
        assert call["ram_required"] == (request.total if where == "ram" else 0)
        assert unet.loaded == 0, "the image model was not unloaded for the LLM"
        assert mm.get_free_memory(device) >= 0
        mm.load_models_gpu([unet])  # the next image run: the LLM goes
        assert pack.loading.resident_models() == [] and mm.get_free_memory(device) >= 0
    text = caplog.text
    assert text.count("mangaka: asking ComfyUI for") == 2
    assert text.count(f"mangaka: ComfyUI unloaded FakeUNet ({unet.size / MB:.0f} MB) for {model.name}") == 2
    assert text.count(f"mangaka: released {model.name} ") == 2 and "for FakeUNet" in text


def test_free_memory_for_every_device_and_for_ram_releases_the_llm(pack, caplog):
    mm, model = pack.mm, tiny(pack.tmp)
    caplog.set_level(logging.INFO, logger="mangaka")
    llm(pack, model)
    mm.free_memory(1e30, None)  # 0.38: device=None is every device
    assert pack.loading.resident_models() == []
    llm(pack, model)
    mm.free_memory(0, mm.gpu, ram_required=1e30)  # RAM wanted (the RAM-pressure cache policy)
    assert pack.loading.resident_models() == [] and "for ComfyUI's RAM" in caplog.text
    llm(pack, model)
    mm.free_memory(1, mm.cpu, for_dynamic=True)  # room for a streamed model, and there is room
    assert len(pack.loading.resident_models()) == 1


def test_hooks_put_back_by_comfyui_are_wrapped_again_at_the_next_llm_node(pack, caplog):
    mm, memory = pack.mm, pack.memory
    assert memory.hooks_in_place() == dict.fromkeys(memory.WRAPPERS, True)
    assert memory.check_hooks() == []
    originals = {name: getattr(mm, name).__wrapped__ for name in memory.WRAPPERS}
    for name, original in originals.items():  # what hook_breaker_ac10a0.restore_functions does
        setattr(mm, name, original)
    assert memory.hooks_in_place() == dict.fromkeys(memory.WRAPPERS, False)
    caplog.set_level(logging.INFO, logger="mangaka")
    assert sorted(memory.check_hooks()) == sorted(memory.WRAPPERS)
    assert "ComfyUI had put back its own load_models_gpu, free_memory, unload_all_models" in caplog.text
    assert memory.hooks_in_place() == dict.fromkeys(memory.WRAPPERS, True)
    assert memory.accepts("ram_required") and memory.accepts("for_dynamic")
    llm(pack, tiny(pack.tmp))
    mm.unload_all_models()  # wrapped again: the LLM goes with ComfyUI's models
    assert pack.loading.resident_models() == []


def test_an_interrupt_that_is_a_base_exception_stops_generation_and_the_model_stays_usable(pack):
    """0.38's InterruptProcessingException (a BaseException) raised by the progress bar mid-
    generation reaches ComfyUI as it is; the next run on the same model works."""
    from mangaka.llm.base import PRESETS

    inprocess = importlib.import_module(f"{PACKAGE}.mangaka.llm.inprocess")  # the pack's own copy
    generator = inprocess.LlamaCppLLM(tiny(pack.tmp), inprocess.LoadOptions(n_ctx=4096, n_threads=1))
    calls = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        if len(calls) == 3:
            raise pack.mm.InterruptProcessingException()

    messages = [{"role": "user", "content": "Say something."}]
    with pytest.raises(FakeInterrupt):
        generator.complete(
            messages, sampling=PRESETS["greedy"], max_tokens=64, context=CallContext(on_progress=progress)
        )
    again = generator.complete(messages, sampling=PRESETS["greedy"], max_tokens=8)
    assert again.usage.completion_tokens > 0
