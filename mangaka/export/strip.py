"""A webtoon strip cut into images of a readable height, at its gutters.

A vertical-scroll page is one tall image (800 x 30,000 pixels is common); readers and EPUB/PDF
viewers want pages. The strip is cut where a band of rows is one flat colour (the gutter between
two panels), as close below ``max_height`` as possible and never above it; a panel taller than
that is cut inside (said in the log). A slice is never shorter than ``min_height`` unless it is
the strip's end. The slices are PNG (lossless), whatever the strip was.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence
from dataclasses import replace

from .pages import Page, Section

log = logging.getLogger("mangaka.export")

# A slice's height against the strip's width: 1.6 is a phone screen and a half, as webtoon
# platforms cut their episodes.
MAX_RATIO = 1.6
MIN_RATIO = 0.4


def flat_rows(image: object) -> list[bool]:
    """For each row: are all its pixels one colour (a gutter row)?"""
    import numpy as np

    pixels = np.asarray(image)
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    return list((pixels == pixels[:, :1, :]).all(axis=(1, 2)))


def cut_points(flat: Sequence[bool], max_height: int, min_height: int) -> list[int]:
    """Row indexes where slices end (the last is ``len(flat)``)."""
    height, top, cuts = len(flat), 0, []
    while height - top > max_height:
        limit = top + max_height
        best = None
        for row in range(limit, top + min_height - 1, -1):
            if flat[row - 1] and (row >= height or flat[row]):
                best = row  # the cut lies between two flat rows: inside a gutter
                break
        if best is None:
            log.warning("a panel taller than %d pixels is cut at row %d of the strip", max_height, limit)
            best = limit
        cuts.append(best)
        top = best
    return [*cuts, height]


def slice_strip(page: Page) -> list[Page]:
    """``page`` cut at its gutters into slices at most ``MAX_RATIO`` x its width tall."""
    from PIL import Image

    max_height = max(1, int(page.width * MAX_RATIO))
    if page.height <= max_height:
        return [page]
    with Image.open(io.BytesIO(page.data)) as image:
        image.load()
        cuts = cut_points(flat_rows(image), max_height, max(1, int(page.width * MIN_RATIO)))
        slices, top = [], 0
        for n, bottom in enumerate(cuts, 1):
            buffer = io.BytesIO()
            image.crop((0, top, page.width, bottom)).save(buffer, format="PNG", compress_level=6)
            source = f"{page.source} (slice {n} of {len(cuts)})"
            slices.append(
                replace(page, data=buffer.getvalue(), kind="png", height=bottom - top, source=source)
            )
            top = bottom
    return slices


def slice_sections(sections: Sequence[Section]) -> list[Section]:
    return [replace(s, pages=tuple(p for page in s.pages for p in slice_strip(page))) for s in sections]
