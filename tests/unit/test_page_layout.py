"""Page layout geometry: golden layouts for every panel count and direction, then properties over
many combinations (no overlaps, inside the margins, exact gutters, reading order, rtl = mirrored ltr,
shot weights, balanced page breaks, one page size per layout) and every bad input.

Regenerate the golden files after an intended change with ``MANGAKA_UPDATE_GOLDEN=1 pytest
tests/unit/test_page_layout.py`` and review the diff.
"""

from __future__ import annotations

import ast
import itertools
import json
import math
import os
import random
from pathlib import Path

import pytest

from mangaka.errors import InputError
from mangaka.page import layout as layout_module
from mangaka.page.layout import (
    MAX_PANELS_PER_PAGE,
    MAX_PIXELS,
    MAX_SIDE,
    MIN_FRAME,
    MIN_SIDE,
    PAGE_PRESETS,
    SHOT_WEIGHT,
    STRIP_ASPECT,
    TEMPLATES,
    Frame,
    LayoutOptions,
    PageLayout,
    Rect,
    choose_template,
    layout_pages,
    layout_to_dict,
    page_sizes,
    preset_size,
)
from mangaka.screenplay.example import example_screenplay
from mangaka.screenplay.models import SHOTS, Screenplay

GOLDEN = Path(__file__).parent / "data" / "golden_layout"
UPDATE = os.environ.get("MANGAKA_UPDATE_GOLDEN") == "1"

# 16 panels of mixed shots: the first 2k make two pages of k panels for every k in 1..8.
GOLDEN_SHOTS = [
    "establishing",
    "medium",
    "close_up",
    "over_the_shoulder",
    "wide",
    "medium_close_up",
    "extreme_close_up",
    "full",
    "insert",
    "pov",
    "close_up",
    "medium",
    "establishing",
    "close_up",
    "medium_close_up",
    "wide",
]


def panels_of(shots: list[str]) -> list[dict]:
    return [{"id": f"p{i + 1}", "shot": shot} for i, shot in enumerate(shots)]


GOLDEN_PANELS = panels_of(GOLDEN_SHOTS)

GOLDEN_CASES = [
    *[
        (f"a4_{d}_{k}", 2 * k, LayoutOptions(direction=d, panels_per_page=k))
        for d in ("rtl", "ltr")
        for k in range(1, 9)
    ],
    ("a4_rtl_6_unweighted", 12, LayoutOptions(panels_per_page=6, weighted=False)),
    ("a4_vertical_4", 8, LayoutOptions(direction="vertical", panels_per_page=4)),
    *[
        (
            f"webtoon_vertical_{k}",
            2 * k,
            LayoutOptions(page="webtoon 800px", direction="vertical", panels_per_page=k),
        )
        for k in (1, 3, 5, 8)
    ],
]


@pytest.mark.parametrize(("name", "count", "options"), GOLDEN_CASES, ids=[c[0] for c in GOLDEN_CASES])
def test_golden_layouts(name, count, options):
    got = layout_to_dict(layout_pages(GOLDEN_PANELS[:count], options))
    path = GOLDEN / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=2) + "\n", encoding="utf-8")
    assert path.is_file(), f"{path} is missing; run with MANGAKA_UPDATE_GOLDEN=1 and review it"
    assert got == json.loads(path.read_text(encoding="utf-8"))


def test_no_stray_golden_files():
    names = {f"{c[0]}.json" for c in GOLDEN_CASES}
    assert {p.name for p in GOLDEN.glob("*.json")} == names


def test_layout_to_dict_shape():
    pages = layout_pages(GOLDEN_PANELS[:3], LayoutOptions(panels_per_page=2))
    got = layout_to_dict(pages)
    assert json.loads(json.dumps(got)) == got
    assert list(got) == ["pages"]
    assert [list(p) for p in got["pages"]] == [["number", "width", "height", "bleed", "frames"]] * 2
    assert list(got["pages"][0]["frames"][0]) == ["panel_id", "index", "x", "y", "w", "h"]
    assert [p["number"] for p in got["pages"]] == [1, 2]
    assert got["pages"][1]["frames"][0] == {
        "panel_id": "p3",
        "index": 2,
        **dict(zip("xywh", pages[1].frames[0].rect.as_list(), strict=True)),
    }


