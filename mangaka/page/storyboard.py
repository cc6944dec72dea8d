"""The Storyboard: a previz of a screenplay, one sketch card per panel, drawn without diffusion.

Each card shows the panel id and number, shot and angle, a placeholder camera frame (figure scale
follows the shot, the horizon follows the angle), the cast present, action, expression, background,
lighting, props, and the panel's lines with their emotions (each line as a balloon letters it:
``lettered.py``). Labels, shot and angle names, emotions and captions are in the screenplay's
language (``prompts/storyboard/labels.json``: en, zh, ja, ko, fr, es, ru, de).
Text that does not fit is never dropped silently: the body text shrinks down to a minimum size,
then over-long fields end with "…" and a warning names the panel and the fields cut.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw

from ..errors import InputError
from ..prompts import PROMPTS_DIR
from ..screenplay.models import NARRATOR, Panel, Screenplay
from ..screenplay.validate import screenplay_model
from .fonts import ellipsize, load_font, missing_glyphs, text_width, wrap
from .lettered import lettered

log = logging.getLogger(__name__)

# 3:4 portrait, multiples of 64 like the generated panels: at 768 px the body text gets about 60
# Latin (35 CJK) characters a line, and the height holds the camera frame plus ~25 lines of text.
DEFAULT_WIDTH = 768
DEFAULT_HEIGHT = 1024
MIN_SIDE = 256
MAX_SIDE = 4096

PAPER = (250, 248, 242)
INK = (30, 30, 30)
MUTED = (120, 120, 120)
SKETCH = (105, 105, 105)
SKETCH_LIGHT = (190, 190, 185)
SHADOW = (200, 200, 196)

LABELS_FILE = PROMPTS_DIR / "storyboard" / "labels.json"


@functools.lru_cache(maxsize=1)
def _all_labels() -> dict[str, dict[str, dict[str, str]]]:
    return json.loads(LABELS_FILE.read_text(encoding="utf-8"))


def labels(language: str) -> dict[str, dict[str, str]]:
    """The card's words in ``language`` (English for a language without a table)."""
    tables = _all_labels()
    return tables.get(language, tables["en"])


# Figure height as a multiple of the camera frame's height (above 1, the figure is cropped).
_FIGURE_SCALE = {
    "establishing": 0.14,
    "wide": 0.32,
    "full": 0.82,
    "medium": 1.7,
    "medium_close_up": 2.4,
    "close_up": 4.0,
    "extreme_close_up": 7.5,
    "over_the_shoulder": 1.7,
    "pov": 0.9,
    "insert": 0.0,
}
# Horizon height as a fraction of the frame (0 top, 1 bottom).
_HORIZON = {"eye_level": 0.5, "high": 0.22, "low": 0.78, "birds_eye": 0.06, "worms_eye": 0.94, "dutch": 0.5}
_MAX_FIGURES = 5


@dataclass(frozen=True)
class CardItem:
    """One text field of a card."""

    field: str  # name used in warnings: "action", "dialogue d2", …
    text: str
    label: str = ""  # shown in the label column, level with the item's first line


@dataclass
class CardLayout:
    """Where the text of one card goes, at the body font size that fits."""

    font_size: int
    blocks: list[tuple[str, list[str]]]  # (label, lines) in drawing order
    cut: list[str] = field(default_factory=list)  # fields ellipsized or left out, for the warning


def _as_screenplay(screenplay: dict[str, Any] | Screenplay) -> Screenplay:
    if isinstance(screenplay, Screenplay):
        return screenplay
    return screenplay_model(screenplay)  # an InputError naming each field, never pydantic's error


def _check_size(width: int, height: int) -> None:
    for name, value in (("width", width), ("height", height)):
        if not MIN_SIDE <= value <= MAX_SIDE:
            raise InputError(f"Storyboard card {name} must be {MIN_SIDE} to {MAX_SIDE} pixels, got {value}.")


def render_storyboard(
    screenplay: dict[str, Any] | Screenplay, width: int = DEFAULT_WIDTH, height: int = DEFAULT_HEIGHT
) -> list[Image.Image]:
    """One RGB sketch card per panel, in reading order, all ``width`` x ``height`` (so they batch).

    A dict is validated against the models (``InputError`` naming each bad field).
    """
    sp = _as_screenplay(screenplay)
    _check_size(width, height)
    return [render_card(sp, i, width, height) for i in range(len(sp.panels))]


