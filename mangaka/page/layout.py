"""Page layout: where each panel of a screenplay goes on a manga page. Pure integer geometry, no
drawing (no Pillow): the page composer renders into the rectangles computed here.

Units and boxes. Every value is an integer pixel in page coordinates, origin top-left. A page image
is the trim size plus ``bleed`` on every side; the trim box is ``Rect(bleed, bleed, width - 2*bleed,
height - 2*bleed)`` and the panels lie inside the trim box inset by ``margin`` (the content box).

Page breaks. The panels are split into ``ceil(n / panels_per_page)`` pages as evenly as possible,
earlier pages taking the extra panel: 7 panels at 6 per page are 4 + 3, 13 at 6 are 5 + 4 + 4
(:func:`page_sizes`). Nothing else moves a break, so the same input always gives the same pages.

Paged directions ("rtl" manga, "ltr" comics). A page of k panels uses a row template: the panel
count of each row, rows top to bottom, panels in a row in reading order. The first template of each
list is the default; the others move the lone (big) slots to where the big shots are::

    k  default        alternatives
    1  [1]            -
    2  [1, 1]         -
    3  [1, 2]         [2, 1], [1, 1, 1]
    4  [1, 2, 1]      [2, 2], [1, 1, 2], [2, 1, 1]
    5  [2, 1, 2]      [1, 2, 2], [2, 2, 1]
    6  [2, 2, 2]      [1, 2, 2, 1], [1, 3, 2], [2, 3, 1]
    7  [2, 3, 2]      [1, 2, 2, 2], [2, 2, 2, 1]
    8  [2, 2, 2, 2]   [1, 2, 3, 2], [2, 3, 2, 1]

With ``weighted`` the template whose slots best fit the shots is chosen: each slot's share of the
page in the unweighted grid (``1 / (rows * panels in its row)``) times the panel's
:data:`SHOT_WEIGHT`, summed; the highest sum wins, ties go to the earlier template, so a page of
equal shots keeps the default and an establishing shot gets a full-width row where one is offered.
Then a row's height is proportional to the mean weight of its panels and a panel's width in its row
to its own weight. Without ``weighted`` the default template is used with equal rows and equal
panels. Gutters between neighbours are exact; sizes are floored and the remainder goes to the last
row and the last panel of each row, so the outer edges align with the content box. "rtl" mirrors
each page left to right (the first panel of a row is on the right, rows still run top to bottom):
an rtl frame is ``Rect(width - x - w, y, w, h)`` of the ltr one.

Vertical ("vertical", webtoon). Every panel takes the full content width, stacked top to bottom.
When the page has no height (preset "webtoon 800px", or "custom" with height 0) the page is a strip:
a panel is :data:`STRIP_ASPECT` times the content width tall (establishing and full shots 1.0,
close-up 0.75, extreme close-up and insert 0.6; 0.85 for every panel without ``weighted``), the gap
between panels defaults to 10% of the width, and the height of every page of the layout is that of
the tallest page (at least ``MIN_SIDE``; the shorter ones keep blank space at the bottom) so that a
renderer can batch them. With a fixed height (a paper preset, or "custom" with a height) a vertical
page is one column: the same heights, scaled to fill the content box exactly.

Defaults: margin 5% of the trim's shorter side (of the width for a strip); gutter 1.2% of the width
(10% for a strip). Frames are never smaller than ``MIN_FRAME`` pixels on a side; margins, gutters
and counts that would make one smaller are refused with :class:`InputError`, as are sizes outside
``MIN_SIDE``..``MAX_SIDE`` or over ``MAX_PIXELS`` (the image with its bleed, strips included).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Literal, Protocol, get_args

from ..errors import InputError

log = logging.getLogger(__name__)

Direction = Literal["rtl", "ltr", "vertical"]
DIRECTIONS: tuple[str, ...] = get_args(Direction)
# The horizontal order of things side by side, such as balloons in a panel: right to left or left to right.
TextOrder = Literal["rtl", "ltr"]


def text_order(direction: Direction) -> TextOrder:
    """The lettering's horizontal order on a page read in ``direction``: "ltr" for "ltr", else "rtl"
    (a vertical strip is lettered right to left, like a manga page)."""
    return "ltr" if direction == "ltr" else "rtl"


# Trim sizes (width, height) in pixels; a height of None follows the panels (vertical strip).
PAGE_PRESETS: dict[str, tuple[int, int | None]] = {
    "B5 300dpi": (2150, 3035),  # JIS B5, 182 x 257 mm
    "B5 600dpi": (4299, 6071),
    "A4 300dpi": (2480, 3508),  # ISO A4, 210 x 297 mm
    "A4 600dpi": (4961, 7016),
    "webtoon 800px": (800, None),
}
CUSTOM = "custom"

MIN_SIDE = 256
MAX_SIDE = 20000
MAX_PIXELS = 200_000_000
MAX_PANELS_PER_PAGE = 8
MIN_FRAME = 32  # px, the smallest frame side a layout may produce

# Relative room a shot gets on a paged layout: the wider the view, the bigger the panel.
SHOT_WEIGHT: dict[str, float] = {
    "establishing": 2.0,
    "wide": 1.6,
    "full": 1.3,
    "pov": 1.2,
    "over_the_shoulder": 1.1,
    "medium": 1.0,
    "medium_close_up": 0.9,
    "close_up": 0.8,
    "extreme_close_up": 0.7,
    "insert": 0.7,
}
# Panel height / content width in a vertical strip (full shots need height for the whole figure).
STRIP_ASPECT: dict[str, float] = {
    "establishing": 1.0,
    "wide": 0.9,
    "full": 1.0,
    "pov": 0.9,
    "over_the_shoulder": 0.85,
    "medium": 0.85,
    "medium_close_up": 0.8,
    "close_up": 0.75,
    "extreme_close_up": 0.6,
    "insert": 0.6,
}
UNWEIGHTED_STRIP_ASPECT = 0.85

# Row templates per panel count; the first is the default (see the module docstring).
TEMPLATES: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((1,),),
    2: ((1, 1),),
    3: ((1, 2), (2, 1), (1, 1, 1)),
    4: ((1, 2, 1), (2, 2), (1, 1, 2), (2, 1, 1)),
    5: ((2, 1, 2), (1, 2, 2), (2, 2, 1)),
    6: ((2, 2, 2), (1, 2, 2, 1), (1, 3, 2), (2, 3, 1)),
    7: ((2, 3, 2), (1, 2, 2, 2), (2, 2, 2, 1)),
    8: ((2, 2, 2, 2), (1, 2, 3, 2), (2, 3, 2, 1)),
}

# Default spacing, in thousandths: margin of the shorter side, gutter of the width.
_MARGIN_PERMILLE = 50
_GUTTER_PERMILLE = 12
_STRIP_GAP_PERMILLE = 100


class _PanelWithShot(Protocol):
    id: str
    shot: str


PanelLike = _PanelWithShot | Mapping[str, Any]


@dataclass(frozen=True)
class Rect:
    """An axis-aligned rectangle in pixels; ``right`` and ``bottom`` are exclusive."""

    x: int
    y: int
    w: int
    h: int

    @property
    def right(self) -> int:
        return self.x + self.w

    @property
    def bottom(self) -> int:
        return self.y + self.h

    @property
    def center(self) -> tuple[int, int]:
        """The centre, floored to whole pixels."""
        return (self.x + self.w // 2, self.y + self.h // 2)

    @property
    def area(self) -> int:
        return self.w * self.h

    def contains(self, other: Rect) -> bool:
        """Whether ``other`` lies entirely inside this rectangle (shared edges allowed)."""
        return (
            self.x <= other.x
            and self.y <= other.y
            and other.right <= self.right
            and other.bottom <= self.bottom
        )

    def intersects(self, other: Rect) -> bool:
        """Whether the two share some area (touching edges do not count)."""
        return (
            self.x < other.right and other.x < self.right and self.y < other.bottom and other.y < self.bottom
        )

    def inset(self, n: int) -> Rect:
        """The rectangle shrunk by ``n`` on every side (grown when negative), never below 0 x 0."""
        return Rect(self.x + n, self.y + n, max(0, self.w - 2 * n), max(0, self.h - 2 * n))

    def mirrored(self, width: int) -> Rect:
        """The rectangle mirrored left to right on a page ``width`` pixels wide."""
        return Rect(width - self.x - self.w, self.y, self.w, self.h)

    def as_list(self) -> list[int]:
        return [self.x, self.y, self.w, self.h]


@dataclass(frozen=True)
class Frame:
    """Where one panel goes. ``index`` is the panel's position in the screenplay (0-based)."""

    panel_id: str
    index: int
    rect: Rect


