"""Lettering: speech balloons laid out and drawn inside a panel, for Chinese, Japanese and English.

:func:`plan_balloons` turns a panel's dialogue lines into :class:`BalloonPlan` s (pure geometry, no
drawing): one balloon per line, inside the panel with a small inset, in reading order, none
overlapping another. :func:`draw_balloons` draws plans onto a page in place.

This module gathers the lettering API; the work is done in :mod:`.balloon` (options, plans, boxes
and sizes), :mod:`.fit` (font sizes, fitting text), :mod:`.plan` (placing balloons in a panel)
and :mod:`.draw` (drawing them).

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

import logging

from .balloon import (
    BALLOON_KINDS,
    COLUMN_PITCH,
    ELLIPSIS,
    LINE_HEIGHT,
    LINE_PER_PAGE_WIDTH,
    TAIL_LENGTH,
    BalloonKind,
    BalloonPlan,
    Box,
    LayoutEngine,
    LetteringOptions,
    LineSpec,
    balloon_kind,
    line_width,
    use_raqm,
    vertical_enabled,
)
from .draw import BASELINE, INK, PAPER, ROTATED, SMALL_KANA, SMALL_KANA_SHIFT, VERTICAL_FORMS, draw_balloons
from .fit import FONT_PER_PAGE_WIDTH, HORIZONTAL_RATIO, MIN_FONT_RATIO, VERTICAL_RATIO, font_sizes
from .fonts import raqm_available
from .layout import TextOrder
from .plan import (
    CAP_SCALES,
    INSET_PER_PAGE_WIDTH,
    MAX_BALLOON_HEIGHT,
    MAX_BALLOON_WIDTH,
    SQRT2,
    plan_balloons,
)

log = logging.getLogger(__name__)

__all__ = [
    "BALLOON_KINDS",
    "BASELINE",
    "CAP_SCALES",
    "COLUMN_PITCH",
    "ELLIPSIS",
    "FONT_PER_PAGE_WIDTH",
    "HORIZONTAL_RATIO",
    "INK",
    "INSET_PER_PAGE_WIDTH",
    "LINE_HEIGHT",
    "LINE_PER_PAGE_WIDTH",
    "MAX_BALLOON_HEIGHT",
    "MAX_BALLOON_WIDTH",
    "MIN_FONT_RATIO",
    "PAPER",
    "ROTATED",
    "SMALL_KANA",
    "SMALL_KANA_SHIFT",
    "SQRT2",
    "TAIL_LENGTH",
    "VERTICAL_FORMS",
    "VERTICAL_RATIO",
    "BalloonKind",
    "BalloonPlan",
    "Box",
    "LayoutEngine",
    "LetteringOptions",
    "LineSpec",
    "TextOrder",
    "balloon_kind",
    "draw_balloons",
    "font_sizes",
    "line_width",
    "plan_balloons",
    "raqm_available",
    "use_raqm",
    "vertical_enabled",
]
