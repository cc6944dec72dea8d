"""The example ``manga_page`` workflow, whole, in a real ComfyUI on the test models: its own overhead.

The server is the comfy test tier's (``devtools/comfy_server.py``: ComfyUI 0.3.75 from the cache
``tests/comfy_env.py`` builds, never built or downloaded here), started in a throwaway base
directory with this checkout linked as the pack. The models are the tests': the tiny random-weight
qwen35moe and a random-weight SD1.5 checkpoint, so the figure is the workflow's machinery (the
Screenwriter's calls, prompts, sampling per panel, decoding, lettering, saving), not a real model.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ...errors import MangakaError
from ...paths import PACK_ROOT
from ..comfy_server import (
    PACK_FOLDER,
    ComfyServer,
    ComfyStartError,
    ComfyUnavailable,
    find_install,
    write_tiny_checkpoint,
)
from .common import median, tiny_model

log = logging.getLogger(__name__)

WORKFLOW = PACK_ROOT / "example_workflows" / "api" / "manga_page.json"
LLM_FILE = "tiny-qwen35moe.gguf"
PANELS = 3
RUN_TIMEOUT = 900.0
PREVIEW = "mangaka-bench-preview"  # one node added: the sampled panels, to count them
KEYS = ("manga_page_seconds", "manga_page_first_seconds", "manga_page_panels")


def manga_page_run(threads: int, timed: int) -> dict[str, Any]:
    """One cold run of the example (everything loads), then ``timed`` warm ones: each a new
    Screenwriter seed, so ComfyUI's cache skips only the two loaders. ``None`` figures, with a
    warning naming why, when there is no ComfyUI cache."""
    try:
        install = find_install(setup=False)
    except ComfyUnavailable as exc:
        reason = str(exc).strip().splitlines()[0]
        log.warning("no ComfyUI (%s); run `python tests/comfy_env.py` for the manga_page figures", reason)
        return dict.fromkeys(KEYS)
    with tempfile.TemporaryDirectory(prefix="mangaka-bench-comfy-") as tmp:
        base = Path(tmp)
        llm_dir = base / "models" / "LLM"
        llm_dir.mkdir(parents=True)
        llm = tiny_model("qwen35moe-32k", arch="qwen35moe", context_length=32768)  # remote's too
        shutil.copyfile(llm, llm_dir / LLM_FILE)
        server = ComfyServer(install, base, {PACK_FOLDER: PACK_ROOT})
        try:
            server.start()
        except ComfyStartError as exc:
            raise MangakaError(f"bench: ComfyUI did not start for manga_page: {exc}") from None
        try:
            prompt = workflow(threads, write_tiny_checkpoint(server))
            first, panels = run_once(server, prompt, seed=0)
            seconds = [run_once(server, prompt, seed=seed)[0] for seed in range(1, timed + 1)]
        finally:
            server.stop()
    return {
        "manga_page_seconds": median(seconds),
        "manga_page_first_seconds": first,
        "manga_page_panels": panels,
    }


def workflow(threads: int, checkpoint: str) -> dict[str, Any]:
    """The example's API twin on the test models (small latents, two steps), plus a preview of the
    sampled panels; every other input is the example's own."""
    prompt: dict[str, Any] = json.loads(WORKFLOW.read_text(encoding="utf-8"))
    test_models: dict[str, dict[str, Any]] = {
        "MangakaLoadLLM": {"model": LLM_FILE, "threads": threads, "gpu_layers": 0},
        "MangakaScreenwriter": {
            "panels": PANELS,
            "dialogue_lines": 2,
            "max_characters": 3,
            "sampling": "greedy",
        },
        "CheckpointLoaderSimple": {"ckpt_name": checkpoint},
        "EmptyLatentImage": {"width": 64, "height": 96},
        "KSampler": {"steps": 2},
    }
    decoded = None
    for node_id, node in prompt.items():
        node["inputs"].update(test_models.get(node["class_type"], {}))
        if node["class_type"] == "VAEDecode":
            decoded = node_id
    if decoded is None:
        raise MangakaError(f"bench: {WORKFLOW} has no VAEDecode node")
    prompt[PREVIEW] = {"class_type": "PreviewImage", "inputs": {"images": [decoded, 0]}}
    return prompt


def run_once(server: ComfyServer, prompt: dict[str, Any], seed: int) -> tuple[float, int]:
    """The workflow queued with this Screenwriter seed: seconds from POST to its finished
    ``/history`` entry, and the panels the sampler drew."""
    writer = next(k for k, node in prompt.items() if node["class_type"] == "MangakaScreenwriter")
    prompt[writer]["inputs"]["seed"] = seed
    result = server.run_prompt(prompt, timeout=RUN_TIMEOUT)
    if result.status != "success":
        raise MangakaError(f"bench: the manga_page workflow did not finish: {result.describe()}")
    if any(writer in data.get("nodes", []) for data in result.of_type("execution_cached")):
        raise MangakaError("bench: ComfyUI took the Screenwriter's output from its cache; nothing was timed")
    log.info("bench: manga_page (seed %d) in %.1f s", seed, result.elapsed)
    return result.elapsed, len(result.outputs.get(PREVIEW, {}).get("images", []))