@dataclass(frozen=True)
class PageLayout:
    """One page: ``width`` x ``height`` is the image to render (trim + 2 * bleed); ``frames`` are in
    reading order. ``number`` counts from 1."""

    number: int
    width: int
    height: int
    bleed: int
    frames: tuple[Frame, ...]
    direction: str = "rtl"
    margin: int = 0

    @property
    def trim(self) -> Rect:
        return Rect(self.bleed, self.bleed, self.width - 2 * self.bleed, self.height - 2 * self.bleed)

    @property
    def content(self) -> Rect:
        """The trim box inset by the margin: every frame lies inside it."""
        return self.trim.inset(self.margin)


@dataclass(frozen=True)
class LayoutOptions:
    """How to lay panels out; every field has a usable default (A4 manga pages, 6 panels at most)."""

    page: str = "A4 300dpi"  # a PAGE_PRESETS key, or "custom"
    width: int = 0  # used when page == "custom"
    height: int = 0  # used when page == "custom"; 0 (strip) only with direction "vertical"
    direction: Direction = "rtl"
    panels_per_page: int = 6  # 1..MAX_PANELS_PER_PAGE; pages break automatically beyond
    margin: int | None = None  # px inside the trim; None = 5% of the shorter side
    gutter: int | None = None  # px between panels; None = 1.2% of the width (10% for a strip)
    bleed: int = 0  # px added around the trim on every side
    weighted: bool = True  # panel size weighted by shot type


