"""The example workflows, as specs the real front end turns into ``example_workflows/*.json``.

    .venv/bin/python tests/comfy/examples.py        # rebuild every example, its API twin and thumbnail

A spec lists nodes (type, column, widget values by name) and links (by output and input name).
The script starts a ComfyUI server with the pack, builds each graph in ComfyUI's own web page
(``browser.ComfyPage.build``: the front end's node classes, so widget order and defaults are the
front end's), saves the UI-format file, loads it back, exports ``app.graphToPrompt()`` as the
API-format twin (``example_workflows/api/<name>.json``) and screenshots the graph as the
thumbnail (``<name>.jpg``). ``tests/comfy/test_examples.py`` fails when a UI file and its twin
disagree.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "example_workflows"
TWINS = EXAMPLES / "api"
CHAPTER = (ROOT / "prompts" / "samples" / "demo_chapter.en.txt").read_text(encoding="utf-8")

LLM_MODEL = "Qwen3.5-35B-A3B-Q4_K_M.gguf"
CHECKPOINT = "sd_xl_base_1.0.safetensors"
NOTE_COLOR = {"color": "#432", "bgcolor": "#653"}


def _llm(node_id: int, col: int) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "MangakaLoadLLM",
        "col": col,
        "widgets": {
            "model": LLM_MODEL,
            "context": 32768,
            "gpu_layers": -1,
            "threads": 0,
            "flash_attention": "auto",
            "lora": "none",
            "lora_strength": 1.0,
            "memory": "keep loaded",
        },
    }


def _writer(node_id: int, col: int, panels: int = 6, chapter: str = CHAPTER) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "MangakaScreenwriter",
        "col": col,
        "size": [400, 420],
        "widgets": {
            "chapter": chapter,
            "language": "auto",  # read from the chapter: a book in any language
            "panels": panels,
            "dialogue_lines": 8,
            "max_characters": 6,
            "sampling": "qwen3.5-instruct",
            "seed": 0,
            "control_after_generate": "fixed",
            "max_attempts": 3,
        },
    }


def _compose(node_id: int, col: int) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "MangakaComposePage",
        "col": col,
        "widgets": {
            "page": "A4 300dpi",
            "direction": "rtl",
            "panels_per_page": 6,
            "lettering": True,
            "vertical_text": False,
        },
    }


def _note(node_id: int, col: int, text: str, size: list[int] | None = None) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "MarkdownNote",
        "col": col,
        "size": size or [400, 220],
        "widgets": {"text": text},
        **NOTE_COLOR,
    }


MODELS_NOTE = f"""## Models

- **LLM**: a GGUF model in `ComfyUI/models/LLM/`, e.g. `{LLM_MODEL}` (Qwen3.5-35B-A3B; any
  llama.cpp chat model works). Optional LoRA adapters (`.gguf`) go in `models/llm_loras/`.
- Build llama-cpp-python for your hardware first: `python native/install.py --python <ComfyUI's python>`.
"""

STORYBOARD_NOTE = """## Storyboard

Runs on any machine: no diffusion model. The Screenwriter turns the chapter into a screenplay;
Compose Page, its `images` left empty, draws each panel as a sketch card (shot, angle, cast,
action, dialogue) made for its frame, nothing cropped, and letters them into manga pages, right to
left. Swap the cards for real images with the `manga_page` example (the Storyboard node draws the
cards one by one, all one size, to look through).
"""

MANGA_NOTE = f"""## Image model

- Put a Stable Diffusion checkpoint in `ComfyUI/models/checkpoints/` and pick it in **Load
  Checkpoint** (`{CHECKPOINT}` is a placeholder: an SDXL anime/manga checkpoint suits the
  `manga_bw` style; for Flux-like models switch SD Prompts to `natural`).
- SD Prompts outputs one prompt per panel as a list: the sampler runs once per panel in one
  queued run, and Compose Page places each image by its panel id.
- **Save Manga** writes the pages as a CBZ (comic readers), an EPUB (e-readers) and a PDF (print)
  in `ComfyUI/output/mangaka/`, marked as right-to-left manga.