def card_items(sp: Screenplay, panel: Panel) -> list[CardItem]:
    """The text fields of a panel's card, in drawing order, in the screenplay's language."""
    words = labels(sp.language)
    label, phrase, emotions = words["fields"], words["phrases"], words["emotions"]
    sep = phrase["list_separator"]
    cast = []
    for cid in panel.characters:
        character = sp.character(cid)
        cast.append(f"{character.name} ({cid})" if character else phrase["not_in_cast"].format(id=cid))
    items = [
        CardItem("cast", sep.join(cast) or "—", label["cast"]),
        CardItem("action", panel.action or "—", label["action"]),
        CardItem("expression", panel.expression or "—", label["expression"]),
        CardItem("background", panel.background or "—", label["background"]),
        CardItem("lighting", panel.lighting or "—", label["lighting"]),
        CardItem("props", sep.join(panel.props) or "—", label["props"]),
    ]
    by_id = {line.id: line for line in sp.dialogue}
    lines = []
    for line_id in panel.dialogue:
        line = by_id.get(line_id)
        if line is None:
            lines.append(CardItem(f"dialogue {line_id}", phrase["missing_line"].format(id=line_id)))
            continue
        emotion = emotions.get(line.emotion, line.emotion)
        words = lettered(line.line, sp.language)  # as the balloon letters it
        if line.speaker == NARRATOR:
            # A caption's usual emotion is "narration": the caption mark says it already.
            form = phrase["narration"] if line.emotion == "narration" else phrase["caption"]
            text = form.format(line=words, emotion=emotion)
        else:
            speaker = sp.character(line.speaker)
            name = speaker.name if speaker else line.speaker
            text = phrase["spoken"].format(name=name, line=words, emotion=emotion)
        lines.append(CardItem(f"dialogue {line_id}", text))
    if lines:
        lines[0] = CardItem(lines[0].field, lines[0].text, label["dialogue"])
    else:
        lines = [CardItem("dialogue", "—", label["dialogue"])]
    return items + lines


def _sizes(width: int) -> tuple[int, int, int, int]:
    """Margin, header size, label size and largest body size for a card whose shorter side is
    ``width`` (a wide frame's card sizes its type by its height, so its rows still fit)."""
    s = width / DEFAULT_WIDTH
    margin = max(8, round(24 * s))
    header = max(12, round(28 * s))
    label = max(8, round(13 * s))
    return margin, header, label, max(9, round(20 * s))


def _min_body(width: int) -> int:
    return max(9, round(12 * width / DEFAULT_WIDTH))


def layout_card(
    items: list[CardItem],
    language: str,
    text_width_px: int,
    text_height_px: int,
    max_size: int,
    min_size: int,
    spill: list[CardItem] | None = None,
) -> CardLayout:
    """Fit ``items`` into a text box: the largest body size from ``max_size`` down to ``min_size``
    at which everything fits; failing that, at ``min_size``, every field is cut to the same number of
    lines (as many as fit, at least one) ending in "…", and fields that still do not fit are left
    out behind a "… +N more" line. ``CardLayout.cut`` names what was cut.

    With ``spill`` (a card that continues on another frame), nothing is cut: the items that fit
    whole at ``min_size`` are kept in order, then as many lines of the next one as fit, and the rest
    of that item and every later one are added to ``spill``."""
    if not items:
        return CardLayout(max_size, [])
    for size in range(max_size, min_size - 1, -1):
        font = load_font(size, language)
        wrapped = [wrap(item.text, font, text_width_px) or [""] for item in items]
        if _height(wrapped, size) <= text_height_px:
            return CardLayout(size, [(item.label, lines) for item, lines in zip(items, wrapped, strict=True)])

    size = min_size
    font = load_font(size, language)
    wrapped = [wrap(item.text, font, text_width_px) or [""] for item in items]
    if spill is not None:
        split = _split_to_fit(items, wrapped, size, text_height_px)
        if split is not None:
            blocks, rest = split
            spill.extend(rest)
            return CardLayout(size, blocks)
    longest = max(len(lines) for lines in wrapped)
    for cap in range(longest - 1, 0, -1):
        capped = [lines[:cap] for lines in wrapped]
        if _height(capped, size) <= text_height_px:
            break
    else:
        cap = 1
    blocks: list[tuple[str, list[str]]] = []
    cut: list[str] = []
    for item, lines in zip(items, wrapped, strict=True):
        if len(lines) > cap:
            lines = [*lines[: cap - 1], ellipsize(lines[cap - 1] + "…", font, text_width_px)]
            cut.append(item.field)
        blocks.append((item.label, lines))
    # Even one line a field may be too much: keep what fits, then say how many fields are missing.
    if _height([b[1] for b in blocks], size) > text_height_px:
        kept = len(blocks) - 1
        while kept > 0 and _height([b[1] for b in blocks[:kept]] + [[""]], size) > text_height_px:
            kept -= 1
        left_out = items[kept:]
        cut.extend(item.field for item in left_out if item.field not in cut)
        blocks = [*blocks[:kept], ("", [f"… +{len(left_out)} more"])]
    return CardLayout(size, blocks, cut)


