"""Fitting text into a balloon: font sizes from the page width, and text wrapped (by
:func:`fonts.wrap`, with kinsoku) into horizontal lines or vertical columns of a given size, balanced
to a pleasant shape, with "…" where it is cut.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from PIL import ImageFont

from ..errors import InputError
from .balloon import ELLIPSIS, LetteringOptions, column_pitch, line_height
from .fonts import load_font, text_width, unbreakable_width, wrap

FONT_PER_PAGE_WIDTH = 1 / 60  # max font size: 41 px at 2480 px (A4 300 dpi)
MIN_FONT_RATIO = 0.55
# Text box aspect ratios aimed at when wrapping: horizontal width/height, vertical height/width.
HORIZONTAL_RATIO = 1.8
VERTICAL_RATIO = 1.6


def font_sizes(options: LetteringOptions, page_width: int) -> tuple[int, int]:
    """(max, min) font size in pixels for a page ``page_width`` pixels wide."""
    if page_width < 1:
        raise InputError(f"The page width must be at least 1 pixel, got {page_width}.")
    largest = options.max_font_size
    if largest is None:
        largest = max(10, round(page_width * FONT_PER_PAGE_WIDTH))
    smallest = options.min_font_size
    if smallest is None:
        smallest = min(largest, max(8, round(largest * MIN_FONT_RATIO)))
    if smallest < 1 or largest < 1:
        raise InputError(f"Font sizes must be at least 1 pixel, got max {largest}, min {smallest}.")
    if smallest > largest:
        raise InputError(f"The minimum font size ({smallest}) is larger than the maximum ({largest}).")
    return int(largest), int(smallest)


class _Cells:
    """A stand-in font for :func:`fonts.wrap` that measures text in character cells: vertical
    columns are one em per character, so wrapping at ``n`` cells gives columns of n characters."""

    layout_engine = None

    def getlength(self, text: str) -> float:
        return float(len(text))


_CELLS = cast(ImageFont.FreeTypeFont, _Cells())


@dataclass(frozen=True)
class Fit:
    """Text fitted at one size: its lines (or columns), their extent, and what is hidden."""

    lines: list[str]
    text_w: int
    text_h: int
    fits: bool
    hidden: int
    estimated: bool = False  # rejected by area alone: no lines computed


def letterable(text: str) -> str:
    """``text`` as it is lettered: without its invisible format characters (zero-width space and
    joiners, direction marks, the word joiner, a stray BOM: Unicode category Cf), which no font
    draws, and trimmed. A line of only such characters gives "" (nothing to letter)."""
    if text.isascii():
        return text.strip()
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf").strip()


def visible(text: str) -> int:
    """The number of characters in ``text``, whitespace and invisible format characters aside."""
    return sum(1 for ch in text if not ch.isspace() and unicodedata.category(ch) != "Cf")


def fit_horizontal(
    text: str,
    size: int,
    language: str,
    max_w: int,
    max_h: int,
    measure: tuple[float, float],
    exact: bool = False,
) -> Fit:
    """Wrap ``text`` at ``size`` px into at most ``max_w`` × ``max_h``, in the number of lines that
    gives the text block a width about :data:`HORIZONTAL_RATIO` times its height, lines balanced.
    ``measure``: the text's natural width and its widest unbreakable piece, in ems (see
    :func:`measure`). Unless ``exact``, text that cannot fit by its area alone is not wrapped."""
    total = visible(text)
    lh = line_height(size)
    max_lines = max_h // lh
    if max_w < size or max_lines < 1:
        return Fit([], 0, 0, total == 0, total)
    natural, unbreakable = measure[0] * size, measure[1] * size
    if not exact and natural > 1.05 * max_w * max_lines:
        return Fit([], 0, 0, False, total, estimated=True)
    font = load_font(size, language)
    lines = wrap(text, font, max_w)
    fits = len(lines) <= max_lines
    if fits:
        wanted = 1 if natural <= 4 * size else round(math.sqrt(natural / (HORIZONTAL_RATIO * lh)))
        wanted = max(len(lines), min(max_lines, wanted))
        lo = min(max_w, math.ceil(max(unbreakable, natural / wanted)))
        lines = _narrowest(lambda width: wrap(text, font, width), lo, max_w, wanted, lines)
    else:
        lines = lines[:max_lines]
        lines[-1] = _ellipsize_line(lines[-1], font, max_w)
    shown = sum(visible(line) for line in lines) - (0 if fits else 1)
    width = max((text_width(line, font) for line in lines), default=0.0)
    return Fit(lines, min(max_w, math.ceil(width)), len(lines) * lh, fits, max(0, total - shown))


def _narrowest(
    wrap_at: Callable[[int], list[str]], lo: int, hi: int, count: int, at_hi: list[str]
) -> list[str]:
    """The lines of the narrowest width in ``lo..hi`` that wraps into at most ``count`` lines
    (``at_hi``: the lines at ``hi``), found by bisection: balanced lines."""
    best = at_hi
    while lo < hi:
        mid = (lo + hi) // 2
        lines = wrap_at(mid)
        if len(lines) <= count:
            best, hi = lines, mid
        else:
            lo = mid + 1
    return best


def measure(text: str, language: str, size: int) -> tuple[float, float]:
    """(natural width, widest unbreakable piece) of ``text`` in ems, measured at ``size`` px."""
    font = load_font(size, language)
    natural = sum(text_width(line, font) for line in text.split("\n"))
    return natural / size, unbreakable_width(text, font) / size


def _ellipsize_line(line: str, font: ImageFont.FreeTypeFont, max_w: float) -> str:
    budget = max_w - text_width(ELLIPSIS, font)
    end = len(line)
    while end > 0 and text_width(line[:end], font) > budget:
        end -= 1
    return line[:end].rstrip() + ELLIPSIS


def fit_vertical(text: str, size: int, max_w: int, max_h: int, exact: bool = False) -> Fit:
    """Columns of one em per character, at most ``max_w`` × ``max_h``, in the number of columns
    that makes the block about :data:`VERTICAL_RATIO` times taller than wide, columns balanced."""
    total = visible(text)
    pitch = column_pitch(size)
    cells = max_h // size
    max_cols = (max_w - size) // pitch + 1 if max_w >= size else 0
    if cells < 1 or max_cols < 1:
        return Fit([], 0, 0, total == 0, total)
    count = len(text.replace("\n", ""))
    if not exact and count > cells * max_cols:
        return Fit([], 0, 0, False, total, estimated=True)
    columns = wrap(text, _CELLS, cells)
    fits = len(columns) <= max_cols
    if fits:
        wanted = 1 if count <= 7 else round(math.sqrt(count * size / (VERTICAL_RATIO * pitch)))
        wanted = max(len(columns), min(max_cols, wanted))
        lo = min(cells, math.ceil(count / wanted))
        columns = _narrowest(lambda length: wrap(text, _CELLS, length), lo, cells, wanted, columns)
    else:
        columns = columns[:max_cols]
        last = columns[-1]
        columns[-1] = (last if len(last) < cells else last[: cells - 1].rstrip()) + ELLIPSIS
    shown = sum(visible(col) for col in columns) - (0 if fits else 1)
    height = max((len(col) for col in columns), default=0) * size
    width = (len(columns) - 1) * pitch + size if columns else 0
    return Fit(columns, width, height, fits, max(0, total - shown))
