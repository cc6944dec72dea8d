"""Chapter splitting: books with no headings that leave only the finest cuts, at two sizes."""

from __future__ import annotations

import logging
import time

from ...chapters import split_chapters

log = logging.getLogger(__name__)

# Books with no headings, each repeating one unit: no blank line and no line break to cut at
# (one letter; Chinese sentences with no spaces, cut at each 。), or a cut every few characters.
SHAPES = {
    "one_char": "a",
    "cjk_sentences": "汉字。",
    "short_lines": "abcdefghij\n",
    "ascii_sentences": "The cat sat on the mat. ",
}


def _book(unit: str, mb: float) -> str:
    """``unit`` repeated to ``mb`` megabytes of UTF-8, the size of the book's file."""
    return unit * round(mb * 1e6 / len(unit.encode()))


def _seconds(text: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        split_chapters(text)
        best = min(best, time.perf_counter() - started)
    return best


def split_speed(quick: bool) -> dict[str, float]:
    """Each shape split at a size and at 8x it (1 and 8 MB with ``quick``, else 6 and 48 MB): MB/s
    at the big size per shape and for the slowest, and the largest big ÷ small time (≈8: linear)."""
    small_mb, big_mb = (1.0, 8.0) if quick else (6.0, 48.0)
    figures: dict[str, float] = {}
    ratios = []
    for name, unit in SHAPES.items():
        small = _seconds(_book(unit, small_mb), repeats=3)
        big = _seconds(_book(unit, big_mb), repeats=1)
        log.info("split %s: %.2f s at %g MB, %.2f s at %g MB", name, small, small_mb, big, big_mb)
        figures[f"split_mb_per_s_{name}"] = big_mb / big
        ratios.append(big / small)
    figures["split_mb_per_s"] = min(figures.values())
    figures["split_time_ratio_8x"] = max(ratios)
    figures["split_big_mb"] = big_mb
    return figures
