"""Compose Page and Preview Page Layout inside a real ComfyUI: Storyboard → Compose Page → Save
Image gives lettered pages for a Chinese and an English screenplay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

DATA = Path(__file__).resolve().parents[1] / "unit" / "data"
SCREENPLAYS = {
    "en": (DATA / "golden_screenplay.json").read_text(encoding="utf-8"),
    "zh": (DATA / "golden_screenplay.zh.json").read_text(encoding="utf-8"),
}
LAYOUT = {
    "page": "custom",
    "width": 1240,
    "height": 1754,
    "direction": "rtl",
    "panels_per_page": 4,
    "margin": -1,
    "gutter": -1,
    "bleed": 0,
    "weighted": True,
}


def compose_prompt(
    text: str, prefix: str, *, vertical: bool = False, images_from: str = "storyboard"
) -> dict:
    prompt = {
        "1": {
            "class_type": "MangakaStoryboard",
            "inputs": {"json_text": text, "width": 512, "height": 512},
        },
        "2": {
            "class_type": "MangakaComposePage",
            "inputs": {
                "images": ["1", 0],
                "json_text": text,
                **LAYOUT,
                "lettering": True,
                "vertical_text": vertical,
                "font_size": 0,
                "border": -1,
            },
        },
        "3": {"class_type": "SaveImage", "inputs": {"images": ["2", 0], "filename_prefix": prefix}},
        "4": {"class_type": "PreviewAny", "inputs": {"source": ["2", 2]}},  # report
        "5": {"class_type": "PreviewAny", "inputs": {"source": ["2", 1]}},  # layout JSON
    }
    if images_from == "one":
        prompt["6"] = {
            "class_type": "ImageFromBatch",
            "inputs": {"image": ["1", 0], "batch_index": 0, "length": 1},
        }
        prompt["2"]["inputs"]["images"] = ["6", 0]
    return prompt


@pytest.mark.parametrize(("language", "vertical"), [("en", False), ("zh", False), ("zh", True)])
def test_storyboard_to_compose_page_gives_lettered_pages(server, language, vertical):
    text = SCREENPLAYS[language]
    panels = len(json.loads(text)["panels"])
    result = server.run_prompt(
        compose_prompt(text, f"mangaka/page_{language}", vertical=vertical), timeout=180
    )
    assert result.status == "success", result.describe()
    images = result.outputs["3"]["images"]
    assert len(images) == -(-panels // 4)  # pages of at most 4 panels
    for info in images:
        with Image.open(server.base_dir / "output" / info["subfolder"] / info["filename"]) as page:
            assert page.size == (1240, 1754)
    layout = json.loads(result.outputs["5"]["text"][0])
    assert [f["panel_id"] for p in layout["pages"] for f in p["frames"]] == [
        f"p{i + 1}" for i in range(panels)
    ]
    report = result.outputs["4"]["text"][0]
    assert "glyph" not in report and "do not fit" not in report, report


def test_compose_page_without_images_draws_each_card_whole_for_its_frame(server):
    """No images connected: each panel's storyboard card is drawn at its frame's size, so the
    frame shows the whole card (its bottom rows included), never a crop of a square card."""
    prompt = compose_prompt(SCREENPLAYS["zh"], "mangaka/cards")
    del prompt["1"], prompt["2"]["inputs"]["images"]
    prompt["2"]["inputs"]["lettering"] = False
    result = server.run_prompt(prompt, timeout=180)
    assert result.status == "success", result.describe()
    assert result.outputs["4"]["text"][0].startswith("2 pages"), result.outputs["4"]["text"]
    layout = json.loads(result.outputs["5"]["text"][0])
    first = result.outputs["3"]["images"][0]
    with Image.open(server.base_dir / "output" / first["subfolder"] / first["filename"]) as page:
        rgb = page.convert("RGB")
    for frame in layout["pages"][0]["frames"]:
        x, y, w, h = (frame[k] for k in "xywh")
        # A card's frame line is drawn inset from its edges on all four sides: each side of the
        # frame shows ink a few pixels in (a cropped card loses its bottom line).
        inset = max(4, round(24 * min(w, h * 768 / 1024) / 768) // 2)
        sides = {
            "top": [(x + w // 2, y + inset + d) for d in range(-1, 4)],
            "bottom": [(x + w // 2, y + h - 1 - inset + d) for d in range(-3, 2)],
            "left": [(x + inset + d, y + h // 2) for d in range(-1, 4)],
            "right": [(x + w - 1 - inset + d, y + h // 2) for d in range(-3, 2)],
        }
        for side, points in sides.items():
            assert any(sum(rgb.getpixel(p)) < 450 for p in points), (frame, side)


def test_an_avoid_mask_reaches_compose_page_and_its_report(server):
    """``avoid`` from a core node (the cards' red channel: white almost everywhere, so no spot is
    free): Compose Page reads one mask per image and names every panel whose balloons could not
    keep off it; a mask count unlike the images' is refused by name."""
    prompt = compose_prompt(SCREENPLAYS["en"], "mangaka/avoid")
    prompt["7"] = {"class_type": "ImageToMask", "inputs": {"image": ["1", 0], "channel": "red"}}
    prompt["2"]["inputs"]["avoid"] = ["7", 0]
    result = server.run_prompt(prompt, timeout=180)
    assert result.status == "success", result.describe()
    report = result.outputs["4"]["text"][0]
    panels = len(json.loads(SCREENPLAYS["en"])["panels"])
    assert report.count("every place for its balloons covers what they must not") == panels, report
    prompt["8"] = {"class_type": "SolidMask", "inputs": {"value": 1.0, "width": 64, "height": 64}}
    prompt["2"]["inputs"]["avoid"] = ["8", 0]
    result = server.run_prompt(prompt, timeout=180)
    assert result.status == "error", result.describe()
    assert "avoid has 1 masks" in result.error["exception_message"]