# --- properties ------------------------------------------------------------------------------------

DIRECTIONS = ("rtl", "ltr", "vertical")


def random_shots(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(SHOTS) for _ in range(count)]


def combos():
    """(panels, options) over panel counts, panels per page, directions, pages, spacing and weighting."""
    pages = [
        ("A4 300dpi", 0, 0),
        ("B5 300dpi", 0, 0),
        ("B5 600dpi", 0, 0),
        ("webtoon 800px", 0, 0),
        ("custom", 1000, 1414),
        ("custom", 1600, 900),
        ("custom", 700, 0),
    ]
    for i, (count, ppp, direction, (page, w, h), weighted) in enumerate(
        itertools.product((1, 2, 5, 7, 9, 13, 16, 24), range(1, 9), DIRECTIONS, pages, (True, False))
    ):
        if h == 0 and page != "webtoon 800px" and direction != "vertical":
            continue
        if page == "webtoon 800px" and direction != "vertical":
            continue
        spacing = [(None, None, 0), (0, 0, 0), (40, 12, 36)][i % 3]
        options = LayoutOptions(
            page=page,
            width=w,
            height=h,
            direction=direction,
            panels_per_page=ppp,
            margin=spacing[0],
            gutter=spacing[1],
            bleed=spacing[2],
            weighted=weighted,
        )
        yield panels_of(random_shots(count, i)), options


COMBOS = list(combos())


def rows_of(page: PageLayout) -> list[list[Frame]]:
    """Consecutive frames sharing a top edge."""
    rows: list[list[Frame]] = []
    for frame in page.frames:
        if rows and rows[-1][0].rect.y == frame.rect.y:
            rows[-1].append(frame)
        else:
            rows.append([frame])
    return rows


def resolved_spacing(options: LayoutOptions) -> tuple[int, int]:
    w, h = preset_size(options)
    shorter = w if h is None else min(w, h)
    margin = options.margin if options.margin is not None else round(shorter * 0.05 + 1e-9)
    default_gutter = 0.1 if h is None else 0.012
    gutter = options.gutter if options.gutter is not None else math.floor(w * default_gutter + 0.5)
    return margin, gutter


def check_invariants(panels: list[dict], options: LayoutOptions, pages: list[PageLayout]) -> None:
    margin, gutter = resolved_spacing(options)
    trim_w, trim_h = preset_size(options)
    bleed = options.bleed
    # one size for every page; the image is trim + 2 * bleed
    assert len({(p.width, p.height, p.bleed) for p in pages}) == 1
    assert pages[0].width == trim_w + 2 * bleed
    if trim_h is not None:
        assert pages[0].height == trim_h + 2 * bleed
    assert [p.number for p in pages] == list(range(1, len(pages) + 1))
    # page breaks balanced; every panel once, in screenplay order
    assert [len(p.frames) for p in pages] == page_sizes(len(panels), options.panels_per_page)
    frames = [f for p in pages for f in p.frames]
    assert [f.index for f in frames] == list(range(len(panels)))
    assert [f.panel_id for f in frames] == [p["id"] for p in panels]
    for page in pages:
        assert page.trim == Rect(bleed, bleed, page.width - 2 * bleed, page.height - 2 * bleed)
        content = page.trim.inset(margin)
        assert page.content == content
        for f in page.frames:
            assert content.contains(f.rect), (f, content)
            assert min(f.rect.w, f.rect.h) >= MIN_FRAME
            assert all(isinstance(v, int) for v in f.rect.as_list())
        for a, b in itertools.combinations(page.frames, 2):
            assert not a.rect.intersects(b.rect), (a, b)
        if options.direction == "vertical":
            assert all(f.rect.x == content.x and f.rect.w == content.w for f in page.frames)
            assert page.frames[0].rect.y == content.y
            for a, b in itertools.pairwise(page.frames):
                assert b.rect.y == a.rect.bottom + gutter
            if trim_h is not None:
                assert page.frames[-1].rect.bottom == content.bottom
            continue
        rows = rows_of(page)
        assert [len(r) for r in rows] in [list(t) for t in TEMPLATES[len(page.frames)]]
        assert rows[0][0].rect.y == content.y
        assert rows[-1][0].rect.bottom == content.bottom
        for upper, lower in itertools.pairwise(rows):
            assert lower[0].rect.y == upper[0].rect.bottom + gutter
        for row in rows:
            assert len({f.rect.h for f in row}) == 1
            ordered = row if options.direction == "ltr" else row[::-1]  # left to right on the page
            assert ordered[0].rect.x == content.x and ordered[-1].rect.right == content.right
            for a, b in itertools.pairwise(ordered):
                assert b.rect.x == a.rect.right + gutter


