"""Lettering: speech balloons laid out and drawn inside a panel, for Chinese, Japanese and English.

:func:`plan_balloons` turns a panel's dialogue lines into :class:`BalloonPlan` s (pure geometry, no
drawing): one balloon per line, inside the panel with a small inset, in reading order, none
overlapping another. :func:`draw_balloons` draws plans onto a page in place.

Layout
    Shelf packing from the top of the panel: captions (the narrator) first, from the
    reading-start corner (top-right for ``direction="rtl"``, top-left for ``"ltr"``), then the
    balloons in dialogue order, each shelf filled from the reading-start side, the next shelf
    below the tails of the one above. A balloon may grow to 60 % of the panel's inner width and
    50 % of its height; its text box is inscribed in its ellipse (``width / √2``).

Sizes
    Font sizes follow the page width: at most ``page_width / 60`` (41 px on an A4 page at 300 dpi,
    72 px on B5 at 600 dpi), at least 55 % of that. Each balloon takes the largest size at which its
    text fits in the size cap; when the balloons do not pack into the panel, the largest size
    allowed in the panel steps down, then the caps shrink (only as long as no text that fitted is
    cut); lines that still find no room get no balloon. Nothing is cut silently: the plan says
    ``fits=False`` and how many characters are hidden, drawn text that was cut ends with "…", and
    a problem string names the line, the panel and the counts.

Text
    Horizontal text wraps with :func:`fonts.wrap` (by word for Latin, by character for CJK, with
    kinsoku). Vertical text (``vertical=True``, zh/ja only) runs in columns top to bottom, right to
    left, one em per character, wrapped by the same rules (no ``。、」`` at a column start). It is
    drawn with raqm (``direction="ttb"``) where available, else per character: punctuation mapped
    to the Unicode vertical forms, ``ー〜～`` rotated, small kana nudged up and right. Horizontal
    text always uses the BASIC layout, so its measure is the same on every machine.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, cast, get_args

from PIL import Image, ImageDraw, ImageFont

from ..errors import InputError
from ..screenplay.models import NARRATOR
from .fonts import (
    face_index,
    load_font,
    load_font_raqm,
    missing_glyphs,
    raqm_available,
    text_width,
    unbreakable_width,
    wrap,
)
from .layout import Rect, TextOrder

log = logging.getLogger(__name__)

BalloonKind = Literal["speech", "shout", "whisper", "thought", "caption"]
BALLOON_KINDS: tuple[str, ...] = get_args(BalloonKind)
LayoutEngine = Literal["auto", "raqm", "basic"]

ELLIPSIS = "…"
SQRT2 = math.sqrt(2.0)

# Fractions of the page width, and of the font size.
FONT_PER_PAGE_WIDTH = 1 / 60  # max font size: 41 px at 2480 px (A4 300 dpi)
MIN_FONT_RATIO = 0.55
LINE_PER_PAGE_WIDTH = 1 / 830  # outline width: 3 px on A4 300 dpi
INSET_PER_PAGE_WIDTH = 1 / 160  # balloons keep this far from the panel border
MAX_BALLOON_WIDTH = 0.60  # of the panel's inner width
MAX_BALLOON_HEIGHT = 0.50  # of the panel's inner height
LINE_HEIGHT = 1.25  # horizontal line pitch, in ems
COLUMN_PITCH = 1.3  # vertical column pitch, in ems
BASELINE = 0.88  # the ideographic em box spans 0.88 em above the baseline, 0.12 below
TAIL_LENGTH = 1.1  # in ems
# Text box aspect ratios aimed at when wrapping: horizontal width/height, vertical height/width.
HORIZONTAL_RATIO = 1.8
VERTICAL_RATIO = 1.6
CAP_SCALES = (1.0, 0.8, 0.64, 0.5, 0.4, 0.3)  # balloon caps tried when balloons do not pack

INK = (0, 0, 0)
PAPER = (255, 255, 255)

# Vertical presentation forms (U+FE10–FE19, U+FE30–FE4F) for the per-character vertical layout.
VERTICAL_FORMS: dict[str, str] = dict(
    zip(
        "，、。：；！？〖〗…‥—–（）()｛｝〔〕【】《》〈〉「」『』［］",
        "︐︑︒︓︔︕︖︗︘︙︰︱︲︵︶︵︶︷︸︹︺︻︼︽︾︿﹀﹁﹂﹃﹄﹇﹈",
        strict=True,
    )
)
# Drawn turned 90° clockwise in vertical text.
ROTATED = frozenset("ー〜～―－~")
# Small kana: moved up and to the right in vertical text.
SMALL_KANA = frozenset("ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ")
SMALL_KANA_SHIFT = 0.1  # em

_VERTICAL_LANGUAGES = ("zh", "ja")


@dataclass(frozen=True)
class Box(Rect):
    """The layout's ``Rect`` (page pixels, ``right`` and ``bottom`` exclusive) with what lettering
    needs besides: a fractional centre, emptiness, points, insets, and any rectangle-like input."""

    @property
    def center(self) -> tuple[float, float]:  # type: ignore[override]
        return self.x + self.w / 2, self.y + self.h / 2

    @property
    def empty(self) -> bool:
        return self.w <= 0 or self.h <= 0

    def contains(self, other: Any) -> bool:
        """Whether a rectangle (any object with x, y, w, h) or a point ``(x, y)`` lies inside."""
        if isinstance(other, tuple):
            px, py = other
            return self.x <= px < self.right and self.y <= py < self.bottom
        o = Box.of(other)
        return self.x <= o.x and self.y <= o.y and o.right <= self.right and o.bottom <= self.bottom

    def intersects(self, other: Any) -> bool:
        """Whether the two rectangles share some area (touching edges do not count)."""
        o = Box.of(other)
        return self.x < o.right and o.x < self.right and self.y < o.bottom and o.y < self.bottom

    def inset(self, d: int) -> Box:
        return Box(self.x + d, self.y + d, max(0, self.w - 2 * d), max(0, self.h - 2 * d))

    @classmethod
    def of(cls, rect: Any) -> Box:
        """A Box from any object with ``x, y, w, h`` attributes (e.g. the page layout's Rect)."""
        if isinstance(rect, Box):
            return rect
        try:
            return cls(int(rect.x), int(rect.y), int(rect.w), int(rect.h))
        except AttributeError as exc:
            raise InputError(f"A panel rectangle needs x, y, w and h attributes, got {rect!r}.") from exc


@dataclass(frozen=True)
class LineSpec:
    """One dialogue line to letter. ``speaker_x``: the speaker's horizontal position in the panel,
    0 (left) to 1 (right); None when unknown or off-panel."""

    line_id: str
    speaker: str
    text: str
    emotion: str
    speaker_x: float | None = None


@dataclass
class BalloonPlan:
    """Where and how one line is lettered, in page pixels.

    ``box`` is the balloon's outer bounding box, ``text_box`` where the text goes (inside ``box``).
    ``lines`` are horizontal lines, or, when ``vertical``, columns (each read top to bottom; the
    first is the rightmost). ``tail`` is the tail's tip (None for captions, and where there is no
    room for one). ``hidden_chars`` counts the characters (whitespace aside) that could not be
    shown. A line that could not be placed at all has an empty ``box`` and no ``lines``.
    """

    line_id: str
    kind: BalloonKind
    box: Box
    text_box: Box
    lines: list[str]
    font_size: int
    vertical: bool
    tail: tuple[int, int] | None
    fits: bool
    hidden_chars: int
    missing_glyphs: list[str]
    line_width: int = 3
    language: str = "en"
    panel: Box | None = None


@dataclass
class LetteringOptions:
    """How lines are lettered. ``vertical`` is honoured for zh and ja only. ``direction``: reading
    order of balloons in a panel (rtl starts at the top right). Font sizes None: derived from the
    page width. ``layout_engine`` applies to vertical text (horizontal text always uses BASIC)."""

    language: str = "en"
    vertical: bool = False
    direction: TextOrder = "rtl"
    max_font_size: int | None = None
    min_font_size: int | None = None
    layout_engine: LayoutEngine = "auto"


def balloon_kind(emotion: str, speaker: str) -> BalloonKind:
    """The balloon style for a line: the narrator (or the emotion "narration") gets a caption box;
    "shout" a spiky balloon, "whisper" a dashed one, "thinking" a cloud; every other emotion,
    "angry" and "excited" included, a plain oval (what makes a shout is the volume, not the mood)."""
    emotion_key = emotion.strip().lower()
    if speaker.strip().lower() == NARRATOR or emotion_key == "narration":
        return "caption"
    if emotion_key == "shout":
        return "shout"
    if emotion_key == "whisper":
        return "whisper"
    if emotion_key == "thinking":
        return "thought"
    return "speech"


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


def line_width(page_width: int) -> int:
    """The outline width of balloons on a page ``page_width`` pixels wide."""
    return max(2, round(page_width * LINE_PER_PAGE_WIDTH))


def vertical_enabled(options: LetteringOptions) -> bool:
    """Whether ``options`` lay text out vertically (asked for, and the language is zh or ja)."""
    key = options.language.strip().lower().replace("_", "-")
    return options.vertical and key.split("-")[0] in _VERTICAL_LANGUAGES


def use_raqm(options: LetteringOptions) -> bool:
    """Whether vertical text is drawn with raqm: "auto" where it works, "raqm" always (raising
    :class:`BackendMissingError` later where it does not), "basic" never."""
    if options.layout_engine == "basic":
        return False
    if options.layout_engine == "raqm":
        return True
    return raqm_available()


def _check_options(options: LetteringOptions) -> None:
    face_index(options.language)  # raises InputError for an unknown language
    if options.direction not in get_args(TextOrder):
        raise InputError(f"Reading direction must be 'rtl' or 'ltr', got {options.direction!r}.")
    if options.layout_engine not in get_args(LayoutEngine):
        raise InputError(f"Layout engine must be 'auto', 'raqm' or 'basic', got {options.layout_engine!r}.")


# ----------------------------------------------------------------------------------------------
# Fitting text into a balloon


class _Cells:
    """A stand-in font for :func:`fonts.wrap` that measures text in character cells: vertical
    columns are one em per character, so wrapping at ``n`` cells gives columns of n characters."""

    layout_engine = None

    def getlength(self, text: str) -> float:
        return float(len(text))


_CELLS = cast(ImageFont.FreeTypeFont, _Cells())


@dataclass(frozen=True)
class _Fit:
    lines: list[str]
    text_w: int
    text_h: int
    fits: bool
    hidden: int
    estimated: bool = False  # rejected by area alone: no lines computed


def _visible(text: str) -> int:
    return sum(1 for ch in text if not ch.isspace())


def _line_height(size: int) -> int:
    return max(1, round(size * LINE_HEIGHT))


def _column_pitch(size: int) -> int:
    return max(1, round(size * COLUMN_PITCH))


def _spike(size: int) -> int:
    return max(3, round(0.6 * size))


def _bump(size: int) -> int:
    return max(3, round(0.45 * size))


def _tail_length(size: int) -> int:
    return max(4, round(TAIL_LENGTH * size))


def _tip_radius(size: int) -> int:
    return max(2, round(0.18 * size))


def _frame(kind: BalloonKind, size: int, lw: int) -> tuple[float, int]:
    """(scale, margin): the balloon is ``ceil(text * scale) + 2 * margin`` on each axis."""
    pad = max(lw + 1, round(0.25 * size))
    if kind == "caption":
        return 1.0, max(lw + 2, round(0.35 * size))
    if kind == "shout":
        return SQRT2, pad + _spike(size) + lw
    if kind == "thought":
        return SQRT2, pad + _bump(size)
    return SQRT2, pad + lw


def _fit_horizontal(
    text: str,
    size: int,
    language: str,
    max_w: int,
    max_h: int,
    measure: tuple[float, float],
    exact: bool = False,
) -> _Fit:
    """Wrap ``text`` at ``size`` px into at most ``max_w`` × ``max_h``, in the number of lines that
    gives the text block a width about :data:`HORIZONTAL_RATIO` times its height, lines balanced.
    ``measure``: the text's natural width and its widest unbreakable piece, in ems (see
    :func:`_measure`). Unless ``exact``, text that cannot fit by its area alone is not wrapped."""
    total = _visible(text)
    lh = _line_height(size)
    max_lines = max_h // lh
    if max_w < size or max_lines < 1:
        return _Fit([], 0, 0, total == 0, total)
    natural, unbreakable = measure[0] * size, measure[1] * size
    if not exact and natural > 1.05 * max_w * max_lines:
        return _Fit([], 0, 0, False, total, estimated=True)
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
    shown = sum(_visible(line) for line in lines) - (0 if fits else 1)
    width = max((text_width(line, font) for line in lines), default=0.0)
    return _Fit(lines, min(max_w, math.ceil(width)), len(lines) * lh, fits, max(0, total - shown))


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


def _measure(text: str, language: str, size: int) -> tuple[float, float]:
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


def _fit_vertical(text: str, size: int, max_w: int, max_h: int, exact: bool = False) -> _Fit:
    """Columns of one em per character, at most ``max_w`` × ``max_h``, in the number of columns
    that makes the block about :data:`VERTICAL_RATIO` times taller than wide, columns balanced."""
    total = _visible(text)
    pitch = _column_pitch(size)
    cells = max_h // size
    max_cols = (max_w - size) // pitch + 1 if max_w >= size else 0
    if cells < 1 or max_cols < 1:
        return _Fit([], 0, 0, total == 0, total)
    count = len(text.replace("\n", ""))
    if not exact and count > cells * max_cols:
        return _Fit([], 0, 0, False, total, estimated=True)
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
    shown = sum(_visible(col) for col in columns) - (0 if fits else 1)
    height = max((len(col) for col in columns), default=0) * size
    width = (len(columns) - 1) * pitch + size if columns else 0
    return _Fit(columns, width, height, fits, max(0, total - shown))


# ----------------------------------------------------------------------------------------------
# Planning


@dataclass
class _Item:
    index: int
    spec: LineSpec
    kind: BalloonKind
    text: str


def plan_balloons(
    panel: Any,
    lines: Sequence[LineSpec],
    options: LetteringOptions,
    page_width: int,
    *,
    panel_id: str | None = None,
) -> tuple[list[BalloonPlan], list[str]]:
    """Plan one balloon per line inside ``panel`` (any object with x, y, w, h in page pixels).

    Returns the plans in reading order (captions first) and human-readable problems: text that
    does not fit, lines with no room, characters the font lacks. ``panel_id`` (else the panel's
    ``id`` attribute, else its position) names the panel in the problems.
    """
    _check_options(options)
    rect = Box.of(panel)
    if rect.empty:
        raise InputError(f"The panel rectangle {rect} has no area.")
    pid = panel_id or getattr(panel, "id", None) or getattr(panel, "panel_id", None)
    where = f"panel {pid}" if pid else f"panel at ({rect.x}, {rect.y})"
    largest, smallest = font_sizes(options, page_width)
    lw = line_width(page_width)
    vertical = vertical_enabled(options)
    language = options.language
    inset = min(max(2 * lw, round(page_width * INSET_PER_PAGE_WIDTH)), rect.w // 8, rect.h // 8)
    inner = rect.inset(inset)
    gap = max(2 * lw, round(0.3 * smallest))

    items = [
        _Item(i, spec, balloon_kind(spec.emotion, spec.speaker), spec.text.strip())
        for i, spec in enumerate(lines)
    ]
    order = [it for it in items if it.kind == "caption"] + [it for it in items if it.kind != "caption"]

    cache: dict[tuple[int, int, float], _Fit] = {}
    measures = {it.index: _measure(it.text, language, largest) for it in items if not vertical}

    def fit(item: _Item, size: int, scale: float, quick: bool = False) -> _Fit:
        """The text of ``item`` fitted at ``size`` into the caps scaled by ``scale``. ``quick``: a
        result without lines will do where the area alone says that the text cannot fit."""
        key = (item.index, size, scale)
        if key not in cache or (cache[key].estimated and not quick):
            exact = not quick
            cap_w = int(inner.w * MAX_BALLOON_WIDTH * scale)
            cap_h = int(inner.h * MAX_BALLOON_HEIGHT * scale)
            factor, margin = _frame(item.kind, size, lw)
            max_w = int((cap_w - 2 * margin) / factor)
            max_h = int((cap_h - 2 * margin) / factor)
            if vertical:
                cache[key] = _fit_vertical(item.text, size, max_w, max_h, exact)
            else:
                cache[key] = _fit_horizontal(
                    item.text, size, language, max_w, max_h, measures[item.index], exact
                )
        return cache[key]

    def best_size(item: _Item, scale: float) -> int:
        for size in range(largest, smallest - 1, -1):
            if fit(item, size, scale, quick=True).fits:
                return size
        return smallest

    def attempt(scale: float, ceiling: int) -> tuple[list[int], list[Box | None]]:
        sizes = [min(best[scale][k], ceiling) for k in range(len(order))]
        dims = [
            _balloon_dims(it.kind, fit(it, s, scale), s, lw) if it.text else (0, 0, 0)
            for it, s in zip(order, sizes, strict=True)
        ]
        return sizes, _pack(inner, dims, options.direction, gap)

    def complete(placed: list[Box | None]) -> bool:
        return all(box is not None or not it.text for it, box in zip(order, placed, strict=True))

    # The largest sizes at which everything packs with full caps; else smaller caps, as long as
    # every line that fits with full caps still fits; else full caps at the minimum size with the
    # lines that find no room left out (and reported).
    best: dict[float, list[int]] = {1.0: [best_size(it, 1.0) for it in order]}
    fitting = {k for k, it in enumerate(order) if fit(it, best[1.0][k], 1.0, quick=True).fits}
    chosen: tuple[float, list[int], list[Box | None]] | None = None
    for scale in CAP_SCALES:
        if scale not in best:
            best[scale] = [best_size(it, scale) for it in order]
            if any(not fit(order[k], best[scale][k], scale, quick=True).fits for k in fitting):
                break  # smaller caps would cut text that fits
        for ceiling in range(largest, smallest - 1, -1):
            sizes, placed = attempt(scale, ceiling)
            if complete(placed):
                chosen = scale, sizes, placed
                break
        if chosen:
            break
    if chosen is None:
        chosen = (1.0, *attempt(1.0, smallest))
    scale, sizes, placed = chosen

    plans: list[BalloonPlan] = []
    problems: list[str] = []
    sides = _speaker_sides([it.spec for it in order], options.direction)
    for it, size, box in zip(order, sizes, placed, strict=True):
        f = fit(it, size, scale)
        checked = it.text + (ELLIPSIS if not f.fits else "")
        missing = missing_glyphs(checked, language)
        if box is None or not it.text:
            shown_box = Box(inner.x, inner.y, 0, 0)
            hidden = _visible(it.text)
            plan = BalloonPlan(
                it.spec.line_id, it.kind, shown_box, shown_box, [], size, vertical, None,
                hidden == 0, hidden, missing, lw, language, rect,
            )  # fmt: skip
            if hidden:
                problems.append(
                    f"{it.spec.line_id} ({where}): no room for its balloon; "
                    f"0 of {hidden} characters are shown"
                )
        else:
            text_box = Box(
                box.x + (box.w - f.text_w) // 2, box.y + (box.h - f.text_h) // 2, f.text_w, f.text_h
            )
            tail = _tail_tip(it.kind, box, size, lw, inner, it.spec, sides.get(it.spec.speaker, 1))
            plan = BalloonPlan(
                it.spec.line_id, it.kind, box, text_box, list(f.lines), size, vertical, tail,
                f.fits, f.hidden, missing, lw, language, rect,
            )  # fmt: skip
            if not f.fits:
                total = _visible(it.text)
                problems.append(
                    f"{it.spec.line_id} ({where}): {f.hidden} of {total} characters do not fit "
                    f"even at {size} px"
                )
        if missing:
            listed = ", ".join(f"'{ch}' (U+{ord(ch):04X})" for ch in missing)
            problems.append(f"{it.spec.line_id} ({where}): the font has no glyph for {listed}")
        plans.append(plan)
    for problem in problems:
        log.warning("Lettering: %s", problem)
    return plans, problems


def _balloon_dims(kind: BalloonKind, f: _Fit, size: int, lw: int) -> tuple[int, int, int]:
    """(width, height, room below for the tail) of a balloon holding ``f``."""
    factor, margin = _frame(kind, size, lw)
    text_w = max(f.text_w, size)
    text_h = max(f.text_h, size)
    width = math.ceil(text_w * factor) + 2 * margin
    height = math.ceil(text_h * factor) + 2 * margin
    tail = 0 if kind == "caption" else _tail_length(size) + lw + _tip_radius(size)
    return width, height, tail


def _pack(inner: Box, dims: list[tuple[int, int, int]], direction: str, gap: int) -> list[Box | None]:
    """Shelf packing from the top: each shelf filled from the reading-start side; the next shelf
    starts below the tallest balloon and tail of the one above. None: no room left for it (or
    nothing to place)."""
    rtl = direction == "rtl"
    placed: list[Box | None] = []
    y = inner.y
    shelf_h = shelf_tail = 0
    cursor = inner.right if rtl else inner.x
    on_shelf = 0
    for w, h, tail in dims:
        if w <= 0 or h <= 0 or w > inner.w or h > inner.h:
            placed.append(None)
            continue
        room = cursor - inner.x if rtl else inner.right - cursor
        if on_shelf and room < w:
            y += shelf_h + shelf_tail + gap
            shelf_h = shelf_tail = on_shelf = 0
            cursor = inner.right if rtl else inner.x
        if y + h > inner.bottom:
            placed.append(None)
            continue
        x = cursor - w if rtl else cursor
        cursor = x - gap if rtl else x + w + gap
        placed.append(Box(x, y, w, h))
        shelf_h = max(shelf_h, h)
        shelf_tail = max(shelf_tail, tail)
        on_shelf += 1
    return placed


def _speaker_sides(specs: Sequence[LineSpec], direction: str) -> dict[str, int]:
    """Side of each speaker without a known position, by order of first appearance: the first on
    the reading-start side (+1 right for rtl), the next on the other, alternating."""
    start = 1 if direction == "rtl" else -1
    sides: dict[str, int] = {}
    for spec in specs:
        if balloon_kind(spec.emotion, spec.speaker) != "caption" and spec.speaker not in sides:
            sides[spec.speaker] = start if len(sides) % 2 == 0 else -start
    return sides


def _tail_tip(
    kind: BalloonKind, box: Box, size: int, lw: int, inner: Box, spec: LineSpec, side: int
) -> tuple[int, int] | None:
    """The tail's tip: below the balloon, toward the speaker (``speaker_x`` when known, else
    ``side``), kept under the balloon's own width (so it never crosses a neighbour) and inside the
    panel. None for captions and where there is no room below."""
    if kind == "caption":
        return None
    margin = lw + _tip_radius(size) + 1
    length = _tail_length(size)
    tip_y = min(box.bottom + length, inner.bottom - margin)
    if tip_y < box.bottom + max(3, length // 3):
        return None
    cx = box.x + box.w / 2
    reach = 0.35 * box.w
    if spec.speaker_x is not None and math.isfinite(spec.speaker_x):
        rel = min(1.0, max(0.0, float(spec.speaker_x)))
        target = inner.x + rel * inner.w
        tip_x = min(cx + reach, max(cx - reach, target))
    else:
        tip_x = cx + side * reach
    tip_x = min(inner.right - margin, max(inner.x + margin, tip_x))
    return round(tip_x), int(tip_y)


# ----------------------------------------------------------------------------------------------
# Drawing


def _colors(mode: str) -> tuple[Any, Any]:
    if mode == "RGB":
        return INK, PAPER
    if mode == "RGBA":
        return (*INK, 255), (*PAPER, 255)
    if mode == "L":
        return 0, 255
    if mode == "LA":
        return (0, 255), (255, 255)
    raise InputError(f"Lettering draws on RGB, RGBA, L or LA images, got mode {mode!r}.")


def draw_balloons(image: Image.Image, plans: Sequence[BalloonPlan], options: LetteringOptions) -> None:
    """Draw ``plans`` onto ``image`` in place: balloons (white, black outline), tails, text."""
    _check_options(options)
    ink, paper = _colors(image.mode)
    draw = ImageDraw.Draw(image)
    raqm = use_raqm(options)
    for plan in plans:
        if plan.box.empty:
            continue
        _draw_shape(draw, plan, ink, paper)
        if plan.vertical:
            if raqm:
                _draw_vertical_raqm(draw, plan, ink)
            else:
                _draw_vertical_basic(draw, plan, ink)
        else:
            _draw_horizontal(draw, plan, ink)


def _ellipse_geometry(plan: BalloonPlan) -> tuple[float, float, float, float]:
    """(cx, cy, a, b): the ellipse whose edge the tail starts from."""
    box = plan.box
    cx, cy = box.center
    inset = {"shout": _spike(plan.font_size) + plan.line_width, "thought": _bump(plan.font_size)}.get(
        plan.kind, 0
    )
    return cx - 0.5, cy - 0.5, max(1.0, box.w / 2 - inset), max(1.0, box.h / 2 - inset)


def _on_ellipse(
    cx: float, cy: float, a: float, b: float, theta: float, k: float = 1.0
) -> tuple[float, float]:
    return cx + k * a * math.cos(theta), cy + k * b * math.sin(theta)


def _tail_base(
    plan: BalloonPlan, tip: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float], tuple[float, float]]:
    """(p1, p2, q1, q2): where the tail's sides meet the balloon's edge, and two points further in
    (so that the tail's fill covers the outline between p1 and p2)."""
    cx, cy, a, b = _ellipse_geometry(plan)
    theta = math.atan2((tip[1] - cy) / b, (tip[0] - cx) / a)
    half = min(0.5, 0.45 * plan.font_size / max(a, 1.0))
    lw = plan.line_width
    edge = 0.97 if plan.kind == "shout" else 1.0
    inner = 1.0 - (2.0 * lw + 2.0) / min(a, b) if min(a, b) > 4 * lw else 0.5
    p1, p2 = (_toward(_on_ellipse(cx, cy, a, b, theta + d, edge), (cx, cy), lw / 2) for d in (-half, half))
    q1, q2 = (_on_ellipse(cx, cy, a, b, theta + d, inner) for d in (-half, half))
    return p1, p2, q1, q2


def _draw_shape(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    box, lw, size = plan.box, plan.line_width, plan.font_size
    bbox = (box.x, box.y, box.right - 1, box.bottom - 1)
    if plan.kind == "caption":
        draw.rectangle(bbox, fill=paper, outline=ink, width=lw)
        return
    if plan.kind == "thought":
        _draw_cloud(draw, plan, ink, paper)
        return
    if plan.kind == "shout":
        _draw_star(draw, plan, ink, paper)
    elif plan.kind == "whisper":
        draw.ellipse(bbox, fill=paper)
        _draw_dashed_ellipse(draw, plan, ink)
    else:
        draw.ellipse(bbox, fill=paper, outline=ink, width=lw)
    if plan.tail is None:
        return
    tip = (float(plan.tail[0]), float(plan.tail[1]))
    p1, p2, q1, q2 = _tail_base(plan, tip)
    draw.polygon([q1, p1, tip, p2, q2], fill=paper)
    if plan.kind == "whisper":
        dash = max(2.0, 0.4 * size)
        _dashed_line(draw, p1, tip, dash, ink, lw)
        _dashed_line(draw, p2, tip, dash, ink, lw)
    else:
        draw.line([p1, tip, p2], fill=ink, width=lw, joint="curve")


def _toward(p: tuple[float, float], c: tuple[float, float], d: float) -> tuple[float, float]:
    dx, dy = c[0] - p[0], c[1] - p[1]
    n = math.hypot(dx, dy)
    if n < 1e-6:
        return p
    return p[0] + dx / n * d, p[1] + dy / n * d


def _dashed_line(
    draw: ImageDraw.ImageDraw, p: tuple[float, float], q: tuple[float, float], dash: float, ink: Any, lw: int
) -> None:
    length = math.hypot(q[0] - p[0], q[1] - p[1])
    if length < 1:
        return
    step = dash * 1.8
    t = 0.0
    while t < length:
        t2 = min(length, t + dash)
        a = (p[0] + (q[0] - p[0]) * t / length, p[1] + (q[1] - p[1]) * t / length)
        b = (p[0] + (q[0] - p[0]) * t2 / length, p[1] + (q[1] - p[1]) * t2 / length)
        draw.line([a, b], fill=ink, width=lw)
        t += step


def _ellipse_perimeter(a: float, b: float) -> float:
    h = ((a - b) / (a + b)) ** 2 if a + b > 0 else 0.0
    return math.pi * (a + b) * (1 + 3 * h / (10 + math.sqrt(4 - 3 * h)))


def _draw_dashed_ellipse(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    box, lw = plan.box, plan.line_width
    bbox = (box.x, box.y, box.right - 1, box.bottom - 1)
    perimeter = _ellipse_perimeter(box.w / 2, box.h / 2)
    count = max(8, round(perimeter / (0.9 * plan.font_size)))
    step = 360.0 / count
    for k in range(count):
        start = k * step
        draw.arc(bbox, start, start + step * 0.55, fill=ink, width=lw)


def _draw_star(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    box, lw = plan.box, plan.line_width
    cx, cy = box.center
    cx, cy = cx - 0.5, cy - 0.5
    outer_a, outer_b = box.w / 2 - lw, box.h / 2 - lw
    spike = _spike(plan.font_size)
    inner_a, inner_b = max(1.0, outer_a - spike), max(1.0, outer_b - spike)
    count = max(10, round(_ellipse_perimeter(inner_a, inner_b) / (1.1 * plan.font_size)))
    points = []
    for k in range(2 * count):
        theta = math.pi * k / count - math.pi / 2
        if k % 2 == 0:
            depth = 1.0 if k % 4 == 0 else 0.7  # alternate long and short spikes
            a, b = inner_a + depth * (outer_a - inner_a), inner_b + depth * (outer_b - inner_b)
        else:
            a, b = inner_a, inner_b
        points.append(_on_ellipse(cx, cy, a, b, theta))
    draw.polygon(points, fill=paper, outline=ink, width=lw)


def _arc_points(cx: float, cy: float, a: float, b: float, count: int) -> list[tuple[float, float]]:
    """``count`` points evenly spaced by arc length around an ellipse, starting at the top."""
    steps = 240
    samples = [_on_ellipse(cx, cy, a, b, 2 * math.pi * i / steps - math.pi / 2) for i in range(steps + 1)]
    lengths = [0.0]
    for p, q in itertools.pairwise(samples):
        lengths.append(lengths[-1] + math.hypot(q[0] - p[0], q[1] - p[1]))
    total = lengths[-1]
    points = []
    j = 0
    for k in range(count):
        want = total * k / count
        while j < steps and lengths[j + 1] < want:
            j += 1
        points.append(samples[j])
    return points


def _disc(draw: ImageDraw.ImageDraw, c: tuple[float, float], r: float, fill: Any) -> None:
    draw.ellipse((c[0] - r, c[1] - r, c[0] + r, c[1] + r), fill=fill)


def _draw_cloud(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    lw, size = plan.line_width, plan.font_size
    cx, cy, a, b = _ellipse_geometry(plan)
    r = _bump(size) - 0.5
    count = max(8, math.ceil(_ellipse_perimeter(a, b) / (1.3 * r)))
    centres = _arc_points(cx, cy, a, b, count)
    for c in centres:
        _disc(draw, c, r, ink)
    for c in centres:
        _disc(draw, c, r - lw, paper)
    draw.ellipse((cx - a, cy - b, cx + a, cy + b), fill=paper)
    if plan.tail is None:
        return
    tip = (float(plan.tail[0]), float(plan.tail[1]))
    theta = math.atan2((tip[1] - cy) / b, (tip[0] - cx) / a)
    start = _on_ellipse(cx, cy, a, b, theta)
    start = _toward(start, tip, r)
    small = _tip_radius(size)
    for t, radius in ((0.2, max(small + 1.0, 0.55 * r)), (0.6, max(small + 0.5, 0.38 * r)), (1.0, small)):
        c = (start[0] + (tip[0] - start[0]) * t, start[1] + (tip[1] - start[1]) * t)
        _disc(draw, c, radius, ink)
        _disc(draw, c, max(0.5, radius - lw), paper)


def _draw_horizontal(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    size = plan.font_size
    font = load_font(size, plan.language)
    lh = _line_height(size)
    tb = plan.text_box
    x = tb.x + tb.w / 2
    top = tb.y + (lh - size) / 2 + BASELINE * size
    for i, line in enumerate(plan.lines):
        if line:
            draw.text((x, top + i * lh), line, font=font, fill=ink, anchor="ms")


def _column_x(plan: BalloonPlan, i: int) -> float:
    """The centre x of column ``i`` (0 is the rightmost)."""
    return plan.text_box.right - plan.font_size / 2 - i * _column_pitch(plan.font_size)


def _draw_vertical_raqm(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    font = load_font_raqm(plan.font_size, plan.language)
    for i, column in enumerate(plan.lines):
        if column.strip():
            draw.text(
                (_column_x(plan, i), plan.text_box.y),
                column,
                font=font,
                fill=ink,
                direction="ttb",
                anchor="mt",
            )


def _draw_vertical_basic(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    size = plan.font_size
    font = load_font(size, plan.language)
    shift = SMALL_KANA_SHIFT * size
    for i, column in enumerate(plan.lines):
        x = _column_x(plan, i)
        for j, ch in enumerate(column):
            if ch.isspace():
                continue
            top = plan.text_box.y + j * size
            if ch in ROTATED:
                draw.bitmap((round(x - size / 2), top), _rotated_glyph(size, plan.language, ch), fill=ink)
                continue
            glyph = _vertical_form(ch, plan.language)
            dx, dy = (shift, -shift) if ch in SMALL_KANA else (0.0, 0.0)
            draw.text((x + dx, top + BASELINE * size + dy), glyph, font=font, fill=ink, anchor="ms")


@lru_cache(maxsize=512)
def _vertical_form(ch: str, language: str) -> str:
    """The vertical presentation form of ``ch`` where there is one and the font has it."""
    form = VERTICAL_FORMS.get(ch)
    if form is None or missing_glyphs(form, language):
        return ch
    return form


@lru_cache(maxsize=512)
def _rotated_glyph(size: int, language: str, ch: str) -> Image.Image:
    """A mask of ``ch`` in a one-em cell, turned 90° clockwise."""
    cell = Image.new("L", (size, size), 0)
    ImageDraw.Draw(cell).text(
        (size / 2, BASELINE * size), ch, font=load_font(size, language), fill=255, anchor="ms"
    )
    return cell.rotate(-90)