def test_fewer_images_than_panels_draws_empty_frames_and_says_so(server):
    result = server.run_prompt(
        compose_prompt(SCREENPLAYS["en"], "mangaka/short", images_from="one"), timeout=180
    )
    assert result.status == "success", result.describe()
    report = result.outputs["4"]["text"][0]
    assert "no image for panels p2, p3, p4" in report


def test_preview_layout_without_images(server):
    prompt = {
        "1": {"class_type": "MangakaPreviewLayout", "inputs": {"json_text": SCREENPLAYS["zh"], **LAYOUT}},
        "2": {"class_type": "SaveImage", "inputs": {"images": ["1", 0], "filename_prefix": "mangaka/layout"}},
    }
    result = server.run_prompt(prompt, timeout=60)
    assert result.status == "success", result.describe()
    assert len(result.outputs["2"]["images"]) == 2


def test_absurd_page_size_is_an_error_naming_the_limits(server):
    prompt = compose_prompt(SCREENPLAYS["en"], "mangaka/bad")
    prompt["2"]["inputs"]["width"] = 20000
    prompt["2"]["inputs"]["height"] = 20000
    result = server.run_prompt(prompt, timeout=60)
    assert result.status == "error", result.describe()
    assert "pixels" in result.error["exception_message"]


def test_save_manga_writes_what_is_asked_and_refuses_a_path_outside_the_output_folder(server):
    """Compose Page's pages (cards, no images) into Save Manga: only the PDF asked for, at the page's
    physical size, never over an earlier file (a second run takes the next number); a prefix that
    climbs out of the output folder is refused before the run, naming the input."""
    prompt = compose_prompt(SCREENPLAYS["zh"], "mangaka/cards")
    del prompt["1"], prompt["2"]["inputs"]["images"]
    prompt["2"]["inputs"].update(page="A4 300dpi")
    prompt["9"] = {
        "class_type": "MangakaSaveManga",
        "inputs": {"pages": ["2", 0], "json_text": SCREENPLAYS["zh"], "filename_prefix": "mangaka/saved",
                   "cbz": False, "epub": False, "pdf": True, "direction": "rtl", "dpi": 300, "title": ""},
    }  # fmt: skip
    names = []
    for run in range(2):
        prompt["9"]["inputs"]["title"] = f"Run {run}"  # an unchanged node would come from the cache
        result = server.run_prompt(prompt, timeout=180)
        assert result.status == "success", result.describe()
        [item] = result.outputs["9"]["files"]
        names.append(item["filename"])
    assert names == ["saved_00001.pdf", "saved_00002.pdf"]
    data = (server.base_dir / "output" / "mangaka" / names[0]).read_bytes()
    assert data.startswith(b"%PDF-") and b"/MediaBox [0 0 595.2000 841.9200]" in data
    assert b"/Direction /R2L" in data
    prompt["9"]["inputs"]["filename_prefix"] = "../outside"
    for other in ("3", "4", "5"):  # Save Manga the only output: the whole prompt is refused
        del prompt[other]
    status, body = server.post_prompt(prompt)
    assert status == 400 and "filename_prefix must be a relative name" in json.dumps(
        body["node_errors"]["9"]
    ), body
