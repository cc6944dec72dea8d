"""What the comfy tier's tests share: the tiny models' file names, the sample chapter and the
screenplay schema, the smallest Screenwriter workflow in API format, and the ``motion_comic`` example
on the storyboard cards. The ``server`` fixture that
puts those models in place is in ``conftest.py``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.comfy.examples import twin_path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "screenplay.schema.json").read_text())
CHAPTER = (ROOT / "prompts" / "samples" / "demo_chapter.en.txt").read_text()
MODEL = "tiny-qwen35moe.gguf"
LORA = "tiny-qwen35moe-lora.gguf"
# The motion_comic example's image half: Motion Comic films the storyboard cards without it.
IMAGE_HALF = {"CheckpointLoaderSimple", "CLIPTextEncode", "EmptyLatentImage", "KSampler", "VAEDecode"}


def workflow(chapter: str = CHAPTER, panels: int = 2, dialogue: int = 2, model: str = MODEL, **load) -> dict:
    return {
        "1": {
            "class_type": "MangakaLoadLLM",
            "inputs": {
                "model": model,
                "context": 32768,
                "gpu_layers": 0,
                "threads": 1,
                "flash_attention": "auto",
                "lora": LORA,
                "lora_strength": 1.0,
                **load,
            },
        },
        "2": {
            "class_type": "MangakaScreenwriter",
            "inputs": {
                "llm": ["1", 0],
                "chapter": chapter,
                "language": "en",
                "panels": panels,
                "dialogue_lines": dialogue,
                "max_characters": 4,
                "sampling": "greedy",
                "seed": 0,
                "max_attempts": 3,
            },
        },
        "3": {
            "class_type": "MangakaSaveScreenplay",
            "inputs": {"screenplay": ["2", 0], "filename_prefix": "mangaka/test"},
        },
    }


def twin(name: str) -> dict:
    """An example workflow's API-format twin (``example_workflows/api/``)."""
    return json.loads(twin_path(name).read_text(encoding="utf-8"))


def tiny_prompt(prompt: dict, panels: int = 2) -> dict:
    """``prompt`` on the tiny test model: one thread, the CPU, few panels, lines and characters."""
    for node in prompt.values():
        if node["class_type"] == "MangakaLoadLLM":
            node["inputs"].update(model=MODEL, threads=1, gpu_layers=0)
        if node["class_type"] == "MangakaScreenwriter":
            node["inputs"].update(panels=panels, dialogue_lines=2, max_characters=3, sampling="greedy")
        if node["class_type"] == "MangakaSeriesCast":
            node["inputs"].update(max_characters=3, sampling="greedy")
    return prompt


def node_of(prompt: dict, class_type: str) -> str:
    """The id of ``prompt``'s (first) node of ``class_type``."""
    return next(k for k, v in prompt.items() if v["class_type"] == class_type)


def motion_comic_cards(panels: int = 2, size: str = "1080x1080", fps: int = 12) -> dict:
    """The ``motion_comic`` example on the tiny model with its image half taken out: Motion Comic
    films the storyboard cards, at ``size`` and ``fps``, and core Save Video writes the MP4."""
    prompt = tiny_prompt(twin("motion_comic"), panels=panels)
    for key in [k for k, v in prompt.items() if v["class_type"] in IMAGE_HALF]:
        del prompt[key]
    comic = prompt[node_of(prompt, "MangakaMotionComic")]["inputs"]
    del comic["images"]
    comic.update(size=size, fps=fps)
    return prompt