def _split_to_fit(
    items: list[CardItem], wrapped: list[list[str]], size: int, height: int
) -> tuple[list[tuple[str, list[str]]], list[CardItem]] | None:
    """The blocks that fit ``height`` at ``size`` (whole items in order, then the lines of the next
    one that fit) and the items left for the next frame (the rest of that one's text first); None
    when not even the first line fits."""
    blocks: list[tuple[str, list[str]]] = []
    for k, (item, lines) in enumerate(zip(items, wrapped, strict=True)):
        if _height([b[1] for b in blocks] + [lines], size) <= height:
            blocks.append((item.label, lines))
            continue
        n = len(lines) - 1
        while n > 0 and _height([b[1] for b in blocks] + [lines[:n]], size) > height:
            n -= 1
        if n == 0 and not blocks:
            return None
        rest = [item]
        if n > 0:
            blocks.append((item.label, lines[:n]))
            rest = [CardItem(item.field, _text_after(item.text, lines[:n], lines[n:]), item.label)]
        return blocks, rest + items[k + 1 :]
    return blocks, []


def _text_after(text: str, shown: list[str], hidden: list[str]) -> str:
    """What of ``text`` is left after the wrapped lines ``shown`` (``wrap`` drops only the spaces at
    a break, so each line is found after the one before it); ``hidden``, one a line, otherwise."""
    at = 0
    for line in shown:
        found = text.find(line, at)
        if found < 0:
            return "\n".join(hidden)
        at = found + len(line)
    return text[at:].lstrip()


def _line_height(size: int) -> int:
    return round(size * 1.32)


def _gap(size: int) -> int:
    return round(size * 0.45)


def _height(blocks: list[list[str]], size: int) -> int:
    n_lines = sum(len(lines) for lines in blocks)
    return n_lines * _line_height(size) + max(0, len(blocks) - 1) * _gap(size)


