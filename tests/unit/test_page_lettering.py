"""Lettering: balloon plans checked by their geometry, drawings by where the ink is (not pixels)."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from mangaka.errors import InputError
from mangaka.page.fonts import NO_START, raqm_available
from mangaka.page.lettering import (
    BalloonPlan,
    Box,
    LetteringOptions,
    LineSpec,
    balloon_kind,
    draw_balloons,
    font_sizes,
    plan_balloons,
)
from tests.unit.lettering_samples import A4, B5_600, EN, JA, PANELS, SAMPLES, blank_page

pytestmark = pytest.mark.unit


@dataclasses.dataclass(frozen=True)
class Rect:  # what the page layout passes: any object with x, y, w, h
    x: int
    y: int
    w: int
    h: int


def _check_geometry(panel: Box, plans: list[BalloonPlan]) -> None:
    for plan in plans:
        assert panel.contains(plan.box), f"{plan.line_id}: {plan.box} outside the panel {panel}"
        if plan.box.empty:
            continue
        assert plan.box.contains(plan.text_box), f"{plan.line_id}: text box outside its balloon"
        if plan.kind in ("speech", "whisper", "shout", "thought"):
            # The text box is inscribed in the balloon's ellipse: its corners lie inside it.
            cx, cy = plan.box.center
            a, b = plan.box.w / 2, plan.box.h / 2
            tb = plan.text_box
            for x, y in ((tb.x, tb.y), (tb.right, tb.y), (tb.x, tb.bottom), (tb.right, tb.bottom)):
                assert ((x - cx) / a) ** 2 + ((y - cy) / b) ** 2 <= 1.0, f"{plan.line_id}: corner outside"
        if plan.tail is not None:
            assert panel.contains(plan.tail), f"{plan.line_id}: tail tip {plan.tail} outside the panel"
            assert not plan.box.contains(plan.tail), f"{plan.line_id}: tail tip inside its own balloon"
    for i, p in enumerate(plans):
        for q in plans[i + 1 :]:
            assert not p.box.intersects(q.box), f"{p.line_id} overlaps {q.line_id}"


# ------------------------------------------------------------------------------------------ kinds


@pytest.mark.parametrize(
    ("emotion", "speaker", "kind"),
    [
        ("neutral", "narrator", "caption"),
        ("happy", "Narrator", "caption"),
        ("narration", "akira", "caption"),
        ("shout", "akira", "shout"),
        ("whisper", "akira", "whisper"),
        ("thinking", "akira", "thought"),
        ("angry", "akira", "speech"),
        ("excited", "akira", "speech"),
        ("neutral", "akira", "speech"),
        ("something else", "akira", "speech"),
    ],
)
def test_balloon_kind(emotion: str, speaker: str, kind: str):
    assert balloon_kind(emotion, speaker) == kind


def test_plans_have_the_kind_of_their_line():
    plans, _ = plan_balloons(PANELS[1], EN, LetteringOptions(language="en"), A4)
    kinds = {plan.line_id: plan.kind for plan in plans}
    assert kinds == {"d1": "caption", "d2": "speech", "d3": "whisper", "d4": "shout", "d5": "thought"}
    caption = next(plan for plan in plans if plan.kind == "caption")
    assert caption.tail is None


def test_box_helpers():
    box = Box(10, 20, 30, 40)
    assert (box.right, box.bottom, box.center) == (40, 60, (25.0, 40.0))
    assert box.contains(Box(10, 20, 30, 40)) and box.contains(Rect(15, 25, 5, 5))
    assert not box.contains(Box(9, 20, 5, 5))
    assert box.contains((10, 20)) and not box.contains((40, 30))
    assert box.intersects(Box(39, 59, 5, 5)) and not box.intersects(Box(40, 20, 5, 5))
    assert Box.of(Rect(1, 2, 3, 4)) == Box(1, 2, 3, 4)
    with pytest.raises(InputError):
        Box.of(object())


# ------------------------------------------------------------------------------------------ sizes


def test_font_sizes_follow_the_page_width():
    assert font_sizes(LetteringOptions(), A4) == (41, 23)
    assert font_sizes(LetteringOptions(), B5_600) == (72, 40)
    assert font_sizes(LetteringOptions(max_font_size=30), A4) == (30, 16)
    assert font_sizes(LetteringOptions(max_font_size=30, min_font_size=30), A4) == (30, 30)
    with pytest.raises(InputError):
        font_sizes(LetteringOptions(max_font_size=20, min_font_size=30), A4)


def test_font_size_scales_with_theblank_page():
    panel_a4 = Box(0, 0, 1200, 1100)
    scale = B5_600 / A4
    panel_b5 = Box(0, 0, round(1200 * scale), round(1100 * scale))
    a4, _ = plan_balloons(panel_a4, JA[1:2], LetteringOptions(language="ja"), A4)
    b5, _ = plan_balloons(panel_b5, JA[1:2], LetteringOptions(language="ja"), B5_600)
    assert a4[0].font_size == 41
    assert b5[0].font_size == 72
    assert b5[0].lines == a4[0].lines  # same page proportions: the same wrapping


@pytest.mark.parametrize(
    "options",
    [
        LetteringOptions(direction="up"),  # type: ignore[arg-type]
        LetteringOptions(layout_engine="fancy"),  # type: ignore[arg-type]
        LetteringOptions(language="xx"),
    ],
)
def test_bad_options_are_input_errors(options: LetteringOptions):
    with pytest.raises(InputError):
        plan_balloons(PANELS[0], EN, options, A4)


def test_bad_panel_and_page_are_input_errors():
    with pytest.raises(InputError):
        plan_balloons(Box(0, 0, 0, 100), EN, LetteringOptions(), A4)
    with pytest.raises(InputError):
        plan_balloons(PANELS[0], EN, LetteringOptions(), 0)


# ------------------------------------------------------------------------------------- geometry


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
@pytest.mark.parametrize("vertical", [False, True])
@pytest.mark.parametrize("direction", ["rtl", "ltr"])
def test_balloons_inside_the_panel_and_not_overlapping(language: str, vertical: bool, direction: str):
    options = LetteringOptions(language=language, vertical=vertical, direction=direction)  # type: ignore[arg-type]
    for panel in PANELS:
        plans, problems = plan_balloons(
            Rect(panel.x, panel.y, panel.w, panel.h), SAMPLES[language], options, A4
        )
        captions = [s.line_id for s in SAMPLES[language] if s.speaker == "narrator"]
        others = [s.line_id for s in SAMPLES[language] if s.speaker != "narrator"]
        assert [plan.line_id for plan in plans] == captions + others
        _check_geometry(panel, plans)
        assert all(plan.vertical == (vertical and language != "en") for plan in plans)
        if panel.w >= 700:
            assert problems == [], problems
            assert all(plan.fits and plan.hidden_chars == 0 for plan in plans)
            # Normal text stays at a readable size and keeps to the top of the panel.
            assert all(plan.font_size == 41 for plan in plans)
            assert max(plan.box.bottom for plan in plans) < panel.y + 0.75 * panel.h


def test_many_lines_in_a_small_panel_are_placed_or_reported():
    lines = [
        LineSpec(f"d{i}", "akira" if i % 2 else "mei", "Wait for me, please!", "neutral") for i in range(14)
    ]
    panel = Box(200, 200, 500, 400)
    plans, problems = plan_balloons(panel, lines, LetteringOptions(), A4, panel_id="p9")
    _check_geometry(panel, plans)
    assert len(plans) == len(lines)
    unplaced = [plan for plan in plans if plan.box.empty]
    for plan in unplaced:
        assert not plan.fits and plan.hidden_chars == 17 and plan.lines == []
        assert any(p.startswith(f"{plan.line_id} (panel p9): no room") for p in problems)
    placed = [plan for plan in plans if not plan.box.empty]
    assert placed and all(plan.font_size >= 23 for plan in placed)


def test_reading_order_rtl_and_ltr():
    lines = [LineSpec("a", "akira", "Hello!", "neutral"), LineSpec("b", "mei", "Hi.", "neutral")]
    panel = PANELS[1]
    rtl, _ = plan_balloons(panel, lines, LetteringOptions(direction="rtl"), A4)
    ltr, _ = plan_balloons(panel, lines, LetteringOptions(direction="ltr"), A4)
    assert rtl[0].box.y == rtl[1].box.y  # same shelf
    assert rtl[0].box.center[0] > rtl[1].box.center[0]
    assert ltr[0].box.center[0] < ltr[1].box.center[0]
    # The first balloon sits in the reading-start corner.
    inner_rtl = max(plan.box.right for plan in rtl)
    assert rtl[0].box.right == inner_rtl and rtl[0].box.right > panel.right - 30
    assert ltr[0].box.x == min(plan.box.x for plan in ltr) and ltr[0].box.x < panel.x + 30


def test_caption_in_the_reading_start_corner():
    lines = [
        LineSpec("d1", "akira", "Hello!", "neutral"),
        LineSpec("d2", "narrator", "Meanwhile.", "narration"),
    ]
    panel = PANELS[0]
    plans, _ = plan_balloons(panel, lines, LetteringOptions(direction="rtl"), A4)
    assert [plan.line_id for plan in plans] == ["d2", "d1"]
    caption = plans[0]
    assert caption.kind == "caption" and caption.tail is None
    assert caption.box.y == min(plan.box.y for plan in plans) and caption.box.y < panel.y + 30
    assert caption.box.right > panel.right - 30
    plans, _ = plan_balloons(panel, lines, LetteringOptions(direction="ltr"), A4)
    assert plans[0].kind == "caption" and plans[0].box.x < panel.x + 30


def test_shelves_grow_downward_only_when_needed():
    panel = PANELS[0]
    one, _ = plan_balloons(panel, EN[1:2], LetteringOptions(), A4)
    assert one[0].box.bottom < panel.y + 0.45 * panel.h
    many = [LineSpec(f"d{i}", "akira", "Did we miss it? The train left!", "neutral") for i in range(6)]
    plans, problems = plan_balloons(panel, many, LetteringOptions(), A4)
    _check_geometry(panel, plans)
    assert problems == []
    assert len({plan.box.y for plan in plans}) > 1  # more than one shelf
    # Each shelf lies below the tails of the one above.
    for p in plans:
        for q in plans:
            if q.box.y > p.box.bottom and p.tail is not None:
                assert q.box.y > p.tail[1]


# ------------------------------------------------------------------------------------------ tails


def test_tail_points_to_the_speakers_side():
    panel = PANELS[1]
    left = [LineSpec("a", "akira", "Over here!", "neutral", speaker_x=0.0)]
    right = [LineSpec("a", "akira", "Over here!", "neutral", speaker_x=1.0)]
    centre = [LineSpec("a", "akira", "Over here!", "neutral", speaker_x=0.5)]
    for lines, sign in ((left, -1), (right, 1)):
        plans, _ = plan_balloons(panel, lines, LetteringOptions(), A4)
        tip = plans[0].tail
        assert tip is not None and panel.contains(tip)
        assert (tip[0] - plans[0].box.center[0]) * sign > 0
        assert tip[1] > plans[0].box.bottom
    plans, _ = plan_balloons(panel, centre, LetteringOptions(), A4)
    assert plans[0].tail is not None
    # Unknown positions: first speaker on the reading-start side, the next on the other.
    lines = [LineSpec("a", "akira", "Hello!", "neutral"), LineSpec("b", "mei", "Hi.", "neutral")]
    for direction, first_sign in (("rtl", 1), ("ltr", -1)):
        plans, _ = plan_balloons(panel, lines, LetteringOptions(direction=direction), A4)  # type: ignore[arg-type]
        signs = [math.copysign(1, plan.tail[0] - plan.box.center[0]) for plan in plans if plan.tail]
        assert signs == [first_sign, -first_sign]


def test_out_of_range_speaker_x_is_clamped():
    panel = PANELS[0]
    plans, _ = plan_balloons(
        panel, [LineSpec("a", "x", "Hey!", "neutral", speaker_x=-3.0)], LetteringOptions(), A4
    )
    assert plans[0].tail is not None and panel.contains(plans[0].tail)
    assert plans[0].tail[0] < plans[0].box.center[0]


# ------------------------------------------------------------------------------------------ text


@pytest.mark.parametrize("language", ["en", "zh", "ja"])
def test_no_missing_glyphs_in_normal_text(language: str):
    for vertical in (False, True):
        options = LetteringOptions(language=language, vertical=vertical)
        plans, problems = plan_balloons(PANELS[0], SAMPLES[language], options, A4)
        assert problems == []
        assert all(plan.missing_glyphs == [] for plan in plans)


def test_text_is_kept_whole_when_it_fits():
    for language, lines in SAMPLES.items():
        plans, _ = plan_balloons(PANELS[1], lines, LetteringOptions(language=language), A4)
        by_id = {line.line_id: line.text for line in lines}
        for plan in plans:
            joined = ("" if language != "en" else " ").join(plan.lines)
            assert re.sub(r"\s", "", joined) == re.sub(r"\s", "", by_id[plan.line_id])


def test_english_words_are_not_broken():
    plans, _ = plan_balloons(PANELS[0], EN, LetteringOptions(language="en"), A4)
    words = {word for line in EN for word in line.text.split()}
    for plan in plans:
        for line in plan.lines:
            assert set(line.split()) <= words, line


def test_emoji_is_reported():
    lines = [LineSpec("d2", "akira", "Nice! 😀", "happy")]
    plans, problems = plan_balloons(PANELS[0], lines, LetteringOptions(), A4, panel_id="p1")
    assert plans[0].missing_glyphs == ["😀"]
    assert problems == ["d2 (panel p1): the font has no glyph for '😀' (U+1F600)"]


def test_overlong_line_shrinks_to_the_minimum_and_is_reported():
    text = ("今天天气很好，我们去公园散步吧。" * 40)[:500]
    lines = [LineSpec("d7", "lin", text, "neutral"), LineSpec("d8", "wang", "好。", "neutral")]
    plans, problems = plan_balloons(PANELS[0], lines, LetteringOptions(language="zh"), A4, panel_id="p3")
    _check_geometry(PANELS[0], plans)
    long, short = plans
    assert long.font_size == 23
    assert not long.fits and long.hidden_chars > 0
    assert long.lines[-1].endswith("…")
    shown = sum(len(line) for line in long.lines) - 1
    assert shown + long.hidden_chars == 500
    assert f"d7 (panel p3): {long.hidden_chars} of 500 characters do not fit even at 23 px" in problems
    assert short.fits and short.font_size == 41  # the other balloon keeps its size
    # Vertical too.
    options = LetteringOptions(language="zh", vertical=True)
    plans, problems = plan_balloons(PANELS[0], lines, options, A4, panel_id="p3")
    _check_geometry(PANELS[0], plans)
    assert plans[0].font_size == 23 and not plans[0].fits and plans[0].hidden_chars > 0
    assert plans[0].lines[-1].endswith("…")
    assert sum(len(col) for col in plans[0].lines) - 1 + plans[0].hidden_chars == 500
    assert any(p.startswith("d7 (panel p3):") and "do not fit" in p for p in problems)


def test_problem_names_the_panel_by_its_id_attribute_or_position():
    text = "あ" * 600

    @dataclasses.dataclass(frozen=True)
    class Panel:
        id: str
        x: int
        y: int
        w: int
        h: int

    _, problems = plan_balloons(
        Panel("p5", 0, 0, 400, 400), [LineSpec("d1", "a", text, "neutral")], LetteringOptions("ja"), A4
    )
    assert problems[0].startswith("d1 (panel p5):")
    _, problems = plan_balloons(
        Box(7, 8, 400, 400), [LineSpec("d1", "a", text, "neutral")], LetteringOptions("ja"), A4
    )
    assert problems[0].startswith("d1 (panel at (7, 8)):")


def test_vertical_columns_follow_kinsoku():
    text = "あいうえお。かきくけこ、さしすせそ」たちつてと！なにぬねの？はひふへほ…まみむめも、やゆよ。" * 2
    for width in (300, 400, 500, 700):
        panel = Box(0, 0, width, 1200)
        plans, _ = plan_balloons(
            panel, [LineSpec("d1", "a", text, "neutral")], LetteringOptions("ja", vertical=True), A4
        )
        columns = plans[0].lines
        assert plans[0].vertical and len(columns) > 1
        for col in columns[1:]:
            assert col[0] not in NO_START, columns
        cells = plans[0].text_box.h // plans[0].font_size
        assert all(len(col) <= cells for col in columns)


def test_vertical_only_for_chinese_and_japanese():
    plans, _ = plan_balloons(PANELS[0], EN, LetteringOptions("en", vertical=True), A4)
    assert not any(plan.vertical for plan in plans)
    plans, _ = plan_balloons(PANELS[0], JA, LetteringOptions("ja", vertical=True), A4)
    assert all(plan.vertical for plan in plans)
    speech = next(plan for plan in plans if plan.line_id == "j2")
    assert speech.box.h > speech.box.w  # vertical text: a tall balloon


def test_plans_are_deterministic():
    options = LetteringOptions("ja", vertical=True)
    first = plan_balloons(PANELS[0], JA, options, A4)
    assert plan_balloons(PANELS[0], JA, options, A4) == first


def test_short_lines_stay_on_one_line_and_lines_are_balanced():
    lines = [
        LineSpec("a", "akira", "RUN!", "shout"),
        LineSpec("b", "mei", "好。", "neutral"),
        LineSpec("c", "akira", "Wait for me, please!", "neutral"),
    ]
    plans, _ = plan_balloons(PANELS[1], lines, LetteringOptions("en"), A4)
    by_id = {plan.line_id: plan for plan in plans}
    assert by_id["a"].lines == ["RUN!"]
    assert by_id["b"].lines == ["好。"]
    assert len(by_id["c"].lines) == 2  # the narrowest width that keeps two lines
    assert " ".join(by_id["c"].lines) == "Wait for me, please!"
    plans, _ = plan_balloons(
        PANELS[1],
        [LineSpec("d", "mei", "どうしよう…", "thinking")],
        LetteringOptions("ja", vertical=True),
        A4,
    )
    assert plans[0].lines == ["どうしよう…"]


def test_fonts_raqm_loader_and_unbreakable_width():
    from PIL import ImageFont

    from mangaka.page import fonts

    font = fonts.load_font(20, "en")
    assert fonts.unbreakable_width("a Supercalifragilistic b", font) == fonts.text_width(
        "Supercalifragilistic", font
    )
    assert fonts.unbreakable_width("", font) == 0.0
    assert fonts.unbreakable_width("好了……吧", fonts.load_font(20, "zh")) == 60.0  # 了…… stay together
    from PIL import features

    assert not raqm_available() or features.check("raqm")  # never said where Pillow lacks raqm
    if raqm_available():
        raqm = fonts.load_font_raqm(20, "ja")
        assert raqm.layout_engine == ImageFont.Layout.RAQM
        assert fonts.load_font_raqm(20, "ja") is raqm
        assert raqm.getlength("あいう", direction="ttb") == 60.0
    with pytest.raises(InputError):
        fonts.load_font_raqm(0, "ja")


def test_empty_line_gets_no_balloon():
    lines = [LineSpec("a", "akira", "  ", "neutral"), LineSpec("b", "mei", "Hi.", "neutral")]
    plans, problems = plan_balloons(PANELS[0], lines, LetteringOptions(), A4)
    assert problems == []
    empty, hi = plans
    assert empty.box.empty and empty.lines == [] and empty.fits and empty.hidden_chars == 0
    assert hi.box.right > PANELS[0].right - 30  # the reading-start corner is not taken by the empty line
    image = blank_page()
    draw_balloons(image, plans, LetteringOptions())
    assert plan_balloons(PANELS[0], [], LetteringOptions(), A4) == ([], [])


def test_a_line_of_only_invisible_characters_is_not_lettered_and_the_reason_is_given(caplog):
    """Zero-width spaces, a word joiner, direction marks: no font draws them, so such a line is
    empty (no balloon, no "missing glyph"), said once with its code points; inside a real line
    they are left out of the lettering."""
    lines = [
        LineSpec("d1", "akira", "\u200b\u200b \u2060\u200e", "neutral"),
        LineSpec("d2", "mei", "Wait\u200b for me!", "neutral"),
    ]
    with caplog.at_level("WARNING", logger="mangaka"):
        plans, problems = plan_balloons(PANELS[0], lines, LetteringOptions(), A4, panel_id="p1")
    by_id = {plan.line_id: plan for plan in plans}
    assert by_id["d1"].box.empty and by_id["d1"].lines == [] and by_id["d1"].missing_glyphs == []
    assert problems == [
        "d1 (panel p1): the line has no visible characters (only U+0020, U+200B, U+200E, U+2060); "
        "it is not lettered: give it words or remove it"
    ]
    assert "".join(by_id["d2"].lines).replace(" ", "") == "Waitforme!" and not by_id["d2"].box.empty
    assert "glyph" not in caplog.text
