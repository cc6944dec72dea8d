"""Compose Page's engine: rendered pages checked by measurable properties, not pixels."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from mangaka.errors import InputError
from mangaka.page.layout import LayoutOptions, layout_pages
from mangaka.page.lettering import LetteringOptions
from mangaka.page.render import (
    compose_pages,
    cover,
    encode_page,
    preview_layout,
    save_page,
    speaker_positions,
)
from mangaka.screenplay.validate import load_screenplay

DATA = Path(__file__).parent / "data"
SMALL = LayoutOptions(page="custom", width=1240, height=1754, panels_per_page=4)


def screenplay(language: str = "en", **changes):
    name = "golden_screenplay.json" if language == "en" else "golden_screenplay.zh.json"
    data = json.loads((DATA / name).read_text(encoding="utf-8"))
    for line_id, text in changes.items():
        next(d for d in data["dialogue"] if d["id"] == line_id)["line"] = text
    return load_screenplay(data)


def images(n: int, size: tuple[int, int] = (512, 512)) -> list[Image.Image]:
    return [Image.new("RGB", size, (40 * i % 255, 90, 160)) for i in range(n)]


def _inside(inner, outer) -> bool:
    return (
        inner.x >= outer.x
        and inner.y >= outer.y
        and inner.right <= outer.right
        and inner.bottom <= outer.bottom
    )


def _overlap(a, b) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


@pytest.mark.parametrize(
    ("language", "vertical", "direction"),
    [("en", False, "rtl"), ("en", False, "ltr"), ("zh", False, "rtl"), ("zh", True, "rtl")],
)
def test_every_balloon_inside_its_panel_none_overlapping_text_inside_no_missing_glyphs(
    language, vertical, direction
):
    sp = screenplay(language)
    layout = LayoutOptions(page="custom", width=1240, height=1754, panels_per_page=4, direction=direction)
    lettering = LetteringOptions(language=language, vertical=vertical, direction=direction)
    composed = compose_pages(sp, images(len(sp.panels)), layout=layout, lettering=lettering)
    assert composed.problems == []
    assert all(page.size == (1240, 1754) for page in composed.pages)
    frames = {f.panel_id: f.rect for page in composed.layout for f in page.frames}
    lettered = sum(len(plans) for plans in composed.balloons.values())
    assert lettered == len(sp.dialogue)  # one balloon per line
    for panel_id, plans in composed.balloons.items():
        assert {p.line_id for p in plans} == set(next(p for p in sp.panels if p.id == panel_id).dialogue)
        for plan in plans:
            assert plan.fits and plan.hidden_chars == 0 and plan.missing_glyphs == []
            assert _inside(plan.box, frames[panel_id]), (panel_id, plan.line_id)
            assert _inside(plan.text_box, plan.box), (panel_id, plan.line_id)
            assert plan.vertical == (vertical and language in ("zh", "ja"))
    for page in composed.layout:
        boxes = [p.box for f in page.frames for p in composed.balloons.get(f.panel_id, [])]
        for i, a in enumerate(boxes):
            assert not any(_overlap(a, b) for b in boxes[i + 1 :])


def test_images_of_any_aspect_ratio_cover_their_frames():
    for size in ((2000, 300), (300, 2000), (64, 64)):
        out = cover(Image.new("RGB", size, "red"), 700, 500)
        assert out.size == (700, 500)
        assert out.getpixel((0, 0)) == out.getpixel((699, 499)) == (255, 0, 0)  # no letterbox bars
    sp = screenplay()
    composed = compose_pages(sp, [Image.new("RGB", (1600, 400), "red")] * 4, layout=SMALL, letter=False)
    frame = composed.layout[0].frames[0].rect
    assert composed.pages[0].getpixel((frame.x + frame.w // 2, frame.y + frame.h // 2)) == (255, 0, 0)


def test_fewer_images_than_panels_draws_empty_frames_and_reports_them():
    composed = compose_pages(screenplay(), images(1), layout=SMALL)
    assert any("no image for panels p2, p3, p4" in p for p in composed.problems)
    assert len(composed.pages) == 1


def test_more_images_than_panels_are_reported():
    composed = compose_pages(screenplay(), images(6), layout=SMALL)
    assert any("2 images beyond the 4 panels were not used" in p for p in composed.problems)


def test_images_matched_by_panel_id():
    red, blue = Image.new("RGB", (64, 64), "red"), Image.new("RGB", (64, 64), "blue")
    composed = compose_pages(screenplay(), [red, blue], layout=SMALL, letter=False, panel_ids=["p4", "p1"])
    rects = {f.panel_id: f.rect for f in composed.layout[0].frames}
    page = composed.pages[0]
    assert page.getpixel(rects["p4"].center) == (255, 0, 0)
    assert page.getpixel(rects["p1"].center) == (0, 0, 255)
    with pytest.raises(InputError, match="not in the screenplay"):
        compose_pages(screenplay(), [red], layout=SMALL, panel_ids=["p9"])
    with pytest.raises(InputError, match="2 images but 1 panel ids"):
        compose_pages(screenplay(), [red, blue], layout=SMALL, panel_ids=["p1"])


def test_a_line_too_long_for_its_panel_is_reported_not_silently_cut():
    tiny = LayoutOptions(page="custom", width=512, height=700, panels_per_page=4)
    composed = compose_pages(screenplay(d5="Mother " * 16 + "Mother!"), images(4), layout=tiny)
    plan = next(p for plans in composed.balloons.values() for p in plans if p.line_id == "d5")
    assert not plan.fits and plan.hidden_chars > 0
    assert any(p.startswith("d5 (panel p4)") for p in composed.problems), composed.problems


def test_a_500_character_line_is_refused_by_the_screenplay_contract_with_its_path():
    with pytest.raises(InputError, match=r"dialogue\[4\]\.line: .* is too long"):
        screenplay(d5="x" * 500)


def test_a_character_the_font_lacks_is_reported():
    composed = compose_pages(screenplay(d2="Wait! 😀"), images(4), layout=SMALL)
    assert any("U+1F600" in p for p in composed.problems), composed.problems


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (LayoutOptions(page="custom", width=0, height=1000), "256"),
        (LayoutOptions(page="custom", width=20000, height=20000), "pixels"),
        (LayoutOptions(page="Letter"), "A4 300dpi"),
    ],
)
def test_bad_page_sizes_are_rejected_with_the_limits(options, message):
    with pytest.raises(InputError, match=message):
        compose_pages(screenplay(), images(4), layout=options)


def test_zero_panels_is_an_error():
    with pytest.raises(InputError):
        layout_pages([], SMALL)


def test_speakers_start_from_the_reading_side():
    panel = screenplay().panels[2]  # old_tan, lin, kid
    rtl, ltr = speaker_positions(panel, "rtl"), speaker_positions(panel, "ltr")
    assert rtl["old_tan"] > rtl["lin"] > rtl["kid"]
    assert ltr["old_tan"] < ltr["lin"] < ltr["kid"]


def test_preview_layout_draws_every_page_at_size():
    pages = layout_pages(screenplay("zh").panels, SMALL)
    previews = preview_layout(pages)
    assert len(previews) == len(pages) == 2
    assert all(p.size == (1240, 1754) for p in previews)


def test_pages_save_whole_as_png_or_jpeg(tmp_path):
    page = compose_pages(screenplay(), images(4), layout=SMALL).pages[0]
    png = save_page(page, tmp_path / "p.png")
    with Image.open(png) as im:
        assert im.format == "PNG" and im.size == page.size
    assert encode_page(page, "jpeg")[:2] == b"\xff\xd8"
    with pytest.raises(InputError, match="png, jpeg"):
        encode_page(page, "gif")  # type: ignore[arg-type]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.png"]  # no temporary file left


def test_images_for_several_chapters_are_grouped_by_chapter():
    from mangaka.page.render import group_by_chapter

    # One batch per chapter (a Storyboard per chapter).
    assert group_by_chapter([3, 2], [3, 2]) == ([[0], [1]], [None, None])
    # One image per panel for every chapter in a row: cut by the panel counts, ids with them.
    ids = ["p1", "p2", "p3", "p1", "p2"]
    groups, per_chapter = group_by_chapter([1] * 5, [3, 2], ids)
    assert groups == [[0, 1, 2], [3, 4]] and per_chapter == [["p1", "p2", "p3"], ["p1", "p2"]]
    # Ids that do not cover every panel are not guessed at: images go in order.
    assert group_by_chapter([1] * 5, [3, 2], ["p1"])[1] == [None, None]
    # One chapter takes everything as it comes.
    assert group_by_chapter([1, 1, 1], [2], ["p2", "p1", "p3"]) == ([[0, 1, 2]], [["p2", "p1", "p3"]])
    with pytest.raises(InputError, match=r"2 screenplays \(one per chapter, 5 panels in all\) but 4 image"):
        group_by_chapter([1] * 4, [3, 2])
