"""Compose Page's options, each declared once (``mangaka/options.py`` says what comes from them):
the page, its layout and its lettering. The ``page`` command's flags and the Compose Page and
Preview Page Layout nodes' widgets are made from here; ``layout_from`` checks the layout's values
against their declarations and makes the engine's ``LayoutOptions``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..options import Option, declare
from .layout import (
    CUSTOM,
    DIRECTIONS,
    MAX_PANELS_PER_PAGE,
    MAX_SIDE,
    MIN_SIDE,
    PAGE_PRESETS,
    LayoutOptions,
    text_order,
)
from .lettering import LetteringOptions

IMAGE_FORMATS = ("png", "jpeg")
# The fields of LayoutOptions among the options, in its order; -1 in margin and gutter: automatic (None).
LAYOUT_FIELDS = (
    "page",
    "width",
    "height",
    "direction",
    "panels_per_page",
    "margin",
    "gutter",
    "bleed",
    "weighted",
)
AUTOMATIC = ("margin", "gutter")

PAGE_OPTIONS = declare(
    Option(
        "page", "A4 300dpi",
        "Page size preset (B5, A4 at 300 or 600 dpi, a webtoon strip); custom: the width and height",
        "页面尺寸预设（B5、A4 的 300 或 600 dpi，条漫长图）；custom：使用宽度和高度",
        choices=(*PAGE_PRESETS, CUSTOM), flag="--page", widget="page", name_zh="页面",
    ),
    Option(
        "width", PAGE_PRESETS["A4 300dpi"][0], "Custom page width in pixels", "自定义页面宽度（像素）",
        low=MIN_SIDE, high=MAX_SIDE, flag="--width", widget="width", name_zh="宽度", metavar="PX",
    ),
    Option(
        "height", PAGE_PRESETS["A4 300dpi"][1], "Custom page height; 0 = follow the panels",
        "自定义页面高度；0 = 随分镜格延伸",
        low=0, high=MAX_SIDE, flag="--height",
        widget="height", name_zh="高度", metavar="PX",
    ),
    Option(
        "direction", "rtl", "rtl: manga (right to left); ltr: comics; vertical: webtoon strip",
        "rtl：日漫（从右到左）；ltr：欧美漫画；vertical：条漫长图",
        choices=DIRECTIONS, flag="--direction", widget="direction", name_zh="阅读方向",
    ),
    Option(
        "panels_per_page", 6, "Panels on a page at most; more go on to the next pages",
        "每页最多的分镜格数；多出的格子排到后面的页",
        low=1, high=MAX_PANELS_PER_PAGE, flag="--panels-per-page", widget="panels_per_page",
        name_zh="每页分镜格数",
    ),
    Option(
        "margin", -1, "Pixels; -1 = 5% of the shorter side", "像素；-1 = 短边的 5%",
        low=-1, high=5000, flag="--margin", widget="margin", name_zh="页边距", metavar="PX",
    ),
    Option(
        "gutter", -1, "Pixels between panels; -1 = automatic", "分镜格之间的像素；-1 = 自动",
        low=-1, high=2000, flag="--gutter", widget="gutter", name_zh="格间距", metavar="PX",
    ),
    Option(
        "bleed", 0, "Pixels added around the trim for print", "印刷用：在裁切线外加出的像素",
        low=0, high=2000, flag="--bleed", widget="bleed", name_zh="出血", metavar="PX",
    ),
    Option(
        "weighted", True, "Wide shots get more room than close-ups", "远景比特写占更大的格子",
        flag="--weighted", widget="weighted", name_zh="按镜头加权",
    ),
    Option(
        "lettering", True, "Letter every dialogue line into a speech balloon", "把每句台词写进对白气泡",
        flag="--lettering", widget="lettering", name_zh="写入台词",
    ),
    Option(
        "vertical", False, "Chinese/Japanese top to bottom", "中文/日文从上到下书写",
        flag="--vertical", widget="vertical_text", name_zh="竖排文字",
    ),
    Option(
        "font_size", 0, "Largest text size; 0 = automatic", "最大字号；0 = 自动",
        low=0, high=400, flag="--font-size", widget="font_size", name_zh="字号", metavar="PX",
    ),
    Option(
        "border", -1, "Frame line width; -1 = automatic", "格框线宽；-1 = 自动",
        low=-1, high=100, flag="--border", widget="border", name_zh="边框", metavar="PX",
    ),
    Option(
        "format", "png", "The pages' image format", "页面图片格式", choices=IMAGE_FORMATS, flag="--format",
    ),
)  # fmt: skip


def layout_from(fields: Mapping[str, Any]) -> LayoutOptions:
    """``LayoutOptions`` from the layout's values by field (widgets or flags), each checked against
    its declaration (``InputError`` about the field); the width and height only with a custom page,
    -1 margin or gutter: automatic."""
    values = {}
    for name in LAYOUT_FIELDS:
        value = fields[name]
        if name in ("width", "height") and fields["page"] != CUSTOM:
            continue  # the preset's size
        values[name] = None if name in AUTOMATIC and value == -1 else PAGE_OPTIONS[name].check(value)
    return LayoutOptions(**values)


def lettering_from(fields: Mapping[str, Any], language: str) -> tuple[LetteringOptions, dict[str, Any]]:
    """The lettering's values by field, checked against their declarations: the
    ``LetteringOptions`` for a screenplay in ``language``, and ``compose_pages``' ``letter`` and
    ``border`` (-1: automatic)."""
    vertical, font_size, border, letter = (
        PAGE_OPTIONS[name].check(fields[name]) for name in ("vertical", "font_size", "border", "lettering")
    )
    lettering = LetteringOptions(
        language=language,
        vertical=vertical,
        direction=text_order(PAGE_OPTIONS["direction"].check(fields["direction"])),
        max_font_size=font_size or None,
    )
    return lettering, {"letter": letter, "border": None if border < 0 else border}
