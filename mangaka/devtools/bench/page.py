"""Page composition: a 6-panel A4 page at 300 dpi, composed, lettered and saved."""

from __future__ import annotations

import time
from typing import Any

from ...page.layout import LayoutOptions
from ...screenplay.models import Screenplay
from .common import median


def _six_panel_screenplay(language: str) -> Any:
    """Six panels, two characters, twelve lines: a typical page's worth of lettering."""
    shots = ["establishing", "medium", "close_up", "full", "over_the_shoulder", "medium_close_up"]
    words = {
        "en": [
            "The lanterns are lit at dusk.",
            "Did you hear that? Someone is in the shop!",
            "It's only the wind, go back to sleep.",
            "Then why is the door open?",
        ],
        "zh": [
            "黄昏时分，灯笼亮了。",
            "你听见了吗？店里有人！",
            "只是风而已，回去睡吧。",
            "那门为什么开着？",
        ],
    }[language]
    lines, panels = [], []
    for i in range(12):
        speaker = "narrator" if i % 6 == 0 else ("mei" if i % 2 else "akira")
        emotion = ["narration", "afraid", "neutral", "shout", "whisper", "thinking"][i % 6]
        lines.append({"id": f"d{i + 1}", "speaker": speaker, "line": words[i % 4], "emotion": emotion})
    for j in range(6):
        panels.append(
            {
                "id": f"p{j + 1}",
                "shot": shots[j],
                "angle": "eye_level",
                "action": "Two friends in a lantern shop.",
                "characters": ["akira", "mei"],
                "expression": "",
                "background": "lantern shop",
                "lighting": "dusk",
                "props": [],
                "dialogue": [f"d{2 * j + 1}", f"d{2 * j + 2}"],
            }
        )
    return Screenplay.model_validate(
        {
            "version": 1,
            "title": "Lanterns",
            "language": language,
            "characters": [
                {"id": "akira", "name": "Akira", "appearance": "boy"},
                {"id": "mei", "name": "Mei", "appearance": "girl"},
            ],
            "dialogue": lines,
            "panels": panels,
        }
    )


def page_compose(repeats: int) -> dict[str, float]:
    """A 6-panel A4 page at 300 dpi from six 1024² images: compose (place + letter) and save, in ms."""
    from PIL import Image, ImageFilter

    from ...page.render import compose_pages, encode_page  # Pillow: loaded only to draw

    # Textured like a diffusion model's output (a smooth gradient would flatter PNG compression).
    gradient = Image.radial_gradient("L").resize((1024, 1024))
    noise = [
        Image.effect_noise((1024, 1024), sigma).filter(ImageFilter.GaussianBlur(2)) for sigma in (40, 60, 80)
    ]
    images = [Image.merge("RGB", [Image.blend(gradient, n, 0.35) for n in noise]) for _ in range(6)]
    out: dict[str, list[float]] = {}
    sizes: dict[str, int] = {}
    for _ in range(repeats):
        for language in ("en", "zh"):
            started = time.perf_counter()
            composed = compose_pages(
                _six_panel_screenplay(language), images, layout=LayoutOptions(page="A4 300dpi")
            )
            out.setdefault(f"page_a4_compose_ms_{language}", []).append(
                1000 * (time.perf_counter() - started)
            )
            out.setdefault(f"page_a4_letter_ms_{language}", []).append(1000 * composed.seconds["letter"])
        page = composed.pages[0]
        for name, fmt, level in (("png1", "png", 1), ("png6", "png", 6), ("jpeg92", "jpeg", 6)):
            started = time.perf_counter()
            data = encode_page(page, fmt, png_level=level)  # type: ignore[arg-type]
            out.setdefault(f"page_a4_save_ms_{name}", []).append(1000 * (time.perf_counter() - started))
            sizes[f"page_a4_save_mib_{name}"] = len(data) / 2**20
    figures: dict[str, float] = {k: median(v) for k, v in out.items()}
    figures.update(sizes)
    figures["page_a4_save_png6_over_png1"] = figures["page_a4_save_ms_png6"] / figures["page_a4_save_ms_png1"]
    return figures
