"""Export: a 20-page A4 chapter (300 dpi, textured like drawn pages) written as CBZ, EPUB and PDF."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from ...export import BookInfo, Section, export, image_page
from .common import median

PAGES = 20


def _pages() -> list[Any]:
    """Twenty different A4 pages: one textured image, each page shifted and numbered (no two alike,
    so no container can store one image twice)."""
    from PIL import Image, ImageChops, ImageDraw, ImageFilter

    gradient = Image.radial_gradient("L").resize((1240, 1754))
    noise = [Image.effect_noise((1240, 1754), s).filter(ImageFilter.GaussianBlur(2)) for s in (40, 60, 80)]
    base = Image.merge("RGB", [Image.blend(gradient, n, 0.35) for n in noise]).resize((2480, 3508))
    pages = []
    for n in range(PAGES):
        image = ImageChops.offset(base, 37 * n, 53 * n)
        ImageDraw.Draw(image).rectangle((100, 100, 400 + 20 * n, 220), fill=(255, 255, 255))
        pages.append(image_page(image, 300, f"page {n + 1}"))
    return pages


def export_chapter(repeats: int) -> dict[str, float]:
    """``export_20_pages_ms_*``: each format's write time (median of ``repeats``) and its size."""
    section = Section("Chapter", tuple(_pages()), 1)
    info = BookInfo("Bench", "en", "rtl")
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="mangaka-bench-export-") as tmp:
        for fmt in ("cbz", "epub", "pdf"):
            times = []
            for _ in range(repeats):
                started = time.perf_counter()
                [path] = export([section], info, [fmt], tmp, "bench")
                times.append(1000 * (time.perf_counter() - started))
            figures[f"export_20_pages_ms_{fmt}"] = median(times)
            figures[f"export_20_pages_mib_{fmt}"] = Path(path).stat().st_size / 2**20
    figures["export_20_pages_input_mib"] = sum(len(p.data) for p in section.pages) / 2**20
    figures["export_pdf_over_cbz_ms"] = figures["export_20_pages_ms_pdf"] / figures["export_20_pages_ms_cbz"]
    return figures
