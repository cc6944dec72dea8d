from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from mangaka.errors import InputError
from mangaka.page.fonts import load_font, text_width, wrap
from mangaka.page.storyboard import (
    DEFAULT_HEIGHT,
    DEFAULT_WIDTH,
    CardItem,
    card_items,
    layout_card,
    render_storyboard,
)
from mangaka.screenplay.example import example_screenplay
from mangaka.screenplay.models import ANGLES, SHOTS, Screenplay
from mangaka.screenplay.validate import load_screenplay

DATA = Path(__file__).parent / "data"


def chinese() -> dict[str, Any]:
    return {
        "version": 1,
        "title": "最后一班车",
        "language": "zh",
        "characters": [
            {"id": "lin", "name": "林晓", "appearance": "短发少女，黄色雨衣"},
            {"id": "chen", "name": "陈默", "appearance": "高个男生，校服"},
        ],
        "dialogue": [
            {"id": "d1", "speaker": "narrator", "line": "午夜，车站空无一人。", "emotion": "narration"},
            {"id": "d2", "speaker": "lin", "line": "「我们是不是错过了？」", "emotion": "worried"},
            {"id": "d3", "speaker": "chen", "line": "嘘……你听。", "emotion": "whisper"},
        ],
        "panels": [
            {
                "id": f"p{i + 1}",
                "shot": shot,
                "angle": ANGLES[i % len(ANGLES)],
                "action": "林晓转向陈默，陈默竖起一根手指。",
                "characters": ["lin", "chen"][: i % 3],
                "expression": "林晓不安，陈默平静",
                "background": "乡村车站的站台边缘，雨夜",
                "lighting": "夜晚，湿漉漉的反光",
                "props": ["时刻表"],
                "dialogue": ["d1", "d2", "d3"][: i % 4],
            }
            for i, shot in enumerate(SHOTS)
        ],
    }


def japanese() -> dict[str, Any]:
    sp = example_screenplay()
    sp["language"] = "ja"
    sp["title"] = "終電"
    sp["characters"][0]["name"] = "明"
    sp["characters"][1]["name"] = "メイ"
    sp["dialogue"][0]["line"] = "真夜中。駅には誰もいない。"
    sp["dialogue"][1]["line"] = "「乗り遅れちゃったのかな？」"
    sp["dialogue"][2]["line"] = "しっ……聞いて。"
    sp["panels"][1]["action"] = "明はメイの方を振り向き、メイは人差し指を立てる。"
    return sp


def _dark_pixels(card: Image.Image, box: tuple[int, int, int, int]) -> int:
    gray = card.crop(box).convert("L")
    return sum(gray.histogram()[:100])


@pytest.mark.parametrize("make", [example_screenplay, chinese, japanese])
def test_one_card_per_panel_all_the_same_size(make):
    sp = make()
    cards = render_storyboard(sp)
    assert len(cards) == len(sp["panels"])
    for card in cards:
        assert card.mode == "RGB"
        assert card.size == (DEFAULT_WIDTH, DEFAULT_HEIGHT)
    cards = render_storyboard(sp, 512, 384)
    assert {card.size for card in cards} == {(512, 384)}


def test_accepts_a_model_and_rejects_bad_input():
    sp = example_screenplay()
    from_dict = render_storyboard(sp)
    from_model = render_storyboard(Screenplay.model_validate(sp))
    assert [c.tobytes() for c in from_dict] == [c.tobytes() for c in from_model]
    with pytest.raises(InputError, match="width"):
        render_storyboard(sp, 100, 512)
    sp["panels"][0]["shot"] = "dolly_zoom"
    with pytest.raises(InputError, match=r"panels\[0\]\.shot|dolly_zoom"):
        render_storyboard(sp)  # one of the engine's errors, naming the field, never pydantic's


