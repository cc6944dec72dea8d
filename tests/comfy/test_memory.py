"""The LLM in ComfyUI's memory management, in a real ComfyUI under memory pressure.

A second server runs with this pack and a test-only pack, ``small_gpu_double``: a test double
for a small GPU (ComfyUI runs on the CPU here). It replaces ``get_free_memory`` with a device of
``MANGAKA_TEST_GPU_BYTES`` less what ComfyUI's models and our LLM hold. That total is set from
ComfyUI's own figures for the tiny checkpoint (``checkpoint_sizes``): the text encoder and
ComfyUI's inference reserve fit, but not with the LLM beside them. So manga_page's first CLIP load
has to free the LLM, and ComfyUI's log says so before it loads anything.
"""

from __future__ import annotations

import copy
import re
import time

import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.llm.gguf_info import read_gguf_info
from mangaka.llm.memory import kv_cache_bytes
from tests.comfy.harness import CHECKOUT, PACK_FOLDER, checkpoint_sizes, tiny_checkpoint_file
from tests.comfy.support import MODEL, tiny_prompt, twin, workflow

CONTEXT = 32768  # manga_page's, and the tiny model's trained length
RELEASED = re.compile(rf"mangaka: released {re.escape(MODEL)} \((\d+) MB\) for (\S+): (-?\d+) MB free")
LOADED = f"loaded {MODEL}:"

SMALL_GPU = '''"""Test double: a small GPU, for tests/comfy/test_memory.py (ComfyUI runs with --cpu).

``comfy.model_management.get_free_memory`` answers MANGAKA_TEST_GPU_BYTES less what ComfyUI's
loaded models hold (``loaded_size``) and what Mangaka's loaded LLMs hold (its engine's
``loaded_bytes``), for any device."""

import os
import sys

import comfy.model_management as mm

TOTAL = float(os.environ["MANGAKA_TEST_GPU_BYTES"])


def _llm_bytes():
    engines = {
        id(module): module
        for name, module in list(sys.modules.items())
        if name.endswith("mangaka.llm.loading") and hasattr(module, "loaded_bytes")
    }
    return sum(module.loaded_bytes() for module in engines.values())


def get_free_memory(dev=None, torch_free_too=False):
    comfy_bytes = sum(m.model_loaded_memory() for m in mm.current_loaded_models if m.model is not None)
    free = TOTAL - comfy_bytes - _llm_bytes()
    return (free, free) if torch_free_too else free


mm.get_free_memory = get_free_memory
NODE_CLASS_MAPPINGS = {}
'''


