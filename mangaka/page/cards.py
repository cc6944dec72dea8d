"""Storyboard cards drawn for the frames of a page, whole: a card whose text does not fit its frame
continues on the next frame.

Compose Page without images draws each panel's card (``storyboard.render_card``) at its frame's own
size and shape, so placing it crops nothing. When a card's text does not fit even at the smallest
legible type, the panel gets one more frame right after its own (a continuation card, id
``p3~2``: no camera frame, the rest of the text) and the pages are laid out again, up to
``MAX_PARTS`` frames a card; the report says which cards continue. Only a card still too long for
that many frames, or a page that cannot take another frame, is cut with "…", and the report says
so. A continuation frame carries no balloons: the panel's lines are lettered on its first frame.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from PIL import Image, ImageDraw

from ..errors import InputError
from ..screenplay.models import Screenplay
from .layout import LayoutOptions, PageLayout, Rect, layout_pages
from .storyboard import MAX_SIDE, MIN_SIDE, CardItem, render_card

MAX_PARTS = 3  # frames one panel's card may take
SKETCH_STEP, MAX_SKETCH = 0.1, 0.75  # a taller camera frame for balloons that need it, up to this share
BandFits = Callable[[str, Rect, int], bool]  # (panel id, the band a card leaves free, page width)
PART_MARK = "~"  # "p3~2": the second frame of p3's card


def part_id(panel_id: str, part: int) -> str:
    """The frame id of part ``part`` (1: the panel's own frame) of ``panel_id``'s card."""
    return panel_id if part == 1 else f"{panel_id}{PART_MARK}{part}"


def parse_part(frame_id: str) -> tuple[str, int]:
    """(panel id, part) of a frame id made by :func:`part_id`."""
    panel_id, mark, part = frame_id.rpartition(PART_MARK)
    if mark and part.isdigit():
        return panel_id, int(part)
    return frame_id, 1


def card_rows_mask(size: tuple[int, int], rows: list[tuple[int, int]], scale: float) -> Image.Image:
    """An "L" mask of a card of ``size``: white over its header and text rows (``rows`` drawn at
    ``scale`` times the size), where a balloon must not go."""
    mask = Image.new("L", size, 0)
    draw = ImageDraw.Draw(mask)
    for top, bottom in rows:
        draw.rectangle((0, math.floor(top / scale), size[0], math.ceil(bottom / scale)), fill=255)
    return mask


def free_band(mask: Image.Image, rect: Rect) -> Rect:
    """The tallest band of whole rows that ``mask`` (the frame's size) leaves free, on the page."""
    import numpy as np

    rows = (~np.asarray(mask.convert("L")).any(axis=1)).tolist()  # True: nothing masked on the row
    best = (0, 0)
    start = None
    for y, free in enumerate([*rows, False]):
        if free and start is None:
            start = y
        elif not free and start is not None:
            best = max(best, (y - start, start))
            start = None
    height, top = best
    return Rect(rect.x, rect.y + top, rect.w, height)


def card_panels(sp: Screenplay, parts: dict[str, int]) -> list[dict[str, Any]]:
    """What ``layout_pages`` lays out: each panel, then its card's further parts (``parts``: frames
    a panel's card takes, 1 when absent), each with the panel's shot."""
    out = []
    for panel in sp.panels:
        for part in range(1, parts.get(panel.id, 1) + 1):
            out.append({"id": part_id(panel.id, part), "shot": panel.shot})
    return out


def storyboard_pages(
    sp: Screenplay,
    options: LayoutOptions,
    masks: dict[str, Image.Image] | None = None,
    sketch: float = 0.3,
    band_fits: BandFits | None = None,
) -> tuple[list[PageLayout], dict[str, Image.Image], list[str]]:
    """The pages' layout with a frame for each part of each card, the cards by frame id, and the
    report's problems. A card that does not fit gets another frame (up to ``MAX_PARTS``) and the
    pages are laid out again; ``masks`` gets each card's header and text rows (``card_rows_mask``);
    ``band_fits``: see :func:`fitted_cards`."""
    parts: dict[str, int] = {}
    pages = layout_pages(card_panels(sp, parts), options)
    while True:
        drawn: dict[str, Image.Image] = {}
        cards, problems, cut = fitted_cards(
            sp, pages, drawn if masks is not None else None, sketch, band_fits
        )
        grow = {pid: parts.get(pid, 1) + 1 for pid in cut if parts.get(pid, 1) < MAX_PARTS}
        if not grow:
            break
        try:
            more = layout_pages(card_panels(sp, {**parts, **grow}), options)
        except InputError as error:  # no room for another frame: keep the cut cards, and say why
            problems.append(f"no room for another frame to continue a card on ({error})")
            break
        parts.update(grow)
        pages = more
    if masks is not None:
        masks.update(drawn)
    return pages, cards, problems


def fitted_cards(
    sp: Screenplay,
    pages: Sequence[PageLayout],
    masks: dict[str, Image.Image] | None = None,
    sketch: float = 0.3,
    band_fits: BandFits | None = None,
) -> tuple[dict[str, Image.Image], list[str], list[str]]:
    """A card for each frame of ``pages``, drawn at the frame's own size and shape so that placing it
    crops nothing: the sketch, the rows and the type follow the frame. A frame smaller than a card
    may be (MIN_SIDE) is drawn larger at its shape and scaled down; a larger one at most MAX_SIDE on
    its long side, scaled up. A panel with several frames (``p3``, ``p3~2``…) shows its card over
    them in order, each part taking the text the part before left.

    Returns the cards by frame id, the problems (cards that continue; cards whose text still did
    not fit, cut with "…") and the panels whose cards were cut. ``masks``, when given, gets each
    card's header and text rows as a mask (``card_rows_mask``), for balloons to keep off;
    ``sketch``: the camera frame's share of each card (vertical lettering needs a taller one).
    ``band_fits``: whether a panel's balloons fit the band its card leaves free; a one-frame card
    whose balloons do not fit gets a taller camera frame (by ``SKETCH_STEP``, up to ``MAX_SKETCH``)
    as long as its text still fits whole."""
    index = {panel.id: i for i, panel in enumerate(sp.panels)}
    frames: dict[str, Any] = {frame.panel_id: frame for page in pages for frame in page.frames}
    widths = {frame.panel_id: page.width for page in pages for frame in page.frames}
    cards: dict[str, Image.Image] = {}
    problems: list[str] = []
    cut_panels: list[str] = []
    for panel in sp.panels:
        count = sum(1 for fid in frames if parse_part(fid)[0] == panel.id)
        items: list[CardItem] | None = None
        cut: list[str] = []
        for part in range(1, count + 1):
            frame = frames[part_id(panel.id, part)]
            spill: list[CardItem] | None = [] if part < count else None
            if count == 1 and band_fits is not None:
                width = widths[frame.panel_id]
                cards[frame.panel_id] = _card_with_room(
                    sp, index[panel.id], frame, width, masks, sketch, cut, band_fits
                )
            else:
                cards[frame.panel_id] = _card(
                    sp, index[panel.id], frame, masks, sketch, items, part, spill, cut
                )
            if spill is not None and not spill:  # everything fitted before the last part
                problems.append(f"panel {panel.id}: its storyboard card left {frame.panel_id} empty after it")
            items = spill
        size = f"{frames[panel.id].rect.w}x{frames[panel.id].rect.h}"
        if count > 1:
            problems.append(
                f"panel {panel.id}: its storyboard card's text does not fit its {size} frame at the "
                f"smallest legible size; it continues on {count - 1} more frame(s) "
                f"({', '.join(part_id(panel.id, k) for k in range(2, count + 1))})"
            )
        if cut:
            cut_panels.append(panel.id)
            problems.append(
                f"panel {panel.id}: its storyboard card's text does not fit its {size} frame at "
                f"the smallest legible size{'' if count == 1 else f', even over {count} frames'}; "
                f"cut with '…': {', '.join(cut)} (fewer panels per page, or a larger page, gives it room)"
            )
    return cards, problems, cut_panels


def _card(
    sp: Screenplay,
    index: int,
    frame: Any,
    masks: dict[str, Image.Image] | None,
    sketch: float,
    items: list[CardItem] | None,
    part: int,
    spill: list[CardItem] | None,
    cut: list[str],
) -> Image.Image:
    """One part of a card, at its frame's size (drawn at a legible size, then scaled to it)."""
    w, h = frame.rect.w, frame.rect.h
    scale = max(MIN_SIDE / min(w, h), 1.0)
    scale = min(scale, MAX_SIDE / max(w, h))
    width, height = max(MIN_SIDE, round(w * scale)), max(MIN_SIDE, round(h * scale))
    rows: list[tuple[int, int]] = []
    size = (min(width, MAX_SIDE), min(height, MAX_SIDE))
    card = render_card(sp, index, *size, cut, rows, sketch, items, part, spill)
    if masks is not None:
        masks[frame.panel_id] = card_rows_mask((w, h), rows, card.height / h)
    return card if card.size == (w, h) else card.resize((w, h), Image.LANCZOS)


def _card_with_room(
    sp: Screenplay,
    index: int,
    frame: Any,
    page_width: int,
    masks: dict[str, Image.Image] | None,
    sketch: float,
    cut: list[str],
    band_fits: BandFits,
) -> Image.Image:
    """A one-frame card whose camera frame is tall enough for the panel's balloons: the first
    share from ``sketch`` up that leaves them room and keeps the text whole, else ``sketch``'s."""
    first = None
    share = sketch
    while share <= MAX_SKETCH + 1e-9:
        shown: dict[str, Image.Image] = {}
        tried: list[str] = []
        card = _card(sp, index, frame, shown, share, None, 1, None, tried)
        if first is None:
            first = (card, shown, tried)
        elif tried:  # the text no longer fits whole: the room is not worth it
            break
        if tried or band_fits(frame.panel_id, free_band(shown[frame.panel_id], frame.rect), page_width):
            first = (card, shown, tried)
            break
        share += SKETCH_STEP
    assert first is not None
    card, shown, tried = first
    cut += tried
    if masks is not None:
        masks.update(shown)
    return card
