"""Planning balloons: where each line of a panel is lettered, at what size, with which tail.

:func:`plan_balloons` turns a panel's dialogue lines into :class:`BalloonPlan` s (pure geometry, no
drawing): one balloon per line, inside the panel with a small inset, in reading order (captions
first), none overlapping another. It runs in steps: the panel's setting (:func:`_setting`), the
lines in reading order (:func:`_reading_order`), the sizes and caps that pack
(:func:`_choose_layout`, fitting text through a :class:`_Fits` cache), and one plan per line
(:func:`_plan_line`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from .balloon import (
    ELLIPSIS,
    BalloonKind,
    BalloonPlan,
    Box,
    LetteringOptions,
    LineSpec,
    balloon_kind,
    bump_size,
    check_options,
    line_width,
    spike_depth,
    tail_length,
    tip_radius,
    vertical_enabled,
)
from .calm import CalmMap, calm_shift
from .fit import Fit, fit_horizontal, fit_vertical, font_sizes, letterable, measure, visible
from .fonts import missing_glyphs
from .layout import TextOrder

# Problems are logged under the name they always had (the public module, mangaka.page.lettering).
log = logging.getLogger(__name__.rpartition(".")[0] + ".lettering")

SQRT2 = math.sqrt(2.0)
INSET_PER_PAGE_WIDTH = 1 / 160  # balloons keep this far from the panel border
MAX_BALLOON_WIDTH = 0.60  # of the panel's inner width
MAX_BALLOON_HEIGHT = 0.50  # of the panel's inner height
CAP_SCALES = (1.0, 0.8, 0.64, 0.5, 0.4, 0.3)  # balloon caps tried when balloons do not pack

Dims = tuple[int, int, int]  # a balloon's width, height and room below for its tail
Layout = tuple[float, list[int], list[Box | None]]  # caps scale, font sizes, boxes (None: no room)


@dataclass
class _Item:
    index: int
    spec: LineSpec
    kind: BalloonKind
    text: str


@dataclass(frozen=True)
class _Setting:
    """What every step of planning one panel needs."""

    rect: Box  # the panel
    inner: Box  # where balloons may go
    where: str  # the panel, for problems
    largest: int  # font sizes
    smallest: int
    lw: int  # outline width
    gap: int  # between balloons
    vertical: bool
    language: str
    direction: TextOrder
    cap_h: float = MAX_BALLOON_HEIGHT  # a balloon's largest share of the height it may use


@dataclass
class _Fits:
    """Text fitted per (item, size, caps scale), computed once each. ``measures``: each item's
    natural and unbreakable widths in ems, for horizontal text."""

    setting: _Setting
    measures: dict[int, tuple[float, float]]
    cache: dict[tuple[int, int, float], Fit] = field(default_factory=dict)

    def fit(self, item: _Item, size: int, scale: float, quick: bool = False) -> Fit:
        """The text of ``item`` fitted at ``size`` into the caps scaled by ``scale``. ``quick``: a
        result without lines will do where the area alone says that the text cannot fit."""
        key = (item.index, size, scale)
        cached = self.cache.get(key)
        if cached is None or (cached.estimated and not quick):
            cached = self.cache[key] = self._compute(item, size, scale, exact=not quick)
        return cached

    def _compute(self, item: _Item, size: int, scale: float, exact: bool) -> Fit:
        s = self.setting
        cap_w = int(s.inner.w * MAX_BALLOON_WIDTH * scale)
        cap_h = int(s.inner.h * s.cap_h * scale)
        factor, margin = _frame(item.kind, size, s.lw)
        max_w = int((cap_w - 2 * margin) / factor)
        max_h = int((cap_h - 2 * margin) / factor)
        if s.vertical:
            return fit_vertical(item.text, size, max_w, max_h, exact)
        return fit_horizontal(item.text, size, s.language, max_w, max_h, self.measures[item.index], exact)

    def best_size(self, item: _Item, scale: float) -> int:
        """The largest size at which ``item`` fits in the caps scaled by ``scale``, else the smallest."""
        s = self.setting
        for size in range(s.largest, s.smallest - 1, -1):
            if self.fit(item, size, scale, quick=True).fits:
                return size
        return s.smallest


def plan_balloons(
    panel: Any,
    lines: Sequence[LineSpec],
    options: LetteringOptions,
    page_width: int,
    *,
    panel_id: str | None = None,
    calm: CalmMap | None = None,
    area: Any | None = None,
) -> tuple[list[BalloonPlan], list[str]]:
    """Plan one balloon per line inside ``panel`` (any object with x, y, w, h in page pixels).

    Returns the plans in reading order (captions first) and human-readable problems: text that
    does not fit, lines with no room, characters the font lacks. ``panel_id`` (else the panel's
    ``id`` attribute, else its position) names the panel in the problems. ``calm``: the panel's
    picture as a cost map (``calm.py``); the packed balloons move together to its calmest spot.
    ``area``: a part of the panel the balloons must stay in (a storyboard card's free band); when
    they do not all fit there, the whole panel is used and the report says so.
    """
    check_options(options)
    setting = _setting(panel, options, page_width, panel_id)
    order = _reading_order(lines)
    problems: list[str] = []
    chosen = None
    if area is not None and not Box.of(area).empty:
        chosen = _in_band(area, options, page_width, panel_id, order)
        if chosen is None:
            problems.append(
                f"{setting.where}: its balloons do not fit beside its storyboard card's header and text "
                "rows; placed over the card"
            )
    setting, fits, (scale, sizes, placed) = chosen or _layout_in(setting, order, whole=True)  # type: ignore[misc]
    plans: list[BalloonPlan] = []
    if calm is not None:
        tails = [
            0 if it.kind == "caption" else tail_length(size) + setting.lw + tip_radius(size)
            for it, size in zip(order, sizes, strict=True)
        ]
        placed, clear = calm_shift(placed, setting.inner, calm, tails)
        if not clear:
            problems.append(
                f"{setting.where}: every place for its balloons covers what they must not (the avoid mask, "
                "or a storyboard card's header and text rows); placed as if there were none"
            )
    sides = _speaker_sides([it.spec for it in order], setting.direction)
    for it, size, box in zip(order, sizes, placed, strict=True):
        f = fits.fit(it, size, scale)
        plan = _plan_line(setting, it, size, box, f, sides.get(it.spec.speaker, 1), problems)
        plans.append(plan)
    for problem in problems:
        log.warning("Lettering: %s", problem)
    return plans, problems


def balloons_fit(area: Any, lines: Sequence[LineSpec], options: LetteringOptions, page_width: int) -> bool:
    """Whether the balloons of ``lines`` all fit whole in ``area`` (a storyboard card's free band),
    as :func:`plan_balloons` would place them there."""
    check_options(options)
    if not lines:
        return True
    return (
        not Box.of(area).empty
        and _in_band(area, options, page_width, None, _reading_order(lines)) is not None
    )


def _in_band(
    area: Any, options: LetteringOptions, page_width: int, panel_id: str | None, order: list[_Item]
) -> tuple[_Setting, _Fits, Layout] | None:
    # A band beside a card's text is short: a balloon may take all of its height.
    band = replace(_setting(area, options, page_width, panel_id), cap_h=1.0)
    return _layout_in(band, order)


def _layout_in(s: _Setting, order: list[_Item], whole: bool = False) -> tuple[_Setting, _Fits, Layout] | None:
    """The layout of ``order`` in ``s``'s box; None when some line finds no room or its text does
    not fit whole there (unless ``whole``: the panel itself, where what is left out is reported)."""
    measures = {it.index: measure(it.text, s.language, s.largest) for it in order if not s.vertical}
    fits = _Fits(s, measures)
    layout = _choose_layout(fits, order)
    scale, sizes, placed = layout
    if not whole:
        for it, size, box in zip(order, sizes, placed, strict=True):
            if not it.text:
                continue
            f = fits.fit(it, size, scale)
            # A vertical line squeezed into columns of one or two characters reads as a row.
            if box is None or not f.fits or (s.vertical and min(map(len, f.lines[:-1]), default=3) < 3):
                return None
    return s, fits, layout


def _setting(panel: Any, options: LetteringOptions, page_width: int, panel_id: str | None) -> _Setting:
    rect = Box.of(panel)
    if rect.empty:
        raise InputError(f"The panel rectangle {rect} has no area.")
    pid = panel_id or getattr(panel, "id", None) or getattr(panel, "panel_id", None)
    where = f"panel {pid}" if pid else f"panel at ({rect.x}, {rect.y})"
    largest, smallest = font_sizes(options, page_width)
    lw = line_width(page_width)
    inset = min(max(2 * lw, round(page_width * INSET_PER_PAGE_WIDTH)), rect.w // 8, rect.h // 8)
    return _Setting(
        rect=rect,
        inner=rect.inset(inset),
        where=where,
        largest=largest,
        smallest=smallest,
        lw=lw,
        gap=max(2 * lw, round(0.3 * smallest)),
        vertical=vertical_enabled(options),
        language=options.language,
        direction=options.direction,
    )


def _reading_order(lines: Sequence[LineSpec]) -> list[_Item]:
    """The lines as items, captions first, each group in dialogue order."""
    items = [
        _Item(i, spec, balloon_kind(spec.emotion, spec.speaker), letterable(spec.text))
        for i, spec in enumerate(lines)
    ]
    return [it for it in items if it.kind == "caption"] + [it for it in items if it.kind != "caption"]


def _choose_layout(fits: _Fits, order: list[_Item]) -> Layout:
    """The largest sizes at which everything packs with full caps; else smaller caps, as long as
    every line that fits with full caps still fits; else full caps at the minimum size with the
    lines that find no room left out (and reported)."""
    best: dict[float, list[int]] = {1.0: [fits.best_size(it, 1.0) for it in order]}
    fitting = {k for k, it in enumerate(order) if fits.fit(it, best[1.0][k], 1.0, quick=True).fits}
    for scale in CAP_SCALES:
        if scale not in best:
            best[scale] = [fits.best_size(it, scale) for it in order]
            if any(not fits.fit(order[k], best[scale][k], scale, quick=True).fits for k in fitting):
                break  # smaller caps would cut text that fits
        packed = _first_packing(fits, order, best[scale], scale)
        if packed is not None:
            return packed
    return (1.0, *_attempt(fits, order, best[1.0], 1.0, fits.setting.smallest))


def _first_packing(fits: _Fits, order: list[_Item], best: list[int], scale: float) -> Layout | None:
    """At caps ``scale``, the first size ceiling (from the largest down) at which every line with
    text finds room; None when none does."""
    s = fits.setting
    for ceiling in range(s.largest, s.smallest - 1, -1):
        sizes, placed = _attempt(fits, order, best, scale, ceiling)
        if all(box is not None or not it.text for it, box in zip(order, placed, strict=True)):
            return scale, sizes, placed
    return None


def _attempt(
    fits: _Fits, order: list[_Item], best: list[int], scale: float, ceiling: int
) -> tuple[list[int], list[Box | None]]:
    """The sizes (each line's ``best``, at most ``ceiling``) and where they pack at caps ``scale``."""
    s = fits.setting
    sizes = [min(best[k], ceiling) for k in range(len(order))]
    dims = [
        _balloon_dims(it.kind, fits.fit(it, size, scale), size, s.lw) if it.text else (0, 0, 0)
        for it, size in zip(order, sizes, strict=True)
    ]
    return sizes, _pack(s.inner, dims, s.direction, s.gap)


def _plan_line(
    s: _Setting, it: _Item, size: int, box: Box | None, f: Fit, side: int, problems: list[str]
) -> BalloonPlan:
    """The plan of one line placed at ``box`` (None: no room) with text ``f``; what is wrong with
    it is added to ``problems``. ``side``: the speaker's side when the position is unknown."""
    checked = it.text + (ELLIPSIS if not f.fits else "")
    missing = missing_glyphs(checked, s.language)
    line_id = it.spec.line_id
    if not it.text and it.spec.text.strip():
        codes = ", ".join(sorted({f"U+{ord(ch):04X}" for ch in it.spec.text.strip()}))
        problems.append(
            f"{line_id} ({s.where}): the line has no visible characters (only {codes}); it is not "
            "lettered: give it words or remove it"
        )
    if box is None or not it.text:
        shown_box = Box(s.inner.x, s.inner.y, 0, 0)
        hidden = visible(it.text)
        plan = BalloonPlan(
            line_id, it.kind, shown_box, shown_box, [], size, s.vertical, None,
            hidden == 0, hidden, missing, s.lw, s.language, s.rect,
        )  # fmt: skip
        if hidden:
            problems.append(
                f"{line_id} ({s.where}): no room for its balloon; 0 of {hidden} characters are shown"
            )
    else:
        text_box = Box(box.x + (box.w - f.text_w) // 2, box.y + (box.h - f.text_h) // 2, f.text_w, f.text_h)
        tail = _tail_tip(it.kind, box, size, s.lw, s.inner, it.spec, side)
        plan = BalloonPlan(
            line_id, it.kind, box, text_box, list(f.lines), size, s.vertical, tail,
            f.fits, f.hidden, missing, s.lw, s.language, s.rect,
        )  # fmt: skip
        if not f.fits:
            total = visible(it.text)
            problems.append(
                f"{line_id} ({s.where}): {f.hidden} of {total} characters do not fit even at {size} px"
            )
    if missing:
        listed = ", ".join(f"'{ch}' (U+{ord(ch):04X})" for ch in missing)
        problems.append(f"{line_id} ({s.where}): the font has no glyph for {listed}")
    return plan


def _frame(kind: BalloonKind, size: int, lw: int) -> tuple[float, int]:
    """(scale, margin): the balloon is ``ceil(text * scale) + 2 * margin`` on each axis."""
    pad = max(lw + 1, round(0.25 * size))
    if kind == "caption":
        return 1.0, max(lw + 2, round(0.35 * size))
    if kind == "shout":
        return SQRT2, pad + spike_depth(size) + lw
    if kind == "thought":
        return SQRT2, pad + bump_size(size)
    return SQRT2, pad + lw


def _balloon_dims(kind: BalloonKind, f: Fit, size: int, lw: int) -> Dims:
    """(width, height, room below for the tail) of a balloon holding ``f``."""
    factor, margin = _frame(kind, size, lw)
    text_w = max(f.text_w, size)
    text_h = max(f.text_h, size)
    width = math.ceil(text_w * factor) + 2 * margin
    height = math.ceil(text_h * factor) + 2 * margin
    tail = 0 if kind == "caption" else tail_length(size) + lw + tip_radius(size)
    return width, height, tail


def _pack(inner: Box, dims: list[Dims], direction: TextOrder, gap: int) -> list[Box | None]:
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


def _speaker_sides(specs: Sequence[LineSpec], direction: TextOrder) -> dict[str, int]:
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
    margin = lw + tip_radius(size) + 1
    length = tail_length(size)
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
