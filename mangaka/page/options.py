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
        name_ja="ページ",
        help_ja="ページサイズのプリセット（B5、A4 の 300 または 600 dpi、縦読みマンガ）。"
        "custom：幅と高さを使う",
        name_ko="페이지",
        help_ko="페이지 크기 프리셋(B5, A4 300 또는 600dpi, 웹툰 세로 스크롤). custom: 너비와 높이 사용",
    ),
    Option(
        "width", PAGE_PRESETS["A4 300dpi"][0], "Custom page width in pixels", "自定义页面宽度（像素）",
        low=MIN_SIDE, high=MAX_SIDE, flag="--width", widget="width", name_zh="宽度", metavar="PX",
        name_ja="幅", help_ja="カスタムページの幅（ピクセル）",
        name_ko="너비", help_ko="사용자 지정 페이지 너비(픽셀)",
    ),
    Option(
        "height", PAGE_PRESETS["A4 300dpi"][1], "Custom page height; 0 = follow the panels",
        "自定义页面高度；0 = 随分镜格延伸",
        low=0, high=MAX_SIDE, flag="--height",
        widget="height", name_zh="高度", metavar="PX",
        name_ja="高さ", help_ja="カスタムページの高さ。0 = コマに合わせて伸ばす",
        name_ko="높이", help_ko="사용자 지정 페이지 높이. 0 = 패널에 맞춰 늘어남",
    ),
    Option(
        "direction", "rtl", "rtl: manga (right to left); ltr: comics; vertical: webtoon strip",
        "rtl：日漫（从右到左）；ltr：欧美漫画；vertical：条漫长图",
        choices=DIRECTIONS, flag="--direction", widget="direction", name_zh="阅读方向",
        name_ja="読む方向",
        help_ja="rtl：マンガ（右から左）。ltr：欧米のコミック。vertical：縦読みマンガ（ウェブトゥーン）",
        name_ko="읽는 방향",
        help_ko="rtl: 일본 만화(오른쪽에서 왼쪽). ltr: 서양 코믹스. vertical: 웹툰 세로 스크롤",
    ),
    Option(
        "panels_per_page", 6, "Panels on a page at most; more go on to the next pages",
        "每页最多的分镜格数；多出的格子排到后面的页",
        low=1, high=MAX_PANELS_PER_PAGE, flag="--panels-per-page", widget="panels_per_page",
        name_zh="每页分镜格数",
        name_ja="1 ページのコマ数", help_ja="1 ページの最大コマ数。あふれたコマは次のページへ",
        name_ko="페이지당 패널 수", help_ko="한 페이지의 최대 패널 수. 넘치는 패널은 다음 페이지로",
    ),
    Option(
        "margin", -1, "Pixels; -1 = 5% of the shorter side", "像素；-1 = 短边的 5%",
        low=-1, high=5000, flag="--margin", widget="margin", name_zh="页边距", metavar="PX",
        name_ja="余白", help_ja="ピクセル。-1 = 短辺の 5%",
        name_ko="여백", help_ko="픽셀. -1 = 짧은 변의 5%",
    ),
    Option(
        "gutter", -1, "Pixels between panels; -1 = automatic", "分镜格之间的像素；-1 = 自动",
        low=-1, high=2000, flag="--gutter", widget="gutter", name_zh="格间距", metavar="PX",
        name_ja="コマ間隔", help_ja="コマとコマの間のピクセル。-1 = 自動",
        name_ko="패널 간격", help_ko="패널 사이의 픽셀. -1 = 자동",
    ),
    Option(
        "bleed", 0, "Pixels added around the trim for print", "印刷用：在裁切线外加出的像素",
        low=0, high=2000, flag="--bleed", widget="bleed", name_zh="出血", metavar="PX",
        name_ja="裁ち落とし", help_ja="印刷用：仕上がり線の外側に加えるピクセル",
        name_ko="도련", help_ko="인쇄용: 재단선 바깥에 더하는 픽셀",
    ),
    Option(
        "weighted", True, "Wide shots get more room than close-ups", "远景比特写占更大的格子",
        flag="--weighted", widget="weighted", name_zh="按镜头加权",
        name_ja="ショットで重み付け", help_ja="引きのショットはアップより大きなコマに",
        name_ko="샷별 가중치", help_ko="원경 샷이 클로즈업보다 큰 패널을 받음",
    ),
    Option(
        "lettering", True, "Letter every dialogue line into a speech balloon", "把每句台词写进对白气泡",
        flag="--lettering", widget="lettering", name_zh="写入台词",
        name_ja="写植", help_ja="すべての台詞を吹き出しに写植します",
        name_ko="식자", help_ko="모든 대사를 말풍선에 식자합니다",
    ),
    Option(
        "vertical", False, "Chinese/Japanese top to bottom", "中文/日文从上到下书写",
        flag="--vertical", widget="vertical_text", name_zh="竖排文字",
        name_ja="縦書き", help_ja="中国語・日本語を上から下へ書きます",
        name_ko="세로쓰기", help_ko="중국어·일본어를 위에서 아래로 씁니다",
    ),
    Option(
        "font_size", 0, "Largest text size; 0 = automatic", "最大字号；0 = 自动",
        low=0, high=400, flag="--font-size", widget="font_size", name_zh="字号", metavar="PX",
        name_ja="文字サイズ", help_ja="最大の文字サイズ。0 = 自動",
        name_ko="글자 크기", help_ko="최대 글자 크기. 0 = 자동",
    ),
    Option(
        "border", -1, "Frame line width; -1 = automatic", "格框线宽；-1 = 自动",
        low=-1, high=100, flag="--border", widget="border", name_zh="边框", metavar="PX",
        name_ja="枠線", help_ja="コマ枠の線の太さ。-1 = 自動",
        name_ko="테두리", help_ko="패널 테두리 두께. -1 = 자동",
    ),
    Option(
        "format", "png", "The pages' image format", "页面图片格式", choices=IMAGE_FORMATS, flag="--format",
        help_ja="ページ画像の形式",
        help_ko="페이지 이미지 형식",
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