DEFAULT_OPTIONS = LayoutOptions()


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_image_size(width: int, height: int, what: str) -> None:
    for name, value in (("width", width), ("height", height)):
        if not MIN_SIDE <= value <= MAX_SIDE:
            raise InputError(
                f"{what} {name} must be {MIN_SIDE} to {MAX_SIDE} pixels, got {value}. "
                "Pick another page size (or a smaller bleed)."
            )
    if width * height > MAX_PIXELS:
        raise InputError(
            f"{what} is {width} x {height} = {width * height:,} pixels, over the {MAX_PIXELS:,} limit. "
            "Pick a smaller page size (e.g. 300 dpi instead of 600) or a smaller bleed."
        )


def preset_size(options: LayoutOptions) -> tuple[int, int | None]:
    """The trim size (width, height) of ``options``; height None for a vertical strip.

    Raises InputError for an unknown preset, a custom size out of bounds, or a page without height
    on a paged direction.
    """
    if options.direction not in DIRECTIONS:
        raise InputError(
            f"Layout direction must be one of {', '.join(DIRECTIONS)}, got {options.direction!r}: "
            "'rtl' for manga, 'ltr' for comics, 'vertical' for a webtoon strip."
        )
    if options.page == CUSTOM:
        width, height = options.width, options.height
        if not (_is_int(width) and _is_int(height)):
            raise InputError(
                f"Custom page width and height must be whole pixels, got {width!r} x {height!r}."
            )
        size: tuple[int, int | None] = (width, height or None)
    elif options.page in PAGE_PRESETS:
        size = PAGE_PRESETS[options.page]
    else:
        valid = ", ".join(repr(p) for p in [*PAGE_PRESETS, CUSTOM])
        raise InputError(f"Unknown page size {options.page!r}; use one of {valid}.")
    width, height = size
    if height is None and options.direction != "vertical":
        what = "Custom page height 0" if options.page == CUSTOM else f"Page {options.page!r}"
        raise InputError(
            f"{what} has no fixed height, which only direction 'vertical' (a webtoon strip) allows; "
            f"got direction {options.direction!r}. Set direction to 'vertical', or pick a paper size "
            f"(or a custom height of {MIN_SIDE} to {MAX_SIDE} pixels)."
        )
    _check_image_size(width, height if height is not None else MIN_SIDE, "Page")
    return size


