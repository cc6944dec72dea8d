"""A screenplay line as it is lettered: a quote cut by its attribution ends as a sentence, in the
balloons and on the storyboard cards, while the screenplay keeps the verbatim line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from mangaka.page.layout import LayoutOptions
from mangaka.page.lettered import lettered
from mangaka.page.lettering import LetteringOptions
from mangaka.page.render import compose_pages
from mangaka.page.storyboard import card_items, render_storyboard
from mangaka.screenplay.models import Screenplay
from mangaka.screenplay.validate import load_screenplay

DATA = Path(__file__).parent / "data"
SMALL = LayoutOptions(page="custom", width=1240, height=1754, panels_per_page=4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We're closed,", "We're closed."),
        ("We're closed,   ", "We're closed."),  # trailing spaces trimmed
        ("We're closed,\u200b", "We're closed."),  # and invisible format characters
        ("We're closed ,", "We're closed."),  # a stray space goes with the comma
        ("We're closed.", "We're closed."),
        ("We're closed!", "We're closed!"),
        ("Are we closed?", "Are we closed?"),
        ("We're closed", "We're closed"),  # no final mark: left as it is
        ("We're closed…", "We're closed…"),
        ("We're closed...", "We're closed..."),
        ("We're clo—", "We're clo—"),  # interrupted
        ("Listen:", "Listen:"),
        ("Wait…,", "Wait…"),  # already ended: the comma is dropped, no fourth dot
        ("What?!,", "What?!"),
        ("Wait—,", "Wait—"),
        ("He said 'we're closed,'", "He said 'we're closed.'"),  # inside the closing quote
        ('He said "we\'re closed,"', 'He said "we\'re closed."'),
        ("She said “he said ‘closed,’”", "She said “he said ‘closed.’”"),  # nested quotes
        ("He said 'we're closed',", "He said 'we're closed'."),  # after it: British style
        ("(quietly,)", "(quietly.)"),
        ("Well, yes, we're closed,", "Well, yes, we're closed."),  # only the final comma
        ("Yes, we're closed.", "Yes, we're closed."),
        ("We're closed﹐", "We're closed."),  # the small comma
        ("Closed，", "Closed."),  # a fullwidth comma in English: still a Latin full stop
        (",", ","),  # nothing before the comma: nothing to end
        ("", ""),
        ("   ", ""),
    ],
)
def test_english(text, expected):
    assert lettered(text, "en") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("我们关门了，", "我们关门了。"),
        ("我们关门了,", "我们关门了。"),  # an ASCII comma after a Chinese character
        ("我们关门了、", "我们关门了。"),
        ("「我们关门了，」", "「我们关门了。」"),
        ("“我们关门了，”", "“我们关门了。”"),
        ("等等……，", "等等……"),
        ("等等！，", "等等！"),
        ("我们关门了。", "我们关门了。"),
        ("我们——", "我们——"),
        ("快点，姑娘。", "快点，姑娘。"),  # a comma inside the line stays
        ("OK，", "OK。"),
        ("OK,", "OK."),  # an ASCII comma after a Latin word
        ("我们关门了，  ", "我们关门了。"),
    ],
)
def test_chinese(text, expected):
    assert lettered(text, "zh") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("閉店です、", "閉店です。"),
        ("閉店です，", "閉店です。"),  # the fullwidth comma too
        ("閉店です,", "閉店です。"),
        ("閉店です、」", "閉店です。」"),
        ("「閉店です」、", "「閉店です」。"),
        ("『閉店です、』", "『閉店です。』"),
        ("待って〜、", "待って〜"),
        ("しっ……、", "しっ……"),
        ("閉店です。", "閉店です。"),
        ("閉店です？", "閉店です？"),
        ("ｼﾒﾃﾏｽ､", "ｼﾒﾃﾏｽ｡"),  # halfwidth stays halfwidth
        ("OK,", "OK."),
    ],
)
def test_japanese(text, expected):
    assert lettered(text, "ja") == expected


@pytest.mark.parametrize(
    ("language", "text", "expected"),
    [
        ("fr", "Nous sommes fermés,", "Nous sommes fermés."),
        ("fr", "« Nous sommes fermés, »", "« Nous sommes fermés. »"),  # spaces inside guillemets
        ("fr", "« Nous sommes fermés,\u00a0»", "« Nous sommes fermés.\u00a0»"),
        ("fr", "Fermé !,", "Fermé !"),
        ("es", "Estamos cerrados,", "Estamos cerrados."),
        ("es", "¿Cerrados?,", "¿Cerrados?"),
        ("es", "«Estamos cerrados,»", "«Estamos cerrados.»"),
        ("ru", "Мы закрыты,", "Мы закрыты."),
        ("ru", "«Мы закрыты,»", "«Мы закрыты.»"),
        ("ko", "문 닫았어요,", "문 닫았어요."),  # Korean ends with the Latin full stop
        ("ko", "문 닫았어요.", "문 닫았어요."),
        ("zh-Hans", "我们关门了，", "我们关门了。"),
        ("JA", "閉店です、", "閉店です。"),
        ("xx", "Closed,", "Closed."),  # a language not known: as English
    ],
)
def test_other_languages(language, text, expected):
    assert lettered(text, language) == expected


@pytest.mark.parametrize("language", ["en", "zh", "ja", "ko", "fr", "es", "ru"])
@pytest.mark.parametrize("text", ["We're closed,", "我们关门了，", "閉店です、」", "Wait…,", "Closed."])
def test_lettering_twice_changes_nothing_more(language, text):
    once = lettered(text, language)
    assert lettered(once, language) == once


def _screenplay(language: str = "en", **changes: str) -> Screenplay:
    name = "golden_screenplay.json" if language == "en" else "golden_screenplay.zh.json"
    data = json.loads((DATA / name).read_text(encoding="utf-8"))
    for line_id, text in changes.items():
        next(d for d in data["dialogue"] if d["id"] == line_id)["line"] = text
    return load_screenplay(data)


def _images(n: int) -> list[Image.Image]:
    return [Image.new("RGB", (512, 512), (40 * i % 255, 90, 160)) for i in range(n)]


def _balloon_text(sp: Screenplay, composed, line_id: str) -> str:
    panel = next(p for p in sp.panels if line_id in p.dialogue)
    plan = next(p for p in composed.balloons[panel.id] if p.line_id == line_id)
    assert plan.fits
    return ("" if plan.language in ("zh", "ja") else " ").join(plan.lines)  # CJK wraps by character


def test_compose_page_letters_a_cut_quote_as_a_sentence_and_keeps_the_screenplay():
    sp = _screenplay(d2="We're closed,", d1="Dusk,")
    composed = compose_pages(sp, _images(len(sp.panels)), layout=SMALL)
    assert composed.problems == []
    assert _balloon_text(sp, composed, "d2") == "We're closed."
    assert _balloon_text(sp, composed, "d1") == "Dusk."  # the narrator's caption too
    assert _balloon_text(sp, composed, "d3") == "Hurry, girl. The river won't wait."  # unchanged
    assert next(d for d in sp.dialogue if d.id == "d2").line == "We're closed,"  # still verbatim


@pytest.mark.parametrize("vertical", [False, True])
def test_compose_page_letters_a_chinese_cut_quote_with_the_ideographic_full_stop(vertical):
    sp = _screenplay("zh", d2="我们关门了，")
    lettering = LetteringOptions(language="zh", vertical=vertical, direction="rtl")
    composed = compose_pages(sp, _images(len(sp.panels)), layout=SMALL, lettering=lettering)
    assert _balloon_text(sp, composed, "d2") == "我们关门了。"
    assert next(d for d in sp.dialogue if d.id == "d2").line == "我们关门了，"


def test_storyboard_pages_letter_the_balloons_on_the_cards():
    sp = _screenplay(d2="We're closed,")
    composed = compose_pages(sp, [], layout=SMALL, cards=True)
    assert _balloon_text(sp, composed, "d2") == "We're closed."


def test_storyboard_card_shows_the_lettered_line():
    sp = _screenplay(d2="We're closed,", d1="Dusk,")
    by_panel = {p.id: p for p in sp.panels}
    spoken = [item.text for item in card_items(sp, by_panel["p2"]) if item.field == "dialogue d2"]
    caption = [item.text for item in card_items(sp, by_panel["p1"]) if item.field == "dialogue d1"]
    assert spoken == ["Lin: We're closed. (shout)"]
    assert caption == ["[caption] Dusk."]
    assert len(render_storyboard(sp)) == len(sp.panels)  # the cards draw from the same items
    assert next(d for d in sp.dialogue if d.id == "d2").line == "We're closed,"


def test_a_chinese_storyboard_card_shows_the_ideographic_full_stop():
    sp = _screenplay("zh", d2="我们关门了，")
    panel = next(p for p in sp.panels if p.id == "p2")
    (spoken,) = [item.text for item in card_items(sp, panel) if item.field == "dialogue d2"]
    assert "我们关门了。（" in spoken and "，（" not in spoken
