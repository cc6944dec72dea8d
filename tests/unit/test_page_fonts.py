from __future__ import annotations

import sys

import pytest
from PIL import ImageFont

from mangaka.errors import BackendMissingError, InputError
from mangaka.page import fonts
from mangaka.page.fonts import (
    FACE_HK,
    FACE_JP,
    FACE_KR,
    FACE_SC,
    FACE_TC,
    NO_END,
    NO_START,
    ellipsize,
    face_index,
    load_font,
    missing_glyphs,
    text_width,
    wrap,
)

EN = "The quick brown fox jumps over the lazy dog, twice (or maybe three times)!"
ZH = "你好，世界！今天天气很好。我们去公园散步吧？「好啊」，她笑着说……"
JA = "「こんにちは。」と彼女は言った。コーヒーを飲みましょう！ちょっと待って……ね？"


@pytest.mark.parametrize(
    ("language", "face"),
    [
        ("zh", FACE_SC),
        ("ja", FACE_JP),
        ("en", FACE_JP),
        ("ko", FACE_KR),
        ("zh_TW", FACE_TC),
        ("zh-Hant", FACE_TC),
        ("zh-HK", FACE_HK),
        (" ZH ", FACE_SC),
    ],
)
def test_face_index_by_language(language: str, face: int):
    assert face_index(language) == face


def test_unknown_language_is_an_input_error():
    with pytest.raises(InputError, match="xx"):
        face_index("xx")


def test_load_font_is_cached_and_uses_the_right_face():
    font = load_font(20, "zh")
    assert isinstance(font, ImageFont.FreeTypeFont)
    assert load_font(20, "zh") is font
    assert font.getname() == ("Noto Sans CJK SC", "Regular")
    assert load_font(20, "ja").getname() == ("Noto Sans CJK JP", "Regular")
    assert load_font(20, "en").getname() == ("Noto Sans CJK JP", "Regular")
    assert font.layout_engine == ImageFont.Layout.BASIC
    with pytest.raises(InputError):
        load_font(0, "en")


def test_missing_font_package_names_the_pip_command(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "noto_cjk_sans_otc", None)  # makes the import fail
    with pytest.raises(BackendMissingError, match=r"pip install noto-cjk-sans-otc==0\.0\.1"):
        fonts.font_path()


def _mask(font: ImageFont.FreeTypeFont, ch: str) -> tuple[tuple[int, int], bytes]:
    mask = font.getmask(ch)
    return mask.size, bytes(mask)


@pytest.mark.parametrize(("language", "text"), [("zh", ZH), ("ja", JA), ("en", EN)])
def test_text_draws_real_glyphs_not_tofu(language: str, text: str):
    font = load_font(24, language)
    notdef = _mask(font, "\U0010ffff")  # a noncharacter: drawn as .notdef
    assert _mask(font, "\ue000") == notdef  # a private-use character the font lacks: same box
    for ch in set(text) - {" "}:
        mask = _mask(font, ch)
        assert mask != notdef, f"{ch!r} (U+{ord(ch):04X}) draws as tofu in the {language} face"
        assert font.getmask(ch).getbbox() is not None, f"{ch!r} draws nothing"


def test_missing_glyphs():
    assert missing_glyphs(ZH, "zh") == []
    assert missing_glyphs(JA, "ja") == []
    assert missing_glyphs(EN + "\n\t", "en") == []
    assert missing_glyphs("a😀b😀\ue000", "en") == ["😀", "\ue000"]


def _check_lines(lines: list[str], text: str, font: ImageFont.FreeTypeFont, max_width: float) -> None:
    assert "".join(lines).replace(" ", "") == text.replace(" ", ""), "text was dropped or changed"
    for i, line in enumerate(lines):
        assert line == line.strip(), f"line {i} has spaces at its ends: {line!r}"
        assert text_width(line, font) <= max_width, f"line {i} is too wide: {line!r}"
        if i > 0:
            assert line[0] not in NO_START, f"line {i} starts with {line[0]!r}: {lines}"
        if i < len(lines) - 1:
            assert line[-1] not in NO_END, f"line {i} ends with {line[-1]!r}: {lines}"