@pytest.mark.parametrize("direction", DIRECTIONS)
def test_layout_properties(direction):
    checked = 0
    for panels, options in COMBOS:
        if options.direction != direction:
            continue
        pages = layout_pages(panels, options)
        check_invariants(panels, options, pages)
        assert layout_pages(panels, options) == pages  # deterministic
        checked += 1
    assert checked >= 256


def test_combos_cover_every_direction_and_count():
    seen = {(o.direction, o.panels_per_page) for _, o in COMBOS}
    assert seen == set(itertools.product(DIRECTIONS, range(1, 9)))


def test_reading_order_within_a_row():
    for panels, options in COMBOS:
        if options.direction == "vertical":
            continue
        for page in layout_pages(panels, options):
            for row in rows_of(page):
                xs = [f.rect.x for f in row]
                assert xs == (sorted(xs) if options.direction == "ltr" else sorted(xs, reverse=True))


def test_rtl_is_the_mirror_of_ltr():
    checked = 0
    for panels, options in COMBOS:
        if options.direction != "rtl":
            continue
        rtl = layout_pages(panels, options)
        ltr = layout_pages(panels, LayoutOptions(**{**options.__dict__, "direction": "ltr"}))
        assert [(p.width, p.height) for p in rtl] == [(p.width, p.height) for p in ltr]
        for a, b in zip(rtl, ltr, strict=True):
            assert [(f.panel_id, f.rect) for f in a.frames] == [
                (f.panel_id, f.rect.mirrored(b.width)) for f in b.frames
            ]
            checked += 1
    assert checked > 100


def test_first_manga_panel_is_top_right():
    page = layout_pages(panels_of(["medium"] * 6))[0]
    first = page.frames[0].rect
    assert first.y == min(f.rect.y for f in page.frames)
    assert first.right == max(f.rect.right for f in page.frames)


def test_establishing_gets_more_room_than_a_close_up_in_its_row():
    compared = est_vs_close_up = 0
    for panels, options in COMBOS:
        if not options.weighted or options.direction == "vertical":
            continue
        for page in layout_pages(panels, options):
            shot = {f.panel_id: s["shot"] for f in page.frames for s in panels if s["id"] == f.panel_id}
            for row in rows_of(page):
                for a, b in itertools.permutations(row, 2):
                    if SHOT_WEIGHT[shot[a.panel_id]] > SHOT_WEIGHT[shot[b.panel_id]]:
                        assert a.rect.area > b.rect.area
                        compared += 1
                        est_vs_close_up += (
                            shot[a.panel_id] == "establishing" and shot[b.panel_id] == "close_up"
                        )
    assert compared > 500 and est_vs_close_up > 0


def test_establishing_beats_every_close_up_on_its_page():
    pages_checked = 0
    for panels, options in COMBOS:
        if not options.weighted:
            continue
        shot = {p["id"]: p["shot"] for p in panels}
        for page in layout_pages(panels, options):
            establishing = [f.rect.area for f in page.frames if shot[f.panel_id] == "establishing"]
            close_ups = [f.rect.area for f in page.frames if shot[f.panel_id] == "close_up"]
            if establishing and close_ups:
                assert min(establishing) > max(close_ups), page
                pages_checked += 1
    assert pages_checked > 100


