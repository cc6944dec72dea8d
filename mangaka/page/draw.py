"""Drawing balloon plans: ovals, shouts, whispers, thought clouds and captions with their tails,
horizontal text, and vertical CJK text (raqm, or per character with vertical forms, rotated long
vowel marks and nudged small kana).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from PIL import Image, ImageDraw

from ..errors import InputError
from .balloon import (
    BalloonPlan,
    LetteringOptions,
    bump_size,
    check_options,
    column_pitch,
    line_height,
    spike_depth,
    tip_radius,
    use_raqm,
)
from .fonts import load_font, load_font_raqm, missing_glyphs

BASELINE = 0.88  # the ideographic em box spans 0.88 em above the baseline, 0.12 below
INK = (0, 0, 0)
PAPER = (255, 255, 255)

# Vertical presentation forms (U+FE10–FE19, U+FE30–FE4F) for the per-character vertical layout.
VERTICAL_FORMS: dict[str, str] = dict(
    zip(
        "，、。：；！？〖〗…‥—–（）()｛｝〔〕【】《》〈〉「」『』［］",
        "︐︑︒︓︔︕︖︗︘︙︰︱︲︵︶︵︶︷︸︹︺︻︼︽︾︿﹀﹁﹂﹃﹄﹇﹈",
        strict=True,
    )
)
# Drawn turned 90° clockwise in vertical text.
ROTATED = frozenset("ー〜～―－~")
# Small kana: moved up and to the right in vertical text.
SMALL_KANA = frozenset("ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ")
SMALL_KANA_SHIFT = 0.1  # em


def _colors(mode: str) -> tuple[Any, Any]:
    if mode == "RGB":
        return INK, PAPER
    if mode == "RGBA":
        return (*INK, 255), (*PAPER, 255)
    if mode == "L":
        return 0, 255
    if mode == "LA":
        return (0, 255), (255, 255)
    raise InputError(f"Lettering draws on RGB, RGBA, L or LA images, got mode {mode!r}.")


def draw_balloons(image: Image.Image, plans: Sequence[BalloonPlan], options: LetteringOptions) -> None:
    """Draw ``plans`` onto ``image`` in place: balloons (white, black outline), tails, text."""
    check_options(options)
    ink, paper = _colors(image.mode)
    draw = ImageDraw.Draw(image)
    raqm = use_raqm(options)
    for plan in plans:
        if plan.box.empty:
            continue
        _draw_shape(draw, plan, ink, paper)
        if plan.vertical:
            if raqm:
                _draw_vertical_raqm(draw, plan, ink)
            else:
                _draw_vertical_basic(draw, plan, ink)
        else:
            _draw_horizontal(draw, plan, ink)


def _ellipse_geometry(plan: BalloonPlan) -> tuple[float, float, float, float]:
    """(cx, cy, a, b): the ellipse whose edge the tail starts from."""
    box = plan.box
    cx, cy = box.center
    inset = {
        "shout": spike_depth(plan.font_size) + plan.line_width,
        "thought": bump_size(plan.font_size),
    }.get(plan.kind, 0)
    return cx - 0.5, cy - 0.5, max(1.0, box.w / 2 - inset), max(1.0, box.h / 2 - inset)


def _on_ellipse(
    cx: float, cy: float, a: float, b: float, theta: float, k: float = 1.0
) -> tuple[float, float]:
    return cx + k * a * math.cos(theta), cy + k * b * math.sin(theta)


def _tail_base(
    plan: BalloonPlan, tip: tuple[float, float]
) -> tuple[tuple[float, float], tuple[float, float], tuple[float, float], tuple[float, float]]:
    """(p1, p2, q1, q2): where the tail's sides meet the balloon's edge, and two points further in
    (so that the tail's fill covers the outline between p1 and p2)."""
    cx, cy, a, b = _ellipse_geometry(plan)
    theta = math.atan2((tip[1] - cy) / b, (tip[0] - cx) / a)
    half = min(0.5, 0.45 * plan.font_size / max(a, 1.0))
    lw = plan.line_width
    edge = 0.97 if plan.kind == "shout" else 1.0
    inner = 1.0 - (2.0 * lw + 2.0) / min(a, b) if min(a, b) > 4 * lw else 0.5
    p1, p2 = (_toward(_on_ellipse(cx, cy, a, b, theta + d, edge), (cx, cy), lw / 2) for d in (-half, half))
    q1, q2 = (_on_ellipse(cx, cy, a, b, theta + d, inner) for d in (-half, half))
    return p1, p2, q1, q2


def _draw_shape(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    box, lw, size = plan.box, plan.line_width, plan.font_size
    bbox = (box.x, box.y, box.right - 1, box.bottom - 1)
    if plan.kind == "caption":
        draw.rectangle(bbox, fill=paper, outline=ink, width=lw)
        return
    if plan.kind == "thought":
        _draw_cloud(draw, plan, ink, paper)
        return
    if plan.kind == "shout":
        _draw_star(draw, plan, ink, paper)
    elif plan.kind == "whisper":
        draw.ellipse(bbox, fill=paper)
        _draw_dashed_ellipse(draw, plan, ink)
    else:
        draw.ellipse(bbox, fill=paper, outline=ink, width=lw)
    if plan.tail is None:
        return
    tip = (float(plan.tail[0]), float(plan.tail[1]))
    p1, p2, q1, q2 = _tail_base(plan, tip)
    draw.polygon([q1, p1, tip, p2, q2], fill=paper)
    if plan.kind == "whisper":
        dash = max(2.0, 0.4 * size)
        _dashed_line(draw, p1, tip, dash, ink, lw)
        _dashed_line(draw, p2, tip, dash, ink, lw)
    else:
        draw.line([p1, tip, p2], fill=ink, width=lw, joint="curve")


def _toward(p: tuple[float, float], c: tuple[float, float], d: float) -> tuple[float, float]:
    dx, dy = c[0] - p[0], c[1] - p[1]
    n = math.hypot(dx, dy)
    if n < 1e-6:
        return p
    return p[0] + dx / n * d, p[1] + dy / n * d


def _dashed_line(
    draw: ImageDraw.ImageDraw, p: tuple[float, float], q: tuple[float, float], dash: float, ink: Any, lw: int
) -> None:
    length = math.hypot(q[0] - p[0], q[1] - p[1])
    if length < 1:
        return
    step = dash * 1.8
    t = 0.0
    while t < length:
        t2 = min(length, t + dash)
        a = (p[0] + (q[0] - p[0]) * t / length, p[1] + (q[1] - p[1]) * t / length)
        b = (p[0] + (q[0] - p[0]) * t2 / length, p[1] + (q[1] - p[1]) * t2 / length)
        draw.line([a, b], fill=ink, width=lw)
        t += step


def _ellipse_perimeter(a: float, b: float) -> float:
    h = ((a - b) / (a + b)) ** 2 if a + b > 0 else 0.0
    return math.pi * (a + b) * (1 + 3 * h / (10 + math.sqrt(4 - 3 * h)))


def _draw_dashed_ellipse(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    box, lw = plan.box, plan.line_width
    bbox = (box.x, box.y, box.right - 1, box.bottom - 1)
    perimeter = _ellipse_perimeter(box.w / 2, box.h / 2)
    count = max(8, round(perimeter / (0.9 * plan.font_size)))
    step = 360.0 / count
    for k in range(count):
        start = k * step
        draw.arc(bbox, start, start + step * 0.55, fill=ink, width=lw)


def _draw_star(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    box, lw = plan.box, plan.line_width
    cx, cy = box.center
    cx, cy = cx - 0.5, cy - 0.5
    outer_a, outer_b = box.w / 2 - lw, box.h / 2 - lw
    spike = spike_depth(plan.font_size)
    inner_a, inner_b = max(1.0, outer_a - spike), max(1.0, outer_b - spike)
    count = max(10, round(_ellipse_perimeter(inner_a, inner_b) / (1.1 * plan.font_size)))
    points = []
    for k in range(2 * count):
        theta = math.pi * k / count - math.pi / 2
        if k % 2 == 0:
            depth = 1.0 if k % 4 == 0 else 0.7  # alternate long and short spikes
            a, b = inner_a + depth * (outer_a - inner_a), inner_b + depth * (outer_b - inner_b)
        else:
            a, b = inner_a, inner_b
        points.append(_on_ellipse(cx, cy, a, b, theta))
    draw.polygon(points, fill=paper, outline=ink, width=lw)


def _arc_points(cx: float, cy: float, a: float, b: float, count: int) -> list[tuple[float, float]]:
    """``count`` points evenly spaced by arc length around an ellipse, starting at the top."""
    steps = 240
    samples = [_on_ellipse(cx, cy, a, b, 2 * math.pi * i / steps - math.pi / 2) for i in range(steps + 1)]
    lengths = [0.0]
    for p, q in itertools.pairwise(samples):
        lengths.append(lengths[-1] + math.hypot(q[0] - p[0], q[1] - p[1]))
    total = lengths[-1]
    points = []
    j = 0
    for k in range(count):
        want = total * k / count
        while j < steps and lengths[j + 1] < want:
            j += 1
        points.append(samples[j])
    return points


def _disc(draw: ImageDraw.ImageDraw, c: tuple[float, float], r: float, fill: Any) -> None:
    draw.ellipse((c[0] - r, c[1] - r, c[0] + r, c[1] + r), fill=fill)


def _draw_cloud(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any, paper: Any) -> None:
    lw, size = plan.line_width, plan.font_size
    cx, cy, a, b = _ellipse_geometry(plan)
    r = bump_size(size) - 0.5
    count = max(8, math.ceil(_ellipse_perimeter(a, b) / (1.3 * r)))
    centres = _arc_points(cx, cy, a, b, count)
    for c in centres:
        _disc(draw, c, r, ink)
    for c in centres:
        _disc(draw, c, r - lw, paper)
    draw.ellipse((cx - a, cy - b, cx + a, cy + b), fill=paper)
    if plan.tail is None:
        return
    tip = (float(plan.tail[0]), float(plan.tail[1]))
    theta = math.atan2((tip[1] - cy) / b, (tip[0] - cx) / a)
    start = _on_ellipse(cx, cy, a, b, theta)
    start = _toward(start, tip, r)
    small = tip_radius(size)
    for t, radius in ((0.2, max(small + 1.0, 0.55 * r)), (0.6, max(small + 0.5, 0.38 * r)), (1.0, small)):
        c = (start[0] + (tip[0] - start[0]) * t, start[1] + (tip[1] - start[1]) * t)
        _disc(draw, c, radius, ink)
        _disc(draw, c, max(0.5, radius - lw), paper)


def _draw_horizontal(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    size = plan.font_size
    font = load_font(size, plan.language)
    lh = line_height(size)
    tb = plan.text_box
    x = tb.x + tb.w / 2
    top = tb.y + (lh - size) / 2 + BASELINE * size
    for i, line in enumerate(plan.lines):
        if line:
            draw.text((x, top + i * lh), line, font=font, fill=ink, anchor="ms")


def _column_x(plan: BalloonPlan, i: int) -> float:
    """The centre x of column ``i`` (0 is the rightmost)."""
    return plan.text_box.right - plan.font_size / 2 - i * column_pitch(plan.font_size)


def _draw_vertical_raqm(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    font = load_font_raqm(plan.font_size, plan.language)
    for i, column in enumerate(plan.lines):
        if column.strip():
            draw.text(
                (_column_x(plan, i), plan.text_box.y),
                column,
                font=font,
                fill=ink,
                direction="ttb",
                anchor="mt",
            )


def _draw_vertical_basic(draw: ImageDraw.ImageDraw, plan: BalloonPlan, ink: Any) -> None:
    size = plan.font_size
    font = load_font(size, plan.language)
    shift = SMALL_KANA_SHIFT * size
    for i, column in enumerate(plan.lines):
        x = _column_x(plan, i)
        for j, ch in enumerate(column):
            if ch.isspace():
                continue
            top = plan.text_box.y + j * size
            if ch in ROTATED:
                draw.bitmap((round(x - size / 2), top), _rotated_glyph(size, plan.language, ch), fill=ink)
                continue
            glyph = _vertical_form(ch, plan.language)
            dx, dy = (shift, -shift) if ch in SMALL_KANA else (0.0, 0.0)
            draw.text((x + dx, top + BASELINE * size + dy), glyph, font=font, fill=ink, anchor="ms")


@lru_cache(maxsize=512)
def _vertical_form(ch: str, language: str) -> str:
    """The vertical presentation form of ``ch`` where there is one and the font has it."""
    form = VERTICAL_FORMS.get(ch)
    if form is None or missing_glyphs(form, language):
        return ch
    return form


@lru_cache(maxsize=512)
def _rotated_glyph(size: int, language: str, ch: str) -> Image.Image:
    """A mask of ``ch`` in a one-em cell, turned 90° clockwise."""
    cell = Image.new("L", (size, size), 0)
    ImageDraw.Draw(cell).text(
        (size / 2, BASELINE * size), ch, font=load_font(size, language), fill=255, anchor="ms"
    )
    return cell.rotate(-90)
