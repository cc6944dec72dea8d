"""Balloons where the picture is calm (mangaka/page/calm.py): on images drawn here with a known busy
region, placed against the packing alone (``calm=False``, the placement before it existed)."""

from __future__ import annotations

import random

import pytest
from PIL import Image, ImageDraw

from mangaka.page.layout import LayoutOptions
from mangaka.page.render import compose_pages
from mangaka.screenplay.models import Screenplay

SIZE = (832, 1216)  # a portrait SD image; the panels' frames crop it around its centre


def screenplay(panels: int, language: str = "en") -> Screenplay:
    lines = {"en": ["Did you hear that?", "It's only the wind.", "Then why is the door open?"],
             "zh": ["你听见了吗？", "只是风而已。", "那门为什么开着？"]}[language]  # fmt: skip
    dialogue, shots = [], []
    for p in range(panels):
        ids = []
        for k in range(2):
            n = len(dialogue) + 1
            dialogue.append({"id": f"d{n}", "speaker": "mei" if k else "akira", "line": lines[(p + k) % 3],
                             "emotion": "neutral"})  # fmt: skip
            ids.append(f"d{n}")
        shots.append({"id": f"p{p + 1}", "shot": "medium", "angle": "eye_level", "action": "Two friends.",
                      "characters": ["akira", "mei"], "expression": "", "background": "a shop",
                      "lighting": "dusk", "props": [], "dialogue": ids})  # fmt: skip
    return Screenplay.model_validate({
        "version": 1, "title": "Calm", "language": language,
        "characters": [{"id": "akira", "name": "Akira", "appearance": "boy"},
                       {"id": "mei", "name": "Mei", "appearance": "girl"}],
        "dialogue": dialogue, "panels": shots,
    })  # fmt: skip


def busy_image(region: tuple[float, float, float, float], seed: int) -> tuple[Image.Image, Image.Image]:
    """A flat picture with a noisy rectangle (``region``: fractions x0, y0, x1, y1): the image and
    its busy mask (white where the noise is)."""
    rng = random.Random(seed)
    image = Image.new("RGB", SIZE, (200, 205, 210))
    mask = Image.new("L", SIZE, 0)
    x0, y0, x1, y1 = (round(v * s) for v, s in zip(region, SIZE * 2, strict=True))
    draw = ImageDraw.Draw(image)
    for _ in range(4000):
        x, y = rng.randrange(x0, x1), rng.randrange(y0, y1)
        draw.rectangle((x, y, x + 6, y + 6), fill=tuple(rng.randrange(256) for _ in range(3)))
    ImageDraw.Draw(mask).rectangle((x0, y0, x1, y1), fill=255)
    return image, mask


REGIONS = [(0.0, 0.0, 1.0, 0.45), (0.45, 0.0, 1.0, 1.0), (0.0, 0.0, 0.6, 0.6), (0.2, 0.0, 1.0, 0.5)]


def busy_share(composed, masks_on_page: list[Image.Image]) -> float:
    """The share of all balloon area that lies over busy pixels."""
    over = total = 0
    for page, layout in zip(masks_on_page, composed.layout, strict=True):
        for frame in layout.frames:
            for plan in composed.balloons.get(frame.panel_id, []):
                b = plan.box
                if b.w <= 0:
                    continue
                hist = page.crop((b.x, b.y, b.x + b.w, b.y + b.h)).histogram()
                over += sum(hist[128:])
                total += b.w * b.h
    return over / total


def masks_on_pages(composed, masks: list[Image.Image]) -> list[Image.Image]:
    """Each page's busy pixels: the masks placed as the images are (covered into their frames)."""
    from mangaka.page.render import cover

    pages = []
    by_id = {f"p{i + 1}": m for i, m in enumerate(masks)}
    for layout in composed.layout:
        page = Image.new("L", (layout.width, layout.height), 0)
        for frame in layout.frames:
            r = frame.rect
            page.paste(cover(by_id[frame.panel_id], r.w, r.h).convert("L"), (r.x, r.y))
        pages.append(page)
    return pages