@pytest.mark.parametrize("direction", ["rtl", "ltr", "vertical"])
@pytest.mark.parametrize("count", [2, 3, 4, 5, 6, 7, 8])
def test_establishing_is_the_biggest_on_its_page(direction, count):
    shots = ["close_up"] * count
    shots[count // 2] = "establishing"
    page = layout_pages(panels_of(shots), LayoutOptions(direction=direction, panels_per_page=count))[0]
    big = page.frames[count // 2].rect.area
    assert all(big > f.rect.area for i, f in enumerate(page.frames) if i != count // 2)


def test_lone_establishing_shot_takes_a_full_width_row():
    for count in range(3, 9):
        for where in (0, count - 1):
            shots = ["medium"] * count
            shots[where] = "establishing"
            page = layout_pages(panels_of(shots), LayoutOptions(panels_per_page=count))[0]
            assert page.frames[where].rect.w == page.content.w, (count, where)


def test_unweighted_panels_are_equal():
    for panels, options in COMBOS:
        if options.weighted:
            continue
        for page in layout_pages(panels, options):
            if options.direction == "vertical":
                heights = [f.rect.h for f in page.frames]
                assert max(heights) - min(heights) <= len(heights) - 1  # floor remainders only
                continue
            rows = rows_of(page)
            assert [len(r) for r in rows] == list(TEMPLATES[len(page.frames)][0])
            heights = [r[0].rect.h for r in rows]
            assert max(heights) - min(heights) <= len(rows) - 1
            for row in rows:
                widths = [f.rect.w for f in row]
                assert max(widths) - min(widths) <= len(row) - 1


def test_equal_shots_keep_the_default_template():
    for count in range(1, 9):
        for shot in ("medium", "close_up", "establishing"):
            assert choose_template([SHOT_WEIGHT[shot]] * count) == TEMPLATES[count][0]


def test_templates():
    doc = layout_module.__doc__
    assert set(TEMPLATES) == set(range(1, MAX_PANELS_PER_PAGE + 1))
    for count, templates in TEMPLATES.items():
        assert len(set(templates)) == len(templates)
        for rows in templates:
            assert sum(rows) == count and all(1 <= k <= 3 for k in rows)
        line = next(line for line in doc.splitlines() if line.strip().startswith(f"{count}  "))
        assert str(list(templates[0])) in line  # documented


def test_shot_tables():
    assert set(SHOT_WEIGHT) == set(SHOTS) == set(STRIP_ASPECT)
    assert max(SHOT_WEIGHT, key=SHOT_WEIGHT.get) == "establishing"
    assert SHOT_WEIGHT["establishing"] > SHOT_WEIGHT["wide"] > SHOT_WEIGHT["medium"] > SHOT_WEIGHT["close_up"]
    assert min(SHOT_WEIGHT.values()) == SHOT_WEIGHT["insert"] == SHOT_WEIGHT["extreme_close_up"]
    assert STRIP_ASPECT["establishing"] == 1.0 and STRIP_ASPECT["close_up"] == 0.75


@pytest.mark.parametrize(
    ("count", "per_page", "sizes"),
    [
        (1, 6, [1]),
        (6, 6, [6]),
        (7, 6, [4, 3]),
        (13, 6, [5, 4, 4]),
        (24, 8, [8, 8, 8]),
        (9, 8, [5, 4]),
        (5, 1, [1] * 5),
    ],
)
def test_page_sizes(count, per_page, sizes):
    assert page_sizes(count, per_page) == sizes


def test_page_breaks_are_balanced():
    for count in range(1, 60):
        for per_page in range(1, 9):
            sizes = page_sizes(count, per_page)
            assert sum(sizes) == count and len(sizes) == math.ceil(count / per_page)
            assert max(sizes) <= per_page and max(sizes) - min(sizes) <= 1
            assert sizes == sorted(sizes, reverse=True)


def test_default_spacing_on_a4():
    page = layout_pages(panels_of(["medium"] * 2), LayoutOptions(direction="ltr", panels_per_page=2))[0]
    assert (page.width, page.height, page.margin) == (2480, 3508, 124)  # 5% of 2480
    top, bottom = page.frames[0].rect, page.frames[1].rect
    assert (top.x, top.y, top.w) == (124, 124, 2480 - 248)
    assert bottom.y - top.bottom == 30  # 1.2% of 2480
    assert bottom.bottom == 3508 - 124


def test_webtoon_strip():
    shots = ["establishing", "close_up", "insert", "medium", "full"]
    opts = LayoutOptions(page="webtoon 800px", direction="vertical", panels_per_page=3)
    pages = layout_pages(panels_of(shots), opts)
    assert [len(p.frames) for p in pages] == [3, 2]
    assert pages[0].margin == 40 and pages[0].frames[0].rect.w == 720
    assert [f.rect.h for p in pages for f in p.frames] == [720, 540, 432, 612, 720]  # aspect x 720
    assert pages[0].frames[1].rect.y - pages[0].frames[0].rect.bottom == 80  # 10% of the width
    tallest = 720 + 540 + 432 + 2 * 80
    assert all((p.width, p.height) == (800, tallest + 80) for p in pages)
    assert pages[1].frames[-1].rect.bottom < pages[1].content.bottom  # blank space at the bottom
    assert pages[0].frames[-1].rect.bottom == pages[0].content.bottom


def test_short_strip_is_at_least_min_side():
    opts = LayoutOptions(page="custom", width=300, height=0, direction="vertical", panels_per_page=1)
    page = layout_pages(panels_of(["insert"]), opts)[0]
    assert page.height == MIN_SIDE


def test_vertical_on_paper_fills_the_column():
    opts = LayoutOptions(page="B5 300dpi", direction="vertical", panels_per_page=3)
    page = layout_pages(panels_of(["establishing", "close_up", "medium"]), opts)[0]
    assert (page.width, page.height) == PAGE_PRESETS["B5 300dpi"]
    assert page.frames[0].rect.h > page.frames[2].rect.h > page.frames[1].rect.h
    assert page.frames[-1].rect.bottom == page.content.bottom


def test_custom_size():
    opts = LayoutOptions(
        page="custom", width=1000, height=1500, direction="ltr", panels_per_page=4, margin=50, gutter=10
    )
    assert preset_size(opts) == (1000, 1500)
    pages = layout_pages(panels_of(["medium"] * 4), opts)
    assert (pages[0].width, pages[0].height) == (1000, 1500)
    assert pages[0].frames[0].rect == Rect(50, 50, 900, 460)  # [1, 2, 1]: (1400 - 20) / 3 = 460
    assert preset_size(LayoutOptions(page="custom", width=640, height=0, direction="vertical")) == (640, None)
    for name, size in PAGE_PRESETS.items():
        direction = "vertical" if size[1] is None else "rtl"
        assert preset_size(LayoutOptions(page=name, direction=direction)) == size


def test_bleed_shifts_everything():
    panels = panels_of(GOLDEN_SHOTS)
    for direction in DIRECTIONS:
        page = "webtoon 800px" if direction == "vertical" else "A4 300dpi"
        plain = layout_pages(panels, LayoutOptions(page=page, direction=direction))
        bled = layout_pages(panels, LayoutOptions(page=page, direction=direction, bleed=36))
        for a, b in zip(plain, bled, strict=True):
            assert (b.width, b.height) == (a.width + 72, a.height + 72)
            assert b.trim == Rect(36, 36, a.width, a.height)
            assert [Rect(f.rect.x + 36, f.rect.y + 36, f.rect.w, f.rect.h) for f in a.frames] == [
                f.rect for f in b.frames
            ]


def test_pydantic_panels():
    sp = Screenplay.model_validate(example_screenplay())
    pages = layout_pages(sp.panels, LayoutOptions(panels_per_page=2))
    assert [f.panel_id for p in pages for f in p.frames] == [p.id for p in sp.panels]


def test_options_default_is_shared_and_none_tolerated():
    panels = panels_of(["medium"] * 3)
    assert layout_pages(panels) == layout_pages(panels, LayoutOptions()) == layout_pages(panels, None)


def test_rect_helpers():
    r = Rect(10, 20, 100, 50)
    assert (r.right, r.bottom, r.center, r.area) == (110, 70, (60, 45), 5000)
    assert r.contains(Rect(10, 20, 100, 50)) and r.contains(Rect(50, 30, 10, 10))
    assert not r.contains(Rect(50, 30, 100, 10))
    assert r.intersects(Rect(100, 60, 50, 50))
    assert not r.intersects(Rect(110, 20, 10, 10))  # touching edges do not overlap
    assert r.inset(5) == Rect(15, 25, 90, 40)
    assert r.inset(-5) == Rect(5, 15, 110, 60)
    assert r.inset(40) == Rect(50, 60, 20, 0)
    assert r.mirrored(200) == Rect(90, 20, 100, 50)
    assert r.as_list() == [10, 20, 100, 50]


def test_engine_module_is_pure_geometry():
    tree = ast.parse(Path(layout_module.__file__).read_text(encoding="utf-8"))
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    modules |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in modules if m and m.split(".")[0] in {"PIL", "torch", "numpy"}}


# --- bad input ------------------------------------------------------------------------------------

MEDIUM8 = panels_of(["medium"] * 8)
BAD = [
    ("no panels", [], LayoutOptions(), ["at least one panel"]),
    ("ppp 0", MEDIUM8, LayoutOptions(panels_per_page=0), ["1 to 8", "got 0"]),
    ("ppp 9", MEDIUM8, LayoutOptions(panels_per_page=9), ["1 to 8", "got 9"]),
    (
        "unknown page",
        MEDIUM8,
        LayoutOptions(page="Letter"),
        ["'Letter'", "'A4 300dpi'", "'webtoon 800px'", "'custom'"],
    ),
    ("direction", MEDIUM8, LayoutOptions(direction="up"), ["rtl", "ltr", "vertical", "'up'"]),
    (
        "narrow",
        MEDIUM8,
        LayoutOptions(page="custom", width=100, height=1000),
        [f"{MIN_SIDE} to {MAX_SIDE}", "100"],
    ),
    ("huge", MEDIUM8, LayoutOptions(page="custom", width=1000, height=30000), [f"{MAX_SIDE}", "30000"]),
    ("pixels", MEDIUM8, LayoutOptions(page="custom", width=20000, height=20000), [f"{MAX_PIXELS:,}"]),
    (
        "bleed over",
        MEDIUM8,
        LayoutOptions(page="custom", width=19990, height=1000, bleed=10),
        [f"{MAX_SIDE}", "bleed"],
    ),
    ("bleed < 0", MEDIUM8, LayoutOptions(bleed=-1), ["bleed", ">= 0"]),
    ("margin < 0", MEDIUM8, LayoutOptions(margin=-5), ["margin", ">= 0"]),
    ("gutter < 0", MEDIUM8, LayoutOptions(gutter=-5), ["gutter", ">= 0"]),
    ("margin huge", MEDIUM8, LayoutOptions(margin=1300), ["margin", "at most 1224", "Lower the margin"]),
    ("gutter huge", MEDIUM8, LayoutOptions(gutter=2000), ["gutter 2000", f"{MIN_FRAME} px", "fewer panels"]),
    (
        "tight page",
        MEDIUM8,
        LayoutOptions(page="custom", width=256, height=256, panels_per_page=8, gutter=40),
        ["32 px minimum"],
    ),
    (
        "webtoon paged",
        MEDIUM8,
        LayoutOptions(page="webtoon 800px"),
        ["no fixed height", "'vertical'", "'rtl'"],
    ),
    (
        "custom h0 paged",
        MEDIUM8,
        LayoutOptions(page="custom", width=800, height=0, direction="ltr"),
        ["height 0", "'vertical'"],
    ),
    ("custom float", MEDIUM8, LayoutOptions(page="custom", width=800.5, height=900), ["whole pixels"]),
    (
        "strip too tall",
        panels_of(["establishing"] * 8),
        LayoutOptions(page="custom", width=9000, height=0, direction="vertical", panels_per_page=8),
        ["strip would be", f"{MAX_SIDE} px", "fewer panels per page"],
    ),
    (
        "unknown shot",
        [{"id": "p1", "shot": "closeup"}],
        LayoutOptions(),
        ["'closeup'", "close_up", "establishing"],
    ),
    ("no shot", [{"id": "p1"}], LayoutOptions(), ["'shot'"]),
    ("not a list", "p1", LayoutOptions(), ["list of panels"]),
]


@pytest.mark.parametrize(("panels", "options", "needles"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input(panels, options, needles):
    with pytest.raises(InputError) as info:
        layout_pages(panels, options)
    message = str(info.value)
    for needle in needles:
        assert needle in message, message


def test_text_order_of_each_reading_direction():
    # Balloons follow the page: left to right on an "ltr" page, right to left otherwise.
    orders = {d: layout_module.text_order(d) for d in DIRECTIONS}
    assert orders == {"rtl": "rtl", "ltr": "ltr", "vertical": "rtl"}
