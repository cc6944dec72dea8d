"""Fonts and line breaking for lettering: Noto Sans CJK from PyPI, never a system font.

The font is ``NotoSansCJK-Regular.ttc`` from the PyPI package ``noto-cjk-sans-otc==0.0.1``, a
collection whose faces differ only in the regional glyph shapes of shared ideographs (and all carry
the same Latin): 0 JP, 1 KR, 2 SC, 3 TC, 4 HK.

Fonts load with Pillow's BASIC layout engine, never raqm: the output is then the same on every
machine (raqm needs the system ``libfribidi``), and a string's width is exactly the sum of its
characters' advances (this font has no ``kern`` table, and BASIC does not apply GPOS), which lets
:func:`wrap` measure a character once instead of every candidate line. The one exception is
:func:`load_font_raqm`, for vertical text only (``direction="ttb"``), used where
:func:`raqm_available` says raqm works; lettering has a per-character fallback without it.

Glyph coverage (:func:`missing_glyphs`) does not read the font's cmap (fontTools is not a
dependency): it compares each character's rendered mask with the mask of ``.notdef``, the box that
FreeType draws for an unmapped character. That is exactly the question that matters, "would this
draw as tofu?", costs about 0.1 ms per distinct character (cached), and needs nothing but Pillow.
"""

from __future__ import annotations

import re
from functools import lru_cache

from PIL import ImageFont, features

from ..errors import BackendMissingError, InputError

FONT_PACKAGE = "noto-cjk-sans-otc==0.0.1"

FACE_JP = 0
FACE_KR = 1
FACE_SC = 2
FACE_TC = 3
FACE_HK = 4

# Screenplay language (BCP 47-ish, case and "_" tolerated) -> face. English uses the JP face: the
# Latin glyphs are identical in every face, and a Japanese name or sound effect dropped into an
# English script is the common case in manga, so its kana and kanji get Japanese shapes.
_FACES: dict[str, int] = {
    "ja": FACE_JP,
    "en": FACE_JP,
    "fr": FACE_JP,  # Latin with its diacritics and Cyrillic are in every face (Noto Sans CJK)
    "es": FACE_JP,
    "de": FACE_JP,
    "ru": FACE_JP,
    "ko": FACE_KR,
    "zh": FACE_SC,
    "zh-cn": FACE_SC,
    "zh-sg": FACE_SC,
    "zh-hans": FACE_SC,
    "zh-tw": FACE_TC,
    "zh-hant": FACE_TC,
    "zh-hk": FACE_HK,
    "zh-mo": FACE_HK,
}

# Kinsoku shori: characters that may not start a line (closing brackets and punctuation, iteration
# marks, the long-vowel mark, small kana), and characters that may not end one (opening brackets).
NO_START = frozenset(
    "。、，．！？：；・」』）】〉》〕〙〗〟］｝｠…‥ー〜～ゝゞヽヾ々"
    "ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶ"
    ",.!?:;)]}%’”»"
)
NO_END = frozenset("「『（【〈《〔〘〖〝［｛｟([{‘“«")

# Scripts written without spaces, where a line may break between any two characters.
_CJK_RANGES = (
    "\u2e80-\u2fdf"  # CJK radicals, Kangxi radicals
    "\u3000-\u303f"  # CJK symbols and punctuation
    "\u3040-\u30ff"  # hiragana, katakana
    "\u3100-\u312f\u31a0-\u31bf"  # bopomofo
    "\u31c0-\u31ff"  # CJK strokes, katakana phonetic extensions
    "\u3200-\u33ff"  # enclosed CJK, CJK compatibility
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\ufe30-\ufe4f"  # CJK compatibility forms
    "\uff00-\uffef"  # halfwidth and fullwidth forms
    "\U00020000-\U0003ffff"  # CJK extensions B and later
)
_TOKEN = re.compile(rf"\s+|[{_CJK_RANGES}]|[^\s{_CJK_RANGES}]+")
# Line-break controls that wrap() turns into breaks or spaces, never draws.
_CONTROL_SPACE = re.compile(r"[\t\v\f\x1c-\x1f\x85\u2028\u2029]")

_CHECK_SIZE = 24  # pixel size of the masks compared by missing_glyphs()
_UNMAPPED = "\U0010ffff"  # a noncharacter: never in any cmap, so it always draws as .notdef