def page_sizes(count: int, panels_per_page: int) -> list[int]:
    """How many panels go on each page: as even as possible, earlier pages taking the extra one."""
    pages = -(-count // panels_per_page)
    base, extra = divmod(count, pages)
    return [base + 1 if i < extra else base for i in range(pages)]


def _read_panels(panels: Sequence[PanelLike]) -> list[tuple[str, str]]:
    if isinstance(panels, (str, bytes)) or not isinstance(panels, Sequence):
        raise InputError(f"Layout panels must be a list of panels, got {type(panels).__name__}.")
    if not panels:
        raise InputError("Layout needs at least one panel, got none; the screenplay has no panels to place.")
    items = []
    for i, panel in enumerate(panels):
        if isinstance(panel, Mapping):
            pid, shot = panel.get("id"), panel.get("shot")
        else:
            pid, shot = getattr(panel, "id", None), getattr(panel, "shot", None)
        if pid is None or shot is None:
            raise InputError(f"Layout panel {i} has no 'id' or no 'shot'; each panel needs both.")
        if shot not in SHOT_WEIGHT:
            raise InputError(f"Panel {pid!r} has unknown shot {shot!r}; use one of {', '.join(SHOT_WEIGHT)}.")
        items.append((str(pid), str(shot)))
    return items


def _spacing(options: LayoutOptions, width: int, height: int | None) -> tuple[int, int]:
    """(margin, gutter) in pixels, defaults resolved and bounds checked."""
    for name in ("margin", "gutter"):
        value = getattr(options, name)
        if value is not None and (not _is_int(value) or value < 0):
            raise InputError(f"Layout {name} must be a whole number of pixels >= 0 (or None), got {value!r}.")
    shorter = width if height is None else min(width, height)
    margin = options.margin if options.margin is not None else (shorter * _MARGIN_PERMILLE + 500) // 1000
    gap = _STRIP_GAP_PERMILLE if height is None else _GUTTER_PERMILLE
    gutter = options.gutter if options.gutter is not None else (width * gap + 500) // 1000
    limit = (shorter - MIN_FRAME) // 2
    if margin > limit:
        raise InputError(
            f"Layout margin {margin} px leaves no room on a page {width} px wide"
            + ("" if height is None else f" and {height} px tall")
            + f": the content box must be at least {MIN_FRAME} px on a side, so the margin can be at most "
            f"{limit} px. Lower the margin."
        )
    return margin, gutter


def _check_options(options: LayoutOptions) -> None:
    ppp = options.panels_per_page
    if not _is_int(ppp) or not 1 <= ppp <= MAX_PANELS_PER_PAGE:
        raise InputError(
            f"Panels per page must be 1 to {MAX_PANELS_PER_PAGE}, got {ppp!r}; "
            "longer screenplays break onto more pages automatically."
        )
    if not _is_int(options.bleed) or options.bleed < 0:
        raise InputError(f"Layout bleed must be a whole number of pixels >= 0, got {options.bleed!r}.")


def _fraction(value: float) -> Fraction:
    return Fraction(round(value * 1000), 1000)


def _split(total: int, weights: Sequence[Fraction], gutter: int) -> list[int]:
    """Sizes along one axis: ``total`` minus the gutters, shared by weight, floored, the remainder
    going to the last one."""
    avail = total - gutter * (len(weights) - 1)
    whole = sum(weights)
    sizes = [int(avail * w / whole) if avail > 0 else 0 for w in weights[:-1]]
    sizes.append(avail - sum(sizes))
    return sizes


def choose_template(weights: Sequence[float], weighted: bool = True) -> tuple[int, ...]:
    """The row template for a page whose panels have these shot weights (see the module docstring)."""
    candidates = TEMPLATES[len(weights)]
    if not weighted:
        return candidates[0]
    fw = [_fraction(w) for w in weights]
    best, best_score = candidates[0], None
    for rows in candidates:
        slots = [Fraction(1, len(rows) * k) for k in rows for _ in range(k)]
        score = sum(s * w for s, w in zip(slots, fw, strict=True))
        if best_score is None or score > best_score:
            best, best_score = rows, score
    return best


def _too_small(frames: Sequence[Frame], options: LayoutOptions, margin: int, gutter: int, size: str) -> None:
    small = min(frames, key=lambda f: min(f.rect.w, f.rect.h))
    side = min(small.rect.w, small.rect.h)
    if side >= MIN_FRAME:
        return
    raise InputError(
        f"Panels do not fit: on a {size} page with margin {margin} px, gutter {gutter} px and up to "
        f"{options.panels_per_page} panels per page, panel {small.panel_id!r} would be "
        f"{small.rect.w} x {small.rect.h} px, under the {MIN_FRAME} px minimum side. Lower the margin or "
        "gutter, use fewer panels per page, or a bigger page."
    )


def _paged_frames(
    chunk: Sequence[tuple[int, str, str]], content: Rect, gutter: int, options: LayoutOptions, width: int
) -> list[Frame]:
    weights = [SHOT_WEIGHT[shot] if options.weighted else 1.0 for _, _, shot in chunk]
    rows = choose_template(weights, options.weighted)
    fw = [_fraction(w) for w in weights]
    groups, start = [], 0
    for k in rows:
        groups.append(list(range(start, start + k)))
        start += k
    heights = _split(content.h, [sum(fw[i] for i in g) / len(g) for g in groups], gutter)
    frames, y = [], content.y
    for group, h in zip(groups, heights, strict=True):
        x = content.x
        for i, w in zip(group, _split(content.w, [fw[i] for i in group], gutter), strict=True):
            rect = Rect(x, y, w, h)
            if options.direction == "rtl":
                rect = rect.mirrored(width)
            index, pid, _ = chunk[i]
            frames.append(Frame(pid, index, rect))
            x += w + gutter
        y += h + gutter
    log.debug("page of %d panels: rows %s", len(chunk), list(rows))
    return frames


def _column_heights(chunk: Sequence[tuple[int, str, str]], options: LayoutOptions) -> list[Fraction]:
    return [
        _fraction(STRIP_ASPECT[shot] if options.weighted else UNWEIGHTED_STRIP_ASPECT) for _, _, shot in chunk
    ]


def _stack(
    chunk: Sequence[tuple[int, str, str]], x: int, y: int, w: int, heights: Sequence[int], gutter: int
) -> list[Frame]:
    frames = []
    for (index, pid, _), h in zip(chunk, heights, strict=True):
        frames.append(Frame(pid, index, Rect(x, y, w, h)))
        y += h + gutter
    return frames


def layout_pages(panels: Sequence[PanelLike], options: LayoutOptions = DEFAULT_OPTIONS) -> list[PageLayout]:
    """Lay ``panels`` (objects with ``.id`` and ``.shot``, or dicts with "id" and "shot") out on pages.

    Every page of the result has the same size. Raises InputError for no panels or unusable options.
    """
    if options is None:
        options = DEFAULT_OPTIONS
    items = _read_panels(panels)
    _check_options(options)
    trim_w, trim_h = preset_size(options)
    margin, gutter = _spacing(options, trim_w, trim_h)
    bleed = options.bleed
    sizes = page_sizes(len(items), options.panels_per_page)
    chunks, start = [], 0
    for n in sizes:
        chunks.append([(i, *items[i]) for i in range(start, start + n)])
        start += n

    pages_frames: list[list[Frame]] = []
    cw = trim_w - 2 * margin
    if trim_h is None:  # vertical strip: the height follows the panels
        column_heights = []
        for chunk in chunks:
            column_heights.append([int(cw * a + Fraction(1, 2)) for a in _column_heights(chunk, options)])
        longest = max(sum(hs) + gutter * (len(hs) - 1) for hs in column_heights)
        trim_h = max(MIN_SIDE, longest + 2 * margin)
        if trim_h > MAX_SIDE or (trim_w + 2 * bleed) * (trim_h + 2 * bleed) > MAX_PIXELS:
            raise InputError(
                f"The vertical strip would be {trim_h} px tall for up to {max(sizes)} panels a page at "
                f"{trim_w} px wide, over the limits ({MAX_SIDE} px a side, {MAX_PIXELS:,} pixels). "
                "Use fewer panels per page, a narrower strip or a smaller gutter."
            )
        origin = bleed + margin
        for chunk, hs in zip(chunks, column_heights, strict=True):
            pages_frames.append(_stack(chunk, origin, origin, cw, hs, gutter))
    else:
        content = Rect(bleed + margin, bleed + margin, cw, trim_h - 2 * margin)
        for chunk in chunks:
            if options.direction == "vertical":
                hs = _split(content.h, _column_heights(chunk, options), gutter)
                pages_frames.append(_stack(chunk, content.x, content.y, content.w, hs, gutter))
            else:
                pages_frames.append(_paged_frames(chunk, content, gutter, options, trim_w + 2 * bleed))

    width, height = trim_w + 2 * bleed, trim_h + 2 * bleed
    _check_image_size(width, height, "Page image (trim + 2 x bleed)")
    for frames in pages_frames:
        _too_small(frames, options, margin, gutter, f"{trim_w} x {trim_h} px")
    pages = [
        PageLayout(n, width, height, bleed, tuple(frames), options.direction, margin)
        for n, frames in enumerate(pages_frames, start=1)
    ]
    log.debug(
        "%d panels on %d pages (%s) of %d x %d px, %s",
        len(items),
        len(pages),
        "+".join(map(str, sizes)),
        width,
        height,
        options.direction,
    )
    return pages


def layout_to_dict(pages: list[PageLayout]) -> dict:
    """A JSON-ready copy of ``pages``."""
    return {
        "pages": [
            {
                "number": page.number,
                "width": page.width,
                "height": page.height,
                "bleed": page.bleed,
                "frames": [
                    {
                        "panel_id": f.panel_id,
                        "index": f.index,
                        **dict(zip("xywh", f.rect.as_list(), strict=True)),
                    }
                    for f in page.frames
                ],
            }
            for page in pages
        ]
    }