def test_wrap_english_breaks_at_spaces():
    font = load_font(20, "en")
    for max_width in range(120, 600, 37):
        lines = wrap(EN, font, max_width)
        _check_lines(lines, EN, font, max_width)
        assert " ".join(lines) == EN
    assert wrap(EN, font, 10_000) == [EN]


@pytest.mark.parametrize(("language", "text"), [("zh", ZH), ("ja", JA)])
def test_wrap_cjk_breaks_anywhere_with_kinsoku(language: str, text: str):
    font = load_font(20, language)
    for ems in range(4, 16):
        lines = wrap(text, font, ems * 20)
        _check_lines(lines, text, font, ems * 20)
    assert len(wrap(text, font, 100)) > 1


def test_wrap_kinsoku_pushes_punctuation_and_brackets():
    ja = load_font(20, "ja")
    assert wrap("あいう「えお」", ja, 80) == ["あいう", "「えお」"]  # 「 never ends a line
    assert wrap("あいう。えお", ja, 60) == ["あい", "う。え", "お"]  # 。 never starts one
    assert wrap("コーヒー", ja, 60) == ["コー", "ヒー"]  # nor does ー
    zh = load_font(20, "zh")
    assert wrap("你好，世界", zh, 40) == ["你", "好，", "世界"]
    assert wrap("好了……吧", zh, 60) == ["好", "了……", "吧"]


def test_wrap_mixed_cjk_and_latin():
    zh = load_font(20, "zh")
    lines = wrap("我的iPhone很好", zh, 100)
    _check_lines(lines, "我的iPhone很好", zh, 100)
    assert "iPhone" in "".join(lines)


def test_wrap_breaks_a_word_longer_than_the_line():
    font = load_font(20, "en")
    word = "Supercalifragilisticexpialidocious"
    lines = wrap(f"a {word} b", font, 60)
    assert len(lines) > 3
    assert "".join(lines).replace(" ", "") == f"a{word}b"
    assert all(text_width(line, font) <= 60 for line in lines)


def test_wrap_paragraphs_and_empty_text():
    font = load_font(20, "en")
    assert wrap("", font, 100) == []
    assert wrap("a\n\nb", font, 100) == ["a", "", "b"]
    assert wrap("a\tb\r\nc", font, 100) == ["a b", "c"]
    assert wrap("x", font, 1) == ["x"]  # one character a line at least: nothing is lost


def test_ellipsize():
    font = load_font(20, "en")
    assert ellipsize("short", font, 200) == "short"
    cut = ellipsize(EN, font, 200)
    assert cut.endswith("…")
    assert EN.startswith(cut[:-1])
    assert text_width(cut, font) <= 200


# A line in each of the other languages manga is adapted from, with the letters each one needs.
EUROPEAN_AND_KOREAN = {
    "ko": "“지수야, 어디 가?” 민호가 물었다. 괜찮아요… 네, 그래요!",
    "fr": "— Ça ne va pas ? demanda-t-elle. « Évidemment », répondit Léon. Où êtes-vous, Cœur-de-Lion ?",
    "es": "—¿Quién es? —preguntó Ana—. ¡Señor Peña! Año, niño, acción, pingüino.",
    "de": "„Wer ist da?“, fragte Jürgen. »Größe, Straße, Äpfel, Öl, Übermut.«",
    "ru": "— Кто там? — спросил он. «Ёлка, щи, эхо, объём», — сказала Маша.",
}


@pytest.mark.parametrize("language", sorted(EUROPEAN_AND_KOREAN))
def test_korean_latin_with_diacritics_and_cyrillic_have_every_glyph(language):
    """Hangul, Latin with its diacritics and Cyrillic are all in the face each language letters with,
    the dashes, guillemets and low quotes of the European conventions too."""
    assert missing_glyphs(EUROPEAN_AND_KOREAN[language], language) == []