@pytest.mark.parametrize("make", [example_screenplay, chinese, japanese])
def test_text_is_drawn(make):
    cards = render_storyboard(make())
    for card in cards:
        w, h = card.size
        # The text fields lie in the lower half; the header is above the camera frame.
        assert _dark_pixels(card, (0, h // 2 - 80, w, h)) > 1500
        assert _dark_pixels(card, (0, 0, w, 90)) > 300
    # Different words draw different pixels in the text area.
    sp = make()
    sp["panels"][0]["action"] = "—"
    changed = render_storyboard(sp)[0]
    assert changed.crop((0, 400, 768, 1024)).tobytes() != cards[0].crop((0, 400, 768, 1024)).tobytes()


def test_card_text_lists_every_field():
    sp = Screenplay.model_validate(example_screenplay())
    texts = {item.field: item.text for item in card_items(sp, sp.panels[0])}
    assert texts["cast"] == "—"
    assert texts["dialogue d1"] == "[caption] Midnight. The station is empty."
    assert texts["props"] == "timetable board"
    items = card_items(sp, sp.panels[1])
    texts = {item.field: item.text for item in items}
    assert texts["cast"] == "Akira (akira), Mei (mei)"
    assert texts["action"] == "Akira turns to Mei, who raises a finger."
    assert texts["expression"] == "Akira anxious, Mei calm"
    assert texts["background"] == "platform edge"
    assert texts["lighting"] == "night, wet reflections"
    assert texts["props"] == "—"
    assert texts["dialogue d2"] == "Akira: Did we miss it? (worried)"
    assert texts["dialogue d3"] == "Mei: Listen... (whisper)"
    assert [item.label for item in items if item.label] == [
        "CAST",
        "ACTION",
        "EXPRESSION",
        "BACKGROUND",
        "LIGHTING",
        "PROPS",
        "DIALOGUE",
    ]


def test_unknown_references_are_shown_not_dropped():
    sp = example_screenplay()
    sp["panels"][1]["characters"].append("ghost")
    sp["panels"][1]["dialogue"].append("d9")
    model = Screenplay.model_validate(sp)
    texts = {item.field: item.text for item in card_items(model, model.panels[1])}
    assert "ghost (not in the cast)" in texts["cast"]
    assert texts["dialogue d9"] == "[missing line d9]"
    assert len(render_storyboard(sp)) == 2


@pytest.mark.parametrize("make", [chinese, japanese])
def test_cjk_cards_have_no_missing_glyphs(make, caplog: pytest.LogCaptureFixture):
    with caplog.at_level(logging.WARNING, logger="mangaka.page"):
        render_storyboard(make())
    assert caplog.records == []


def test_missing_glyphs_are_reported(caplog: pytest.LogCaptureFixture):
    sp = example_screenplay()
    sp["dialogue"][2]["line"] = "Listen 😀"
    with caplog.at_level(logging.WARNING, logger="mangaka.page"):
        render_storyboard(sp)
    (record,) = caplog.records
    assert "p2" in record.getMessage() and "dialogue d3" in record.getMessage()
    assert "U+1F600" in record.getMessage()


LONG = (
    "Akira turns slowly to Mei, who raises one finger to her lips while the rain drums on the "
    "tin roof of the platform and a far whistle echoes down the valley, then fades into the night."
)


def test_text_shrinks_before_it_is_cut(caplog: pytest.LogCaptureFixture):
    items = [CardItem("action", LONG, "ACTION")]
    at_16 = wrap(LONG, load_font(16, "en"), 300)
    room = len(at_16) * round(16 * 1.32)
    assert len(wrap(LONG, load_font(20, "en"), 300)) > len(at_16)  # does not fit at full size
    layout = layout_card(items, "en", 300, room, 20, 12)
    assert 12 < layout.font_size < 20
    assert layout.cut == []
    ((_, lines),) = layout.blocks
    assert " ".join(lines) == LONG


def test_too_long_text_is_ellipsized_with_a_warning(caplog: pytest.LogCaptureFixture):
    items = [CardItem("action", LONG, "ACTION"), CardItem("lighting", "night", "LIGHTING")]
    layout = layout_card(items, "en", 200, 3 * round(12 * 1.32) + round(12 * 0.45), 20, 12)
    assert layout.font_size == 12
    assert layout.cut == ["action"]
    (_, action), (_, lighting) = layout.blocks
    assert len(action) == 2 and action[-1].endswith("…")
    assert lighting == ["night"]
    assert all(text_width(line, load_font(12, "en")) <= 200 for line in action)

    # Not even one line a field: the rest is counted, not dropped silently.
    many = [CardItem(f"dialogue d{i}", f"line {i}") for i in range(10)]
    layout = layout_card(many, "en", 200, 3 * round(12 * 1.32) + 2 * round(12 * 0.45), 20, 12)
    assert layout.blocks[-1][1] == ["… +8 more"]
    assert layout.cut == [f"dialogue d{i}" for i in range(2, 10)]

    sp = example_screenplay()
    sp["panels"][1]["action"] = (LONG + " " + LONG)[:240]
    with caplog.at_level(logging.WARNING, logger="mangaka.page"):
        cards = render_storyboard(sp, 256, 256)
    assert len(cards) == 2
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "p2" in record.getMessage() and "action" in record.getMessage()


def test_every_shot_and_angle_renders():
    sp = chinese()
    assert {p["shot"] for p in sp["panels"]} == set(SHOTS)
    sp["panels"][1]["angle"] = "dutch"
    cards = render_storyboard(sp, 384, 512)
    frames = {card.crop((0, 90, 384, 250)).tobytes() for card in cards}
    assert len(frames) == len(cards)  # each shot draws its own camera frame


def test_output_is_deterministic():
    first = [c.tobytes() for c in render_storyboard(chinese())]
    second = [c.tobytes() for c in render_storyboard(chinese())]
    assert first == second


def test_every_language_has_every_label():
    from mangaka.page.storyboard import _all_labels
    from mangaka.screenplay.models import EMOTIONS, LANGUAGES

    tables = _all_labels()
    assert set(tables) == set(LANGUAGES)
    for language, words in tables.items():
        assert set(words["shots"]) == set(SHOTS), language
        assert set(words["angles"]) == set(ANGLES), language
        assert set(words["emotions"]) == set(EMOTIONS), language
        assert set(words["fields"]) == set(tables["en"]["fields"]), language
        assert set(words["phrases"]) == set(tables["en"]["phrases"]), language


def test_chinese_cards_speak_chinese():
    sp = Screenplay.model_validate(chinese())
    items = card_items(sp, sp.panels[2])
    assert [item.label for item in items if item.label] == [
        "角色",
        "动作",
        "表情",
        "背景",
        "光线",
        "道具",
        "对白",
    ]
    texts = {item.field: item.text for item in items}
    assert texts["cast"] == "林晓 (lin)、陈默 (chen)"
    assert texts["dialogue d1"] == "【旁白】午夜，车站空无一人。"
    assert texts["dialogue d2"] == "林晓：「我们是不是错过了？」（担忧）"


def test_japanese_cards_speak_japanese():
    sp = Screenplay.model_validate(japanese())
    labels = [item.label for item in card_items(sp, sp.panels[0]) if item.label]
    assert labels[:2] == ["登場人物", "動作"] and labels[-1] == "台詞"


# ---------------------------------------------------------------- cards fitted to their frames


@pytest.mark.parametrize("name", ["golden_screenplay.json", "golden_screenplay.zh.json"])
@pytest.mark.parametrize("page", ["A4 300dpi", "B5 300dpi", "webtoon 800px", "custom"])
def test_every_card_is_drawn_whole_for_its_frame_in_every_layout(name, page):
    """Pages without images get each panel's card drawn at its frame's size and shape (so placing it
    crops nothing): for every panels-per-page count and page size, each card is exactly its frame,
    and every row of every card fits (nothing is cut, so the report is empty)."""
    from mangaka.page.cards import fitted_cards
    from mangaka.page.layout import MAX_PANELS_PER_PAGE, LayoutOptions, layout_pages
    from mangaka.page.render import compose_pages

    sp = load_screenplay(json.loads((DATA / name).read_text(encoding="utf-8")))
    for per_page in range(1, MAX_PANELS_PER_PAGE + 1):
        direction = "vertical" if page == "webtoon 800px" else "rtl"
        size = {"width": 3508, "height": 2480} if page == "custom" else {}  # landscape: wide, short frames
        options = LayoutOptions(page=page, direction=direction, panels_per_page=per_page, **size)
        pages = layout_pages(sp.panels, options)
        cards, problems, cut = fitted_cards(sp, pages)
        assert problems == [] and cut == [], (per_page, problems)
        for layout in pages:
            for frame in layout.frames:
                assert cards[frame.panel_id].size == (frame.rect.w, frame.rect.h)
    composed = compose_pages(
        sp, [], layout=LayoutOptions(page=page, direction=direction, **size), cards=True, letter=False
    )
    assert composed.problems == []


def test_a_card_too_small_for_its_text_says_so_in_the_report():
    from mangaka.page.layout import LayoutOptions
    from mangaka.page.render import compose_pages

    sp = load_screenplay(json.loads((DATA / "golden_screenplay.json").read_text(encoding="utf-8")))
    long_action = sp.panels[0].model_copy(update={"action": "A very long action. " * 200})
    sp = sp.model_copy(update={"panels": [long_action, *sp.panels[1:]]})
    options = LayoutOptions(page="custom", width=600, height=800, panels_per_page=8)
    composed = compose_pages(sp, [], layout=options, cards=True, letter=False)
    pid = sp.panels[0].id
    continues, cut = composed.problems
    assert continues.startswith(f"panel {pid}: its storyboard card's text does not fit") and (
        f"continues on 2 more frame(s) ({pid}~2, {pid}~3)" in continues
    )
    assert (
        cut.startswith(f"panel {pid}: its storyboard card's text does not fit")
        and "even over 3 frames" in cut
    )
    assert "action" in cut.split("cut with")[1]


def test_a_card_too_long_for_its_frame_continues_on_the_next_frame():
    """A card whose text does not fit its frame at the smallest legible size takes the next frame
    too (its continuation, ``p1~2``, right after it in reading order): nothing is cut, the report
    says so, and its balloons stay on its first frame."""
    from mangaka.page.layout import LayoutOptions
    from mangaka.page.render import compose_pages

    sp = load_screenplay(json.loads((DATA / "golden_screenplay.json").read_text(encoding="utf-8")))
    long_action = sp.panels[0].model_copy(update={"action": " ".join([LONG] * 6)})
    sp = sp.model_copy(update={"panels": [long_action, *sp.panels[1:]]})
    options = LayoutOptions(page="custom", width=600, height=800, panels_per_page=8)
    composed = compose_pages(sp, [], layout=options, cards=True)
    pid = sp.panels[0].id
    assert composed.problems[0] == (
        f"panel {pid}: its storyboard card's text does not fit its "
        f"{composed.layout[0].frames[0].rect.w}x{composed.layout[0].frames[0].rect.h} frame at the "
        f"smallest legible size; it continues on 1 more frame(s) ({pid}~2)"
    )
    assert not [p for p in composed.problems if "cut with" in p]
    order = [frame.panel_id for page in composed.layout for frame in page.frames]
    assert order[:3] == [pid, f"{pid}~2", sp.panels[1].id]
    assert f"{pid}~2" not in composed.balloons and composed.balloons[pid]
    assert composed.report().startswith(f"{len(composed.pages)} pages, {len(sp.panels)} panels")


@pytest.mark.parametrize("language", ["en", "zh"])
def test_text_left_for_the_next_frame_is_the_rest_of_the_text(language):
    """Spilled text is exactly what the first part did not show: the first part's lines, then the
    spilled items, give every field back whole and in order."""
    text = " ".join([LONG] * 3) if language == "en" else "午夜的车站空无一人，只有雨声敲打着铁皮屋顶。" * 12
    items = [
        CardItem("cast", "Mei", "CAST"),
        CardItem("action", text, "ACTION"),
        CardItem("props", "a lamp", "PROPS"),
    ]
    spill: list[CardItem] = []
    room = 8 * round(12 * 1.32) + round(12 * 0.45)
    layout = layout_card(items, language, 200, room, 20, 12, spill)
    assert layout.font_size == 12 and layout.cut == []
    (_, cast), (_, shown) = layout.blocks
    assert cast == ["Mei"] and len(shown) == 7
    rest, props = spill
    assert (rest.field, rest.label) == ("action", "ACTION") and props == items[2]
    joiner = " " if language == "en" else ""
    assert joiner.join([*shown, rest.text]) == text
    spill = []
    tiny = layout_card([items[0]], language, 200, 2, 20, 12, spill)  # not even one line fits: cut, said
    assert spill == [] and tiny.cut == ["cast"]
