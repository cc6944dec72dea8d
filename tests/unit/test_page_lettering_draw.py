"""Lettering drawn: balloons inked inside their panel and nowhere else, image modes, vertical columns
(raqm and the basic layout), determinism."""

from __future__ import annotations

import pytest
from PIL import Image, ImageChops

from mangaka.errors import BackendMissingError, InputError
from mangaka.page import lettering
from mangaka.page.fonts import raqm_available
from mangaka.page.lettering import (
    BalloonPlan,
    Box,
    LetteringOptions,
    draw_balloons,
    plan_balloons,
)
from tests.unit.lettering_samples import A4, BACKGROUND, EN, JA, PANELS, SAMPLES, ZH, blank_page

pytestmark = pytest.mark.unit


# ------------------------------------------------------------------------------------------ drawing


def _ink_columns(image: Image.Image, box: Box) -> int:
    """How many separate vertical bands of dark pixels lie inside ``box``."""
    gray = image.convert("L").crop((box.x, box.y, box.right, box.bottom))
    dark = gray.point(lambda v: 255 if v < 128 else 0)
    bands, inside = 0, False
    for x in range(dark.width):
        has_ink = dark.crop((x, 0, x + 1, dark.height)).getbbox() is not None
        if has_ink and not inside:
            bands += 1
        inside = has_ink
    return bands


def _outside_untouched(before: Image.Image, after: Image.Image, panel: Box) -> bool:
    diff = ImageChops.difference(before.convert("RGB"), after.convert("RGB"))
    bbox = diff.getbbox()
    return bbox is None or (
        bbox[0] >= panel.x and bbox[1] >= panel.y and bbox[2] <= panel.right and bbox[3] <= panel.bottom
    )


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
@pytest.mark.parametrize("vertical", [False, True])
def test_drawing_inks_each_balloon_and_nothing_outside_the_panel(language: str, vertical: bool):
    panels = [Box(100, 100, 1100, 1050), Box(1280, 100, 1100, 1050), Box(300, 1200, 600, 560)]
    options = LetteringOptions(language=language, vertical=vertical, layout_engine="basic")
    for panel in panels:
        image = blank_page()
        before = image.copy()
        plans, _ = plan_balloons(panel, SAMPLES[language], options, A4)
        draw_balloons(image, plans, options)
        assert _outside_untouched(before, image, panel)
        for plan in plans:
            crop = image.convert("L").crop((plan.box.x, plan.box.y, plan.box.right, plan.box.bottom))
            assert crop.getextrema()[0] < 60, f"{plan.line_id}: no ink"
            text = image.convert("L").crop(
                (plan.text_box.x, plan.text_box.y, plan.text_box.right, plan.text_box.bottom)
            )
            assert text.getextrema()[0] < 60, f"{plan.line_id}: no text ink"
            assert image.getpixel((round(plan.box.center[0]), plan.box.y + plan.box.h // 2)) != BACKGROUND
            if plan.tail is not None:
                assert image.getpixel(plan.tail) != BACKGROUND, f"{plan.line_id}: no tail at its tip"


def test_drawing_other_image_modes():
    options = LetteringOptions("en")
    plans, _ = plan_balloons(PANELS[0], EN, options, A4)
    for mode in ("RGBA", "L"):
        image = blank_page(mode)
        before = image.copy()
        draw_balloons(image, plans, options)
        assert _outside_untouched(before, image, PANELS[0])
        assert image.convert("L").crop((100, 100, 1200, 1150)).getextrema()[0] == 0
    with pytest.raises(InputError):
        draw_balloons(Image.new("P", (100, 100)), plans, options)


def _vertical_drawings(engine: str) -> tuple[list[BalloonPlan], Image.Image]:
    options = LetteringOptions("ja", vertical=True, layout_engine=engine)  # type: ignore[arg-type]
    panel = Box(100, 100, 1100, 1050)
    plans, problems = plan_balloons(panel, JA, options, A4)
    assert problems == []
    image = Image.new("RGB", (1300, 1300), BACKGROUND)
    before = image.copy()
    draw_balloons(image, plans, options)
    assert _outside_untouched(before, image, panel)
    return plans, image


def _check_vertical(plans: list[BalloonPlan], image: Image.Image) -> list[int]:
    counts = []
    for plan in plans:
        tb = plan.text_box
        assert image.convert("L").crop((tb.x, tb.y, tb.right, tb.bottom)).getextrema()[0] < 60
        counts.append(_ink_columns(image, Box(tb.x - 2, tb.y, tb.w + 4, tb.h)))
    return counts


def test_vertical_basic_draws_one_band_per_column():
    plans, image = _vertical_drawings("basic")
    counts = _check_vertical(plans, image)
    assert counts == [len(plan.lines) for plan in plans]


@pytest.mark.skipif(not raqm_available(), reason="Pillow's raqm layout needs the system libfribidi")
def test_vertical_raqm_matches_basic():
    basic_plans, basic = _vertical_drawings("basic")
    raqm_plans, raqm = _vertical_drawings("raqm")
    assert raqm_plans == basic_plans  # the plan does not depend on the engine
    assert _check_vertical(raqm_plans, raqm) == _check_vertical(basic_plans, basic)
    # The two engines put the ink in nearly the same places.
    for plan in raqm_plans:
        tb = plan.text_box
        area = (tb.x - 4, tb.y - 4, tb.right + 4, tb.bottom + 4)
        a = raqm.convert("L").crop(area).point(lambda v: 255 if v < 128 else 0).getbbox()
        b = basic.convert("L").crop(area).point(lambda v: 255 if v < 128 else 0).getbbox()
        assert a is not None and b is not None
        assert all(abs(p - q) <= plan.font_size // 2 for p, q in zip(a, b, strict=True)), (plan.line_id, a, b)


def test_raqm_engine_asked_for_but_unavailable(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(lettering, "raqm_available", lambda: False)
    monkeypatch.setattr("mangaka.page.fonts.raqm_available", lambda: False)
    assert not lettering.use_raqm(LetteringOptions(layout_engine="auto"))
    options = LetteringOptions("ja", vertical=True, layout_engine="raqm")
    plans, _ = plan_balloons(PANELS[0], JA, options, A4)
    with pytest.raises(BackendMissingError, match="libfribidi"):
        draw_balloons(blank_page(), plans, options)


def test_drawing_is_deterministic():
    options = LetteringOptions("zh", vertical=True)
    images = []
    for _ in range(2):
        image = blank_page()
        plans, _ = plan_balloons(PANELS[0], ZH, options, A4)
        draw_balloons(image, plans, options)
        images.append(image.tobytes())
    assert images[0] == images[1]