def font_path() -> str:
    """The path of ``NotoSansCJK-Regular.ttc``; raises :class:`BackendMissingError` without it."""
    try:
        from noto_cjk_sans_otc import FONT_PATH
    except ImportError as exc:
        raise BackendMissingError(
            "The lettering font is not installed (Python package noto_cjk_sans_otc). "
            f"Install it with: pip install {FONT_PACKAGE}"
        ) from exc
    return str(FONT_PATH)


def face_index(language: str) -> int:
    """The face of the collection for a screenplay language: zh -> SC (2), ja -> JP (0), en -> JP (0).

    Also accepted: ko (KR), zh-tw/zh-hant (TC), zh-hk/zh-mo (HK). Raises :class:`InputError`
    for any other language.
    """
    key = language.strip().lower().replace("_", "-")
    if key not in _FACES:
        raise InputError(f"No lettering face for language {language!r}; known: {', '.join(sorted(_FACES))}.")
    return _FACES[key]


def load_font(size: int, language: str = "en") -> ImageFont.FreeTypeFont:
    """Noto Sans CJK at ``size`` pixels in the face for ``language``; cached, BASIC layout."""
    if size < 1:
        raise InputError(f"Font size must be at least 1 pixel, got {size}.")
    return _load_face(int(size), face_index(language))