def render_card(
    sp: Screenplay,
    index: int,
    width: int = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
    cut: list[str] | None = None,
    rows: list[tuple[int, int]] | None = None,
    sketch: float = 0.3,
    items: list[CardItem] | None = None,
    part: int = 1,
    spill: list[CardItem] | None = None,
) -> Image.Image:
    """The sketch card of ``sp.panels[index]``; the fields cut to fit are added to ``cut``, and the
    header's and the text rows' vertical spans (top, bottom) to ``rows``. ``sketch``: the camera
    frame's share of the card's height.

    A card may take several frames: ``part`` 2 and on is a continuation (no camera frame, "continued"
    in its header) showing ``items`` (the text left by the part before); with ``spill``, text that
    does not fit is added to it for the next part instead of being cut."""
    _check_size(width, height)
    panel = sp.panels[index]
    language = sp.language
    # Type follows the card's shorter side (its height counted at the default card's shape); the
    # body may grow toward the mean of both sides on a long card, whose rows have room to spare.
    tall = round(height * DEFAULT_WIDTH / DEFAULT_HEIGHT)
    side = min(width, tall)
    margin, header_size, label_size, _ = _sizes(side)
    body_max = _sizes(min(round(math.sqrt(width * tall)), 2 * side))[3]
    body_min = min(_min_body(side), body_max)

    card = Image.new("RGB", (width, height), PAPER)
    draw = ImageDraw.Draw(card)
    inset = max(4, margin // 2)
    draw.rectangle(
        (inset, inset, width - 1 - inset, height - 1 - inset), outline=SKETCH, width=max(1, width // 384)
    )

    label_font = load_font(label_size, language)
    y = _header(draw, sp, index, width, margin, header_size, label_size, part)
    header_end = y

    if part == 1:
        y = _camera_frame(card, panel, sp, margin, y, round(height * sketch))
    text_top = y

    # The text fields: labels in a left column, values wrapped to the right of it.
    items = card_items(sp, panel) if items is None else items
    label_w = math.ceil(max((text_width(item.label, label_font) for item in items), default=0)) + label_size
    value_x = margin + label_w
    box_w = width - margin - value_x
    box_h = height - margin - y
    layout = layout_card(items, language, box_w, box_h, body_max, body_min, spill)
    font = load_font(layout.font_size, language)
    line_h = _line_height(layout.font_size)
    baseline_shift = round(font.getmetrics()[0] - label_font.getmetrics()[0])
    for label, lines in layout.blocks:
        if label:
            draw.text((margin, y + baseline_shift), label, font=label_font, fill=MUTED)
        for line in lines:
            draw.text((value_x, y), line, font=font, fill=INK)
            y += line_h
        y += _gap(layout.font_size)
    if rows is not None:
        rows += [(0, header_end), (text_top, min(height, y))]

    if layout.cut:
        if cut is not None:
            cut.extend(layout.cut)
        log.warning(
            "Storyboard panel %s: the text does not fit a %dx%d card even at %d px; cut with '…': %s",
            panel.id,
            width,
            height,
            layout.font_size,
            ", ".join(layout.cut),
        )
    if part == 1:  # a continuation shows the same text again
        _warn_missing_glyphs(sp, panel, items)
    return card


def _camera_frame(card: Image.Image, panel: Panel, sp: Screenplay, margin: int, y: int, height: int) -> int:
    """The card's placeholder camera frame, ``height`` tall at ``y``; the y below it."""
    width = card.width
    inner = width - 2 * margin
    frame_h = max(48, height)
    card.paste(_sketch(panel, sp, inner, frame_h, width), (margin, y))
    ImageDraw.Draw(card).rectangle(
        (margin, y, margin + inner - 1, y + frame_h - 1), outline=SKETCH, width=max(1, width // 256)
    )
    return y + frame_h + margin // 2 + margin // 4


def _header(
    draw: ImageDraw.ImageDraw,
    sp: Screenplay,
    index: int,
    width: int,
    margin: int,
    header_size: int,
    label_size: int,
    part: int = 1,
) -> int:
    """The card's header, "p3 · 3/8" and the title (on a continuation, "continued" in its place),
    then shot and angle; the y below it."""
    panel, language = sp.panels[index], sp.language
    inner = width - 2 * margin
    header_font = load_font(header_size, language)
    sub_font = load_font(max(10, round(header_size * 0.75)), language)
    label_font = load_font(label_size, language)
    number = f"{panel.id} · {index + 1}/{len(sp.panels)}"
    y = margin
    draw.text((margin, y), number, font=header_font, fill=INK)
    title_room = inner - text_width(number, header_font) - margin
    if title_room > label_size * 3:
        title = ellipsize(
            sp.title if part == 1 else labels(language)["phrases"]["continued"], label_font, title_room
        )
        draw.text(
            (width - margin, y + header_size - label_size), title, font=label_font, fill=MUTED, anchor="ra"
        )
    y += _line_height(header_size)
    words = labels(language)
    shot = f"{words['shots'][panel.shot]} · {words['angles'][panel.angle]}"
    draw.text((margin, y), ellipsize(shot, sub_font, inner), font=sub_font, fill=INK)
    return y + _line_height(sub_font.size) + margin // 2


def _warn_missing_glyphs(sp: Screenplay, panel: Panel, items: list[CardItem]) -> None:
    for item in items:
        missing = missing_glyphs(item.text, sp.language)
        if missing:
            log.warning(
                "Storyboard panel %s, %s: the font has no glyph for %s; they show as boxes.",
                panel.id,
                item.field,
                " ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in missing),
            )


def _sketch(panel: Panel, sp: Screenplay, w: int, h: int, card_width: int) -> Image.Image:
    """The placeholder camera frame: horizon by angle, stick figures scaled by shot."""
    img = Image.new("RGB", (w, h), PAPER)
    draw = ImageDraw.Draw(img)
    stroke = max(1, card_width // 300)

    # Horizon (tilted for a Dutch angle), and a ground line of small blocks for establishing shots.
    hy = _HORIZON[panel.angle] * h
    tilt = math.tan(math.radians(12)) * w / 2 if panel.angle == "dutch" else 0.0
    draw.line((0, hy + tilt, w, hy - tilt), fill=SKETCH_LIGHT, width=stroke)
    if panel.shot == "establishing":
        for i in range(7):
            bx = w * (0.06 + i * 0.13)
            bh = min(h * (0.10 + 0.07 * ((i * 5) % 3)), hy * 0.8)
            draw.rectangle((bx, hy - bh, bx + w * 0.09, hy), outline=SKETCH_LIGHT, width=stroke)

    if panel.shot == "insert":
        label = panel.props[0] if panel.props else labels(sp.language)["shots"]["insert"]
        font = load_font(max(10, h // 10), sp.language)
        box = (w * 0.3, h * 0.25, w * 0.7, h * 0.75)
        draw.rectangle(box, outline=SKETCH, width=stroke * 2)
        draw.text((w / 2, h / 2), ellipsize(label, font, w * 0.38), font=font, fill=SKETCH, anchor="mm")
    else:
        n = min(len(panel.characters), _MAX_FIGURES)
        fig_h = _FIGURE_SCALE[panel.shot] * h
        if panel.shot == "over_the_shoulder":
            _figure(draw, w * 0.15, h * 0.3, h * 2.6, stroke, SHADOW, fill=True)
        if panel.shot == "pov":
            _pov_marks(draw, w, h, stroke)
        for i in range(n):
            x = w * (i + 1) / (n + 1)
            if panel.shot == "over_the_shoulder":
                x = w * (0.45 + 0.4 * (i + 1) / (n + 1))
            top = h * 0.9 - fig_h if fig_h <= h else h * 0.1
            if panel.shot in ("establishing", "wide"):  # in the distance: feet just below the horizon
                top = min(max(hy + h * 0.06, fig_h + h * 0.06), h * 0.94) - fig_h
            _figure(draw, x, top, fig_h, stroke, SKETCH)
    return img


def _figure(
    draw: ImageDraw.ImageDraw,
    x: float,
    top: float,
    height: float,
    stroke: int,
    color: tuple[int, int, int],
    fill: bool = False,
) -> None:
    """A stick figure about seven heads tall, head top at ``top``; eyes once the head is large."""
    head = height / 7
    r = head / 2
    cy = top + r
    if fill:
        draw.ellipse((x - r, top, x + r, top + head), fill=color)
        draw.rounded_rectangle(
            (x - 1.6 * head, top + head * 1.1, x + 1.6 * head, top + height), r, fill=color
        )
        return
    draw.ellipse((x - r, top, x + r, top + head), outline=color, width=stroke)
    if head > 40:
        ey, ex, er = cy + r * 0.1, r * 0.38, max(2, r * 0.09)
        for side in (-1, 1):
            draw.ellipse((x + side * ex - er, ey - er, x + side * ex + er, ey + er), fill=color)
    neck, hip, feet = top + head, top + height * 0.52, top + height
    shoulder = top + head * 1.35
    draw.line((x, neck, x, hip), fill=color, width=stroke)
    draw.line((x - head * 0.9, shoulder, x + head * 0.9, shoulder), fill=color, width=stroke)
    for side in (-1, 1):
        draw.line((x + side * head * 0.9, shoulder, x + side * head * 1.1, hip), fill=color, width=stroke)
        draw.line((x, hip, x + side * head * 0.6, feet), fill=color, width=stroke)


def _pov_marks(draw: ImageDraw.ImageDraw, w: int, h: int, stroke: int) -> None:
    """Viewfinder corners and a centre cross: what the character sees."""
    c = min(w, h) * 0.12
    pad = min(w, h) * 0.06
    corners = ((pad, pad, 1, 1), (w - pad, pad, -1, 1), (pad, h - pad, 1, -1), (w - pad, h - pad, -1, -1))
    for cx, cy, dx, dy in corners:
        draw.line((cx, cy, cx + dx * c, cy), fill=SKETCH_LIGHT, width=stroke * 2)
        draw.line((cx, cy, cx, cy + dy * c), fill=SKETCH_LIGHT, width=stroke * 2)
    m = c * 0.25
    draw.line((w / 2 - m, h / 2, w / 2 + m, h / 2), fill=SKETCH_LIGHT, width=stroke)
    draw.line((w / 2, h / 2 - m, w / 2, h / 2 + m), fill=SKETCH_LIGHT, width=stroke)