@pytest.fixture(scope="module")
def small_gpu(comfy_factory, comfy_install, tmp_path_factory):
    """A server whose pretend GPU holds the tiny checkpoint's text encoder and ComfyUI's
    reserve, with half the LLM's bytes to spare: not the LLM as well."""
    tmp = tmp_path_factory.mktemp("small-gpu")
    double = tmp / "small_gpu_double"
    double.mkdir()
    (double / "__init__.py").write_text(SMALL_GPU, encoding="utf-8")
    checkpoint = tiny_checkpoint_file(comfy_install, tmp / "checkpoints")
    sizes = checkpoint_sizes(comfy_install, checkpoint)
    model = write_model(tmp / "LLM" / MODEL, "qwen35moe", context_length=CONTEXT)
    llm = model.stat().st_size + kv_cache_bytes(read_gguf_info(model), CONTEXT)
    return _pretend_gpu(comfy_factory, double, model, checkpoint, sizes["clip"] + sizes["reserve"] + llm // 2)


def _pretend_gpu(comfy_factory, double, model, checkpoint, total: int):
    """A server with the pack and the small-GPU double over ``total`` bytes, the LLM and the
    checkpoint in its model folders."""
    packs = {PACK_FOLDER: CHECKOUT, "small_gpu_double": double}
    server = comfy_factory(packs=packs, env={"MANGAKA_TEST_GPU_BYTES": str(int(total))})
    assert server.import_failures() == [], server.log_tail()
    for folder, path in (("LLM", model), ("checkpoints", checkpoint)):
        (server.base_dir / "models" / folder).mkdir(parents=True, exist_ok=True)
        (server.base_dir / "models" / folder / path.name).symlink_to(path)
    server.checkpoint = checkpoint.name
    server.double = double
    return server


def _manga_page(server, seed: int) -> dict:
    prompt = tiny_prompt(copy.deepcopy(twin("manga_page")), panels=3)
    for node in prompt.values():
        inputs = node["inputs"]
        if node["class_type"] == "CheckpointLoaderSimple":
            inputs["ckpt_name"] = server.checkpoint
        elif node["class_type"] == "EmptyLatentImage":
            inputs.update(width=64, height=96)
        elif node["class_type"] == "KSampler":
            inputs["steps"] = 2
        elif node["class_type"] == "MangakaScreenwriter":
            inputs["seed"] = seed
    return prompt


def test_the_llm_is_released_before_comfyui_loads_its_models_and_reloaded_on_next_use(small_gpu):
    server = small_gpu
    result = server.run_prompt(_manga_page(server, seed=0), timeout=600)
    assert result.status == "success", result.describe()
    log = server.log_text()
    released = RELEASED.search(log)
    assert released, server.log_tail(80)
    assert released.group(2) == "SD1ClipModel"  # the first model the page needs
    requested = log.find("Requested to load")
    assert 0 <= log.find(LOADED) < released.start() < requested, server.log_tail(80)
    assert log.count(LOADED) == 1
    # Again with another seed: the Screenwriter loads the LLM again, and it is freed again.
    result = server.run_prompt(_manga_page(server, seed=1), timeout=600)
    assert result.status == "success", result.describe()
    log = server.log_text()
    assert log.count(LOADED) == 2 and len(RELEASED.findall(log)) == 2, server.log_tail(80)
    assert server.get_json("/mangaka/llm")["loaded"] == []


def test_release_after_each_run_frees_the_llm_when_the_screenwriter_is_done(small_gpu):
    server = small_gpu
    after = f"mangaka: released {MODEL} "
    before_loads, before_releases = server.log_text().count(LOADED), server.log_text().count(after)
    for seed in (0, 1):
        prompt = workflow(lora="none", memory="release after each run")
        prompt["2"]["inputs"]["seed"] = seed
        result = server.run_prompt(prompt, timeout=300)
        assert result.status == "success", result.describe()
        assert server.get_json("/mangaka/llm")["loaded"] == []
    log = server.log_text()
    assert log.count(LOADED) == before_loads + 2  # loaded for each run
    assert log.count(after) == before_releases + 2
    assert "after Screenwriter (release after each run)" in log


def test_the_doctor_node_checks_the_llm_and_a_checkpoint_together(small_gpu):
    prompt = {
        "1": {
            "class_type": "MangakaDoctor",
            "inputs": {"model": MODEL, "context": 4096, "checkpoint": small_gpu.checkpoint},
        }
    }
    result = small_gpu.run_prompt(prompt, timeout=120)
    assert result.status == "success", result.describe()
    [line] = [x for x in result.outputs["1"]["text"][0].splitlines() if "with checkpoint:" in x]
    assert f"{MODEL} at 4096 tokens" in line and small_gpu.checkpoint in line and "GiB" in line, line


def _image_only(server, seed: int) -> dict:
    """A plain image run (no node of the pack): the tiny checkpoint, two steps, a preview."""
    return {
        "1": {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": server.checkpoint}},
        "2": {"class_type": "CLIPTextEncode", "inputs": {"text": f"a lantern shop {seed}", "clip": ["1", 1]}},
        "3": {"class_type": "CLIPTextEncode", "inputs": {"text": "blurry", "clip": ["1", 1]}},
        "4": {"class_type": "EmptyLatentImage", "inputs": {"width": 64, "height": 64, "batch_size": 1}},
        "5": {
            "class_type": "KSampler",
            "inputs": {
                "model": ["1", 0],
                "positive": ["2", 0],
                "negative": ["3", 0],
                "latent_image": ["4", 0],
                "seed": seed,
                "steps": 2,
                "cfg": 1.0,
                "sampler_name": "euler",
                "scheduler": "normal",
                "denoise": 1.0,
            },
        },
        "6": {"class_type": "VAEDecode", "inputs": {"samples": ["5", 0], "vae": ["1", 2]}},
        "7": {"class_type": "PreviewImage", "inputs": {"images": ["6", 0]}},
    }


def _screenwriter_only(seed: int) -> dict:
    prompt = workflow(lora="none")
    prompt["2"]["inputs"]["seed"] = seed
    return prompt


# ComfyUI 0.3.75's own noise, not the pack's: a SQLAlchemy connection to its SQLite database,
# created on the main thread and never closed, is finalized by the garbage collector on whichever
# thread collects it; on the prompt worker, SQLite refuses, and SQLAlchemy logs both tracebacks
# ("Exception during reset or similar", "Exception terminating connection"). When the collector
# runs depends on every allocation before it, so any change to the pack can move it into a test.
_SQLITE_FINALIZER = re.compile(
    r"^(?:Exception (?:during reset or similar|terminating connection[^\n]*)"
    r"|During handling of the above exception, another exception occurred:)\n"
    r"(?:(?:Traceback \(most recent call last\):|  [^\n]*|During handling of the above exception, "
    r"another exception occurred:|)\n)*?"
    r"sqlite3\.ProgrammingError: SQLite objects created in a thread can only be used in that same "
    r"thread\.[^\n]*\n",
    re.MULTILINE,
)


def without_sqlite_finalizer_noise(log: str) -> str:
    """The server log without ComfyUI's SQLite-finalizer tracebacks (above); anything else stays."""
    previous = None
    while previous != log:
        previous, log = log, _SQLITE_FINALIZER.sub("", log)
    return log


ASKED = re.compile(rf"mangaka: asking ComfyUI for (\d+) MB on cpu before loading {re.escape(MODEL)}")
UNLOADED = re.compile(rf"mangaka: ComfyUI unloaded (.+?) \((\d+) MB\) for {re.escape(MODEL)}")


@pytest.fixture(scope="module")
def tight_gpu(small_gpu, comfy_factory, comfy_install):
    """Like ``small_gpu``, but the pretend GPU holds the checkpoint's three models with only half
    the LLM to spare: after an image run, ComfyUI must unload for the LLM as well."""
    models = small_gpu.base_dir / "models"
    checkpoint = (models / "checkpoints" / small_gpu.checkpoint).resolve()
    model = (models / "LLM" / MODEL).resolve()
    sizes = checkpoint_sizes(comfy_install, checkpoint)
    llm = model.stat().st_size + kv_cache_bytes(read_gguf_info(model), CONTEXT)
    total = sizes["clip"] + sizes["unet"] + sizes["vae"] + llm // 2
    return _pretend_gpu(comfy_factory, small_gpu.double, model, checkpoint, total)


def test_image_then_screenwriter_then_image_twice_each_makes_room_for_the_other(tight_gpu):
    """Both ways, twice: the Screenwriter's load asks ComfyUI for the LLM's room and ComfyUI
    unloads the image models it keeps for it (logged); the next image run releases the LLM
    (logged). Everything runs; nothing is out of memory."""
    server = tight_gpu
    start = len(server.log_text())
    for round_ in range(2):
        # The Screenwriter's prompt holds the image nodes too, unchanged: ComfyUI keeps their
        # models alive and loaded (0.3.75 drops the models of nodes a new prompt lacks; 0.38 keeps
        # them resident anyway), so the LLM's load finds them in its way.
        beside = {
            **_image_only(server, round_),
            **{f"1{k}": v for k, v in _screenwriter_only(10 + round_).items()},
        }
        for node in beside.values():
            node["inputs"] = {
                k: [f"1{v[0]}", v[1]] if isinstance(v, list) and k in ("llm", "screenplay") else v
                for k, v in node["inputs"].items()
            }
        for prompt in (_image_only(server, round_), beside, _image_only(server, 5 + round_)):
            result = server.run_prompt(prompt, timeout=600)
            assert result.status == "success", result.describe()
    log = server.log_text()[start:]
    assert len(ASKED.findall(log)) == 2, server.log_tail(80)
    unloaded = UNLOADED.findall(log)
    assert len(unloaded) == 2 and all(int(mb) > 0 for _, mb in unloaded), server.log_tail(80)
    assert len(RELEASED.findall(log)) == 2, server.log_tail(80)
    order = [m.start() for m in (*ASKED.finditer(log), *RELEASED.finditer(log))]
    asked, released = [m.start() for m in ASKED.finditer(log)], [m.start() for m in RELEASED.finditer(log)]
    assert asked[0] < released[0] < asked[1] < released[1], order
    ours = without_sqlite_finalizer_noise(log)
    assert "out of memory" not in ours.lower() and "Traceback" not in ours, ours[-4000:]


HOOK_BREAKER = '''"""FAKE of ComfyUI 0.38's hook breaker, for tests/comfy/test_memory.py: 0.3.75 puts back
only ``cast_to`` after loading custom nodes and after prompts (``hook_breaker_ac10a0``); 0.38 puts back
the memory functions custom nodes wrap. This pack adds the three functions Mangaka wraps to what
is put back: ComfyUI's own, unwrapped if Mangaka (loaded before or after it: ComfyUI loads custom
nodes in directory order) has wrapped them already; it logs each time they are put back."""

import logging

import comfy.model_management as mm
import hook_breaker_ac10a0

for name in ("load_models_gpu", "free_memory", "unload_all_models"):
    original = getattr(mm, name)
    while getattr(original, "_mangaka_hooked", False):
        original = original.__wrapped__
    hook_breaker_ac10a0.SAVED_FUNCTIONS.append((mm, name, original))
_restore = hook_breaker_ac10a0.restore_functions


def restore_functions():
    _restore()
    logging.info("fake hook breaker: put back load_models_gpu, free_memory, unload_all_models")


hook_breaker_ac10a0.restore_functions = restore_functions
NODE_CLASS_MAPPINGS = {}
'''
PUT_BACK = "fake hook breaker: put back"
WRAPPED_AGAIN = "mangaka: ComfyUI had put back its own load_models_gpu, free_memory, unload_all_models"


def test_hooks_put_back_after_each_prompt_are_wrapped_again_at_the_llm_node(
    comfy_factory, small_gpu, tmp_path
):
    """Two Screenwriter prompts in a row on a server whose (fake, 0.38-shaped) hook breaker puts
    the memory functions back at start-up and after each prompt: each time, they are wrapped again
    before the LLM runs (when the prompt is queued, and checked again at the LLM nodes), logged
    once; after each prompt the breaker's putting back is seen in /mangaka/llm's ``hooks``."""
    breaker = tmp_path / "aaa_fake_hook_breaker"
    breaker.mkdir()
    (breaker / "__init__.py").write_text(HOOK_BREAKER, encoding="utf-8")
    packs = {"aaa_fake_hook_breaker": breaker, PACK_FOLDER: CHECKOUT}
    server = comfy_factory(packs=packs)
    assert server.import_failures() == [], server.log_tail()
    (server.base_dir / "models" / "LLM").mkdir(parents=True, exist_ok=True)
    source = small_gpu.base_dir / "models" / "LLM" / MODEL
    (server.base_dir / "models" / "LLM" / MODEL).symlink_to(source.resolve())
    assert PUT_BACK in server.log_text()  # at start-up, after the custom nodes loaded
    assert server.get_json("/mangaka/llm")["hooks"] == dict.fromkeys(HOOKS, False)
    for seed in (0, 1):
        put_back = server.log_text().count(PUT_BACK)
        result = server.run_prompt(_screenwriter_only(seed), timeout=300)
        assert result.status == "success", result.describe()
        assert server.log_text().count(WRAPPED_AGAIN) == seed + 1, server.log_tail(60)
        deadline = time.monotonic() + 60  # the breaker puts them back once the prompt's gc runs
        while server.log_text().count(PUT_BACK) == put_back and time.monotonic() < deadline:
            time.sleep(0.2)
        assert server.log_text().count(PUT_BACK) == put_back + 1, server.log_tail(60)
        assert server.get_json("/mangaka/llm")["hooks"] == dict.fromkeys(HOOKS, False)


HOOKS = ("load_models_gpu", "free_memory", "unload_all_models")