@pytest.mark.parametrize("direction", ["rtl", "ltr"])
def test_balloons_move_off_the_busy_region_keeping_their_order(direction):
    sp = screenplay(8)
    drawn = [busy_image(REGIONS[i % len(REGIONS)], seed=i) for i in range(8)]
    images, masks = [d[0] for d in drawn], [d[1] for d in drawn]
    layout = LayoutOptions(page="A4 300dpi", direction=direction, panels_per_page=4)
    before = compose_pages(sp, images, layout=layout, calm=False)
    after = compose_pages(sp, images, layout=layout)
    today, calm = (
        busy_share(before, masks_on_pages(before, masks)),
        busy_share(after, masks_on_pages(after, masks)),
    )
    assert today > 0.3, today  # the test images put detail where the packing puts balloons
    assert calm <= today / 3, (calm, today)
    for pid, plans in before.balloons.items():
        moved = after.balloons[pid]
        assert [p.line_id for p in moved] == [p.line_id for p in plans]  # reading order
        shifts = {(m.box.x - p.box.x, m.box.y - p.box.y) for p, m in zip(plans, moved, strict=True)}
        assert len(shifts) == 1, shifts  # moved together: the same arrangement, the same order on the page


def test_a_flat_picture_keeps_the_packed_placement():
    sp = screenplay(4)
    flat = [Image.new("RGB", SIZE, (128, 128, 128)) for _ in range(4)]
    before = compose_pages(sp, flat, calm=False)
    after = compose_pages(sp, flat)
    assert {k: [p.box for p in v] for k, v in after.balloons.items()} == {
        k: [p.box for p in v] for k, v in before.balloons.items()
    }


def test_the_avoid_mask_is_honoured_when_a_placement_outside_it_exists():
    sp = screenplay(4)
    flat = [Image.new("RGB", SIZE, (128, 128, 128)) for _ in range(4)]
    top = Image.new("L", SIZE, 0)
    ImageDraw.Draw(top).rectangle((0, 0, SIZE[0], SIZE[1] // 2), fill=255)  # a face in the top half
    composed = compose_pages(sp, flat, avoid=[top] * 4)
    on_pages = masks_on_pages(composed, [top] * 4)
    assert busy_share(composed, on_pages) == 0
    assert not any("covers what they must not" in p for p in composed.problems)
    everything = Image.new("L", SIZE, 255)
    covered = compose_pages(sp, flat, avoid=[everything] + [None] * 3)
    assert [p for p in covered.problems if "covers what they must not" in p] == [
        "panel p1: every place for its balloons covers what they must not (the avoid mask, or a "
        "storyboard card's header and text rows); placed as if there were none"
    ]
    packed = compose_pages(sp, flat, calm=False)
    assert [p.box for p in covered.balloons["p1"]] == [p.box for p in packed.balloons["p1"]]


@pytest.mark.parametrize(
    "name, options, lettering",
    [
        ("golden_screenplay.json", {}, {}),
        ("golden_screenplay.zh.json", {"panels_per_page": 5}, {"vertical": True}),  # the README's page
        ("golden_screenplay.zh.json", {}, {"vertical": True}),
        ("golden_screenplay.zh.json", {"page": "B5 300dpi"}, {}),
    ],
)
def test_storyboard_card_balloons_keep_off_the_header_and_text_rows(name, options, lettering):
    """A storyboard page (no images): each card's balloons go in the band its header and text rows
    leave free (a card whose balloons need it gets a taller camera frame), so no balloon covers a
    card's header or a text row, on the README's zh vertical page among others."""
    import json
    from pathlib import Path

    from mangaka.page.lettering import LetteringOptions
    from mangaka.screenplay.validate import load_screenplay

    data = Path(__file__).parent / "data" / name
    sp = load_screenplay(json.loads(data.read_text(encoding="utf-8")))
    letters = LetteringOptions(language=sp.language, **lettering) if lettering else None
    composed = compose_pages(sp, [], layout=LayoutOptions(**options), lettering=letters, cards=True)
    assert not [p for p in composed.problems if "storyboard card's header" in p or "cut with" in p]
    assert composed.balloons
    for layout in composed.layout:
        for frame in layout.frames:
            mask = composed.card_masks[frame.panel_id]
            for plan in composed.balloons.get(frame.panel_id, []):  # a continuation has none
                b = plan.box
                crop = mask.crop(
                    (b.x - frame.rect.x, b.y - frame.rect.y, b.right - frame.rect.x, b.bottom - frame.rect.y)
                )
                assert crop.getbbox() is None, (frame.panel_id, plan.line_id)