"""


def storyboard() -> dict[str, Any]:
    return {
        "nodes": [
            _note(10, 0, MODELS_NOTE),
            _note(11, 0, STORYBOARD_NOTE),
            _llm(1, 0),
            _writer(2, 1),
            _compose(4, 2),
            {
                "id": 5,
                "type": "SaveImage",
                "col": 3,
                "size": [420, 600],
                "widgets": {"filename_prefix": "mangaka/storyboard"},
            },
            {
                "id": 6,
                "type": "MangakaSaveScreenplay",
                "col": 1,
                "widgets": {"filename_prefix": "mangaka/screenplay"},
            },
        ],
        "links": [
            (1, "llm", 2, "llm"),
            (2, "screenplay", 4, "screenplay"),
            (4, "pages", 5, "images"),
            (2, "screenplay", 6, "screenplay"),
        ],
    }


def _sampler(node_id: int, col: int) -> dict[str, Any]:
    """KSampler with the settings the manga_page example ships (an SDXL anime model's)."""
    widgets = {
        "seed": 0,
        "control_after_generate": "fixed",
        "steps": 25,
        "cfg": 6.0,
        "sampler_name": "euler_ancestral",
        "scheduler": "normal",
        "denoise": 1.0,
    }
    return {"id": node_id, "type": "KSampler", "col": col, "widgets": widgets}


def _save_manga(node_id: int, col: int) -> dict[str, Any]:
    """Save Manga writing all three books, right to left."""
    widgets = {
        "filename_prefix": "mangaka/manga",
        "cbz": True,
        "epub": True,
        "pdf": True,
        "direction": "rtl",
        "dpi": 300,
        "title": "",
    }
    return {"id": node_id, "type": "MangakaSaveManga", "col": col, "widgets": widgets}


def _drawn_panels(width: int, height: int) -> tuple[list[dict[str, Any]], list[tuple]]:
    """Nodes 1–9 and their links: Load LLM → Screenwriter → SD Prompts → Load Checkpoint, CLIP Text
    Encode ×2, Empty Latent Image (``width`` × ``height``), KSampler → VAE Decode (node 9's IMAGE:
    one picture per panel)."""
    nodes = [
        _llm(1, 0),
        _writer(2, 1),
        {"id": 3, "type": "MangakaScreenplayToPrompts", "col": 2,
         "widgets": {"style": "manga_bw", "mode": "tags"}},
        {"id": 4, "type": "CheckpointLoaderSimple", "col": 2, "widgets": {"ckpt_name": CHECKPOINT}},
        {"id": 5, "type": "CLIPTextEncode", "col": 3, "title": "Panel prompt"},
        {"id": 6, "type": "CLIPTextEncode", "col": 3, "title": "Negative prompt"},
        {"id": 7, "type": "EmptyLatentImage", "col": 3,
         "widgets": {"width": width, "height": height, "batch_size": 1}},
        _sampler(8, 4),
        {"id": 9, "type": "VAEDecode", "col": 4},
    ]  # fmt: skip
    links = [
        (1, "llm", 2, "llm"), (2, "screenplay", 3, "screenplay"), (4, "CLIP", 5, "clip"),
        (4, "CLIP", 6, "clip"), (3, "positive", 5, "text"), (3, "negative", 6, "text"),
        (4, "MODEL", 8, "model"), (5, "CONDITIONING", 8, "positive"), (6, "CONDITIONING", 8, "negative"),
        (7, "LATENT", 8, "latent_image"), (8, "LATENT", 9, "samples"), (4, "VAE", 9, "vae"),
    ]  # fmt: skip
    return nodes, links


def manga_page() -> dict[str, Any]:
    return {
        "nodes": [
            _note(20, 0, MODELS_NOTE),
            _note(21, 0, MANGA_NOTE),
            *_drawn_panels(832, 1216)[0],
            _compose(10, 5),
            {
                "id": 11,
                "type": "SaveImage",
                "col": 6,
                "size": [420, 600],
                "widgets": {"filename_prefix": "mangaka/page"},
            },
            _save_manga(12, 5),
        ],
        "links": [
            *_drawn_panels(0, 0)[1],
            (9, "IMAGE", 10, "images"),
            (3, "screenplay", 10, "screenplay"),
            (3, "panel_ids", 10, "panel_ids"),
            (10, "pages", 11, "images"),
            (10, "pages", 12, "pages"),
            (3, "screenplay", 12, "screenplay"),
        ],
    }


BOOK = (ROOT / "prompts" / "samples" / "demo_book.en.txt").read_text(encoding="utf-8")

BOOK_NOTE = """## A whole book in one queued run

Paste the book into **Split Chapters** (Chinese, Japanese and English chapter headings such as
Chapter 1 or Prologue, or Markdown headings; a book without headings is cut at paragraphs).
**Series Cast** first reads every chapter's cast in order into one series bible, so each person
keeps one id and one look in every chapter; the Screenwriter and Compose Page (storyboard cards
for its frames) then run once per chapter, every chapter's pages are saved, and **Save Series
Bible** saves the whole cast (edit it, put it in `input/mangaka_bibles/` and pick it as
`bible_file` for the next book). For a book that must survive restarts, or several servers, use
`python -m mangaka queue BOOK.txt --workflow example_workflows/api/storyboard.json --server URL`.
"""


def book_batch() -> dict[str, Any]:
    return {
        "nodes": [
            _note(30, 0, MODELS_NOTE),
            _note(31, 0, BOOK_NOTE, size=[400, 300]),
            _llm(1, 0),
            {
                "id": 2,
                "type": "MangakaSplitChapters",
                "col": 1,
                "size": [400, 360],
                "widgets": {"book": BOOK, "max_chars": 20000, "chapters": ""},
            },
            {
                "id": 7,
                "type": "MangakaSeriesCast",
                "col": 1,
                "widgets": {
                    "chapters": "",
                    "language": "auto",
                    "max_characters": 6,
                    "sampling": "qwen3.5-instruct",
                    "seed": 0,
                    "control_after_generate": "fixed",
                    "bible": "",
                    "bible_file": "none",
                },
            },
            _writer(3, 2, chapter=""),
            _compose(5, 3),
            {
                "id": 8,
                "type": "MangakaSaveSeriesBible",
                "col": 3,
                "widgets": {"filename_prefix": "mangaka/bible"},
            },
            {
                "id": 6,
                "type": "SaveImage",
                "col": 4,
                "size": [420, 600],
                "widgets": {"filename_prefix": "mangaka/book"},
            },
        ],
        "links": [
            (1, "llm", 7, "llm"),
            (2, "chapter_text", 7, "chapters"),
            (2, "numbers", 7, "numbers"),
            (1, "llm", 3, "llm"),
            (2, "chapter_text", 3, "chapter"),
            (2, "numbers", 3, "chapter_number"),
            (7, "bible", 3, "bible"),
            (3, "screenplay", 5, "screenplay"),
            (5, "pages", 6, "images"),
            (3, "bible", 8, "bible"),
        ],
    }


MOTION_NOTE = """## 漫剧: a motion comic

Each panel becomes a timed shot with a slow camera move (close-ups push in, wide shots pan right
to left), the lines as subtitles, one vertical 1080×1920 video through core **Save Video**.
**Voice**: connect any TTS node between **Voice Script** (`texts`, one per line, in dialogue
order: the TTS node runs once per line) and Motion Comic's `voice`; each shot then lasts as long
as its voices. Without voice, each line lasts its reading time. Without images, Motion Comic
films the storyboard cards: the chapter's timing before any diffusion runs.
"""


def motion_comic() -> dict[str, Any]:
    video = {
        "size": "1080x1920", "fps": 24, "direction": "rtl", "chars_per_second": 6.0,
        "words_per_second": 2.5, "min_shot": 2.0, "max_shot": 9.0, "pause": 0.3, "beat": 2.0,
        "crossfade": 0.25, "hold": 0.5, "camera": 1.0, "seed": 0, "control_after_generate": "fixed",
        "burn_subtitles": True, "music_volume": 0.35,
    }  # fmt: skip
    return {
        "nodes": [
            _note(40, 0, MODELS_NOTE),
            _note(41, 0, MOTION_NOTE, size=[400, 300]),
            *_drawn_panels(768, 1344)[0],
            {"id": 10, "type": "MangakaVoiceScript", "col": 4},
            {"id": 11, "type": "MangakaMotionComic", "col": 5, "widgets": video},
            {
                "id": 12,
                "type": "SaveVideo",
                "col": 6,
                "size": [420, 700],
                "widgets": {"filename_prefix": "mangaka/motion_comic", "format": "auto", "codec": "auto"},
            },
        ],
        "links": [
            *_drawn_panels(0, 0)[1],
            (3, "screenplay", 10, "screenplay"),
            (9, "IMAGE", 11, "images"),
            (3, "screenplay", 11, "screenplay"),
            (11, "video", 12, "video"),
        ],
    }


SPECS = {
    "storyboard": storyboard,
    "manga_page": manga_page,
    "book_batch": book_batch,
    "motion_comic": motion_comic,
}


def twin_path(name: str) -> Path:
    return TWINS / f"{name}.json"


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def main() -> int:
    import tempfile

    sys.path.insert(0, str(ROOT))
    from tests.comfy.browser import ComfyPage
    from tests.comfy.harness import PACK_FOLDER, ComfyServer, find_install

    with tempfile.TemporaryDirectory() as tmp:
        server = ComfyServer(find_install(), Path(tmp), {PACK_FOLDER: ROOT}).start()
        try:
            with ComfyPage(server.url) as page:
                for name, spec in SPECS.items():
                    workflow = page.build(spec())
                    write_json(EXAMPLES / f"{name}.json", workflow)
                    info = page.load(workflow, name)
                    if info["missing"] or info["errors"]:
                        raise SystemExit(f"{name}: missing {info['missing']}, errors {info['errors']}")
                    write_json(twin_path(name), page.to_prompt())
                    page.screenshot(EXAMPLES / f"{name}.jpg")
                    sys.stdout.write(f"{name}: {info['nodes']} nodes\n")
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