@lru_cache(maxsize=128)
def _load_face(size: int, index: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(font_path(), size, index=index, layout_engine=ImageFont.Layout.BASIC)


def raqm_available() -> bool:
    """Whether Pillow's raqm layout works here: built in (``PIL.features``) and able to lay out
    vertical text. Pillow's wheel has raqm but loads the system ``libfribidi`` at run time, without
    which any ``direction=`` raises KeyError. Checked once per process."""
    return _raqm_works(font_path())


@lru_cache(maxsize=4)
def _raqm_works(path: str) -> bool:
    if not features.check("raqm"):
        return False
    try:
        font = ImageFont.truetype(path, 16, index=FACE_JP, layout_engine=ImageFont.Layout.RAQM)
        font.getbbox("\u3042\u3002", direction="ttb")
    except (KeyError, OSError, ValueError):
        return False
    return True


def load_font_raqm(size: int, language: str = "en") -> ImageFont.FreeTypeFont:
    """Like :func:`load_font` but with Pillow's raqm layout (for ``direction="ttb"`` vertical text:
    the font's ``vert`` feature moves and rotates punctuation). Raises :class:`BackendMissingError`
    where :func:`raqm_available` is false."""
    if size < 1:
        raise InputError(f"Font size must be at least 1 pixel, got {size}.")
    index = face_index(language)
    if not raqm_available():
        raise BackendMissingError(
            "Pillow's raqm text layout is unavailable (it needs the system library libfribidi, e.g. "
            "apt install libfribidi0); use the basic layout engine for vertical text instead."
        )
    return _load_face_raqm(int(size), index)


@lru_cache(maxsize=64)
def _load_face_raqm(size: int, index: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(font_path(), size, index=index, layout_engine=ImageFont.Layout.RAQM)


def missing_glyphs(text: str, language: str) -> list[str]:
    """The distinct characters of ``text`` that the face for ``language`` would draw as ``.notdef``
    (tofu), in order of first appearance. Line breaks and tabs are skipped: :func:`wrap` turns them
    into line breaks and spaces."""
    index = face_index(language)
    seen: set[str] = set()
    missing: list[str] = []
    for ch in text:
        if ch in seen:
            continue
        seen.add(ch)
        if ch in "\n\r" or _CONTROL_SPACE.match(ch):
            continue
        if _mask_key(index, ch) == _mask_key(index, _UNMAPPED):
            missing.append(ch)
    return missing


@lru_cache(maxsize=65536)
def _mask_key(index: int, ch: str) -> tuple[tuple[int, int], bytes]:
    mask = _load_face(_CHECK_SIZE, index).getmask(ch)
    return mask.size, bytes(mask)


@lru_cache(maxsize=65536)
def _advance(font: ImageFont.FreeTypeFont, ch: str) -> float:
    return font.getlength(ch)


def text_width(text: str, font: ImageFont.FreeTypeFont) -> float:
    """The advance width of one line of ``text`` in pixels."""
    if getattr(font, "layout_engine", None) == ImageFont.Layout.BASIC:
        return sum(_advance(font, ch) for ch in text)
    return font.getlength(text)


def wrap(text: str, font: ImageFont.FreeTypeFont, max_width: float) -> list[str]:
    """Break ``text`` into lines no wider than ``max_width`` pixels.

    English breaks at spaces; Chinese and Japanese break between any two characters (and between
    CJK and Latin). Kinsoku by pushing out: a character of :data:`NO_START` (``。、」)``…) moves to
    the next line with the character before it, and one of :data:`NO_END` (``「（``…) with the
    character after it, so no line starts or ends with one. A word wider than the line is broken
    between characters (still avoiding those breaks where the piece keeps one character).
    ``\\n`` forces a break (an empty paragraph gives an empty line). Only the spaces at a break
    are removed: joining the lines gives the text back, whitespace aside. Empty text gives no lines.
    """
    if not text:
        return []
    text = _CONTROL_SPACE.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    lines: list[str] = []
    for paragraph in text.split("\n"):
        lines.extend(_wrap_paragraph(paragraph, font, max_width) or [""])
    return lines


def unbreakable_width(text: str, font: ImageFont.FreeTypeFont) -> float:
    """The width of the widest piece that :func:`wrap` keeps whole: a word, or a CJK character
    with the punctuation kinsoku glues to it. Lines at least this wide never break inside a word."""
    text = _CONTROL_SPACE.sub(" ", text.replace("\r\n", "\n").replace("\r", "\n"))
    return max(
        (text_width(unit, font) for paragraph in text.split("\n") for _, unit in _units(paragraph)),
        default=0.0,
    )


def _units(paragraph: str) -> list[tuple[str, str]]:
    """(separator, unit) pairs: a unit is a word or one CJK character, glued to its neighbours where
    a break between them would break kinsoku; separator is the whitespace before it."""
    units: list[tuple[str, str]] = []
    sep = ""
    for token in _TOKEN.findall(paragraph):
        if token.isspace():
            sep += token
            continue
        if units and (token[0] in NO_START or units[-1][1][-1] in NO_END):
            prev_sep, prev = units[-1]
            units[-1] = (prev_sep, prev + sep + token)
        else:
            units.append((sep, token))
        sep = ""
    return units


def _wrap_paragraph(paragraph: str, font: ImageFont.FreeTypeFont, max_width: float) -> list[str]:
    additive = getattr(font, "layout_engine", None) == ImageFont.Layout.BASIC
    lines: list[str] = []
    line = ""
    line_width = 0.0
    for sep, unit in _units(paragraph):
        unit_width = text_width(unit, font)
        if not line:
            candidate, width = unit, unit_width
        elif additive:
            candidate, width = line + sep + unit, line_width + text_width(sep, font) + unit_width
        else:
            candidate = line + sep + unit
            width = text_width(candidate, font)
        if width <= max_width:
            line, line_width = candidate, width
            continue
        if line:
            lines.append(line)
        if unit_width <= max_width:
            line, line_width = unit, unit_width
            continue
        *full, line = _break_chars(unit, font, max_width)
        lines.extend(full)
        line_width = text_width(line, font)
    if line:
        lines.append(line)
    return lines


def _break_chars(word: str, font: ImageFont.FreeTypeFont, max_width: float) -> list[str]:
    """Break a unit wider than the line between characters: at least one character a line, and
    where possible not before a NO_START or after a NO_END character."""
    pieces: list[str] = []
    start = 0
    while start < len(word):
        end = start + 1
        width = _advance_of(font, word[start])
        while end < len(word):
            width += _advance_of(font, word[end])
            if width > max_width:
                break
            end += 1
        while end < len(word) and end - start > 1 and (word[end] in NO_START or word[end - 1] in NO_END):
            end -= 1
        piece = word[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    return pieces or [word]


def _advance_of(font: ImageFont.FreeTypeFont, ch: str) -> float:
    if getattr(font, "layout_engine", None) == ImageFont.Layout.BASIC:
        return _advance(font, ch)
    return font.getlength(ch)


def ellipsize(text: str, font: ImageFont.FreeTypeFont, max_width: float, ellipsis: str = "…") -> str:
    """``text`` if it fits in ``max_width``, else its longest prefix that fits followed by ``ellipsis``."""
    if text_width(text, font) <= max_width:
        return text
    budget = max_width - text_width(ellipsis, font)
    width = 0.0
    end = 0
    for ch in text:
        width += _advance_of(font, ch)
        if width > budget:
            break
        end += 1
    return text[:end].rstrip() + ellipsis
