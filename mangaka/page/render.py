"""Pages from panel images and the screenplay: images placed in their frames, then lettered.

``compose_pages`` takes the layout (``layout.layout_pages``), one image per panel (matched by panel
id when ids are given, else by order), scales each image to cover its frame around the centre,
draws the frame borders, and letters every dialogue line of the panel into a balloon
(``lettering``), each line in its lettered form (``lettered``: a quote cut by its attribution,
``We're closed,``, ends as a sentence, ``We're closed.``). What is missing or does not fit is
drawn as well as it can be and reported, never dropped in silence: a panel without an image gets
an empty frame with its id; an image without a panel is listed; a line that does not fit its
panel says how many characters are hidden.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from PIL import Image, ImageDraw

from ..errors import InputError
from ..fileio import write_atomic
from ..screenplay.models import Panel, Screenplay
from .calm import CalmMap, calm_map
from .cards import free_band, parse_part, storyboard_pages
from .fonts import load_font
from .layout import LayoutOptions, PageLayout, Rect, layout_pages, layout_to_dict, text_order
from .lettered import lettered
from .lettering import BalloonPlan, LetteringOptions, LineSpec, draw_balloons, plan_balloons, vertical_enabled
from .plan import balloons_fit

log = logging.getLogger(__name__)

PAPER = (255, 255, 255)
INK = (0, 0, 0)
EMPTY = (214, 214, 214)
EMPTY_TEXT = (110, 110, 110)

SaveFormat = Literal["png", "jpeg"]
# PNG at zlib level 1: lossless and about 6x faster to write than Pillow's default level 6 on an
# A4 page at 300 dpi for files about 1.3x larger (measured by ``python -m mangaka bench``).
PNG_LEVEL = 1


@dataclass
class ComposedPages:
    pages: list[Image.Image]
    layout: list[PageLayout]
    balloons: dict[str, list[BalloonPlan]] = field(default_factory=dict)  # panel id -> its balloons
    problems: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    # Storyboard pages: each card's header and text rows by frame id (white), where balloons keep off.
    card_masks: dict[str, Image.Image] = field(default_factory=dict)

    def layout_json(self) -> dict[str, Any]:
        return layout_to_dict(self.layout)

    def report(self) -> str:
        panels = {parse_part(f.panel_id)[0] for p in self.layout for f in p.frames}
        head = f"{len(self.pages)} pages, {len(panels)} panels"
        return "\n".join([head, *(f"- {p}" for p in self.problems)])


def group_by_chapter(
    sizes: Sequence[int], panel_counts: Sequence[int], panel_ids: Sequence[str] | None = None
) -> tuple[list[list[int]], list[list[str] | None]]:
    """Which of the given image batches (``sizes``: frames in each) belong to which chapter.

    Several chapters reach Compose Page in one of two shapes: one batch per chapter (a Storyboard
    per chapter), or one image per panel for all chapters in a row (SD Prompts' lists through a
    sampler, or a rebatch to 1): the flat list is cut by the chapters' panel counts, and so are
    SD Prompts' panel ids. Returns the batch indexes per chapter and the panel ids per chapter
    (None: images go to panels in order)."""
    chapters = len(panel_counts)
    if chapters == 1:
        return [list(range(len(sizes)))], [list(panel_ids) if panel_ids else None]
    if len(sizes) == chapters:
        return [[i] for i in range(chapters)], [None] * chapters
    total = sum(panel_counts)
    if len(sizes) == total and all(n == 1 for n in sizes):
        groups, ids, start = [], [], 0
        flat_ids = list(panel_ids) if panel_ids and len(panel_ids) == total else None
        for count in panel_counts:
            groups.append(list(range(start, start + count)))
            ids.append(flat_ids[start : start + count] if flat_ids else None)
            start += count
        return groups, ids
    raise InputError(
        f"{chapters} screenplays (one per chapter, {total} panels in all) but {len(sizes)} image "
        f"batches ({sum(sizes)} images): give one batch per chapter, or one image per panel for "
        "every chapter in order (as SD Prompts' lists give them)"
    )


def cover(image: Image.Image, width: int, height: int) -> Image.Image:
    """``image`` scaled to cover ``width`` × ``height`` around its centre, then cropped to it."""
    scale = max(width / image.width, height / image.height)
    w, h = max(width, round(image.width * scale)), max(height, round(image.height * scale))
    left, top = (w - width) // 2, (h - height) // 2
    resized = image.convert("RGB").resize((w, h), Image.Resampling.LANCZOS, reducing_gap=3.0)
    return resized.crop((left, top, left + width, top + height))


def speaker_positions(panel: Panel, direction: str) -> dict[str, float]:
    """Where each character shown is assumed to stand, 0 (left) to 1 (right): in the order the
    panel lists them, starting from the reading side (right for manga) so the first speaker's
    balloon, placed first, sits on the same side."""
    n = len(panel.characters)
    spots = {cid: (k + 0.5) / n for k, cid in enumerate(panel.characters)}
    if direction == "rtl":
        spots = {cid: 1.0 - x for cid, x in spots.items()}
    return spots


def _match_images(
    screenplay: Screenplay,
    images: Sequence[Image.Image],
    panel_ids: Sequence[str] | None,
    problems: list[str],
) -> dict[str, Image.Image]:
    ids = [p.id for p in screenplay.panels]
    if panel_ids:
        if len(panel_ids) != len(images):
            raise InputError(
                f"Compose Page: {len(images)} images but {len(panel_ids)} panel ids; connect the panel_ids "
                "of the same SD Prompts node that made the images, or leave panel_ids unconnected"
            )
        unknown = [pid for pid in panel_ids if pid not in ids]
        if unknown:
            raise InputError(
                f"Compose Page: panel ids {', '.join(unknown)} are not in the screenplay ({', '.join(ids)})"
            )
        matched = dict(zip(panel_ids, images, strict=True))
    else:
        matched = dict(zip(ids, images, strict=False))
        if len(images) > len(ids):
            problems.append(f"{len(images) - len(ids)} images beyond the {len(ids)} panels were not used")
    missing = [pid for pid in ids if pid not in matched]
    if missing:
        problems.append(f"no image for panels {', '.join(missing)}: drawn as empty frames")
    return matched


def _empty_frame(draw: ImageDraw.ImageDraw, rect: Rect, label: str, page_width: int) -> None:
    draw.rectangle((rect.x, rect.y, rect.right - 1, rect.bottom - 1), fill=EMPTY)
    size = max(12, min(rect.w, rect.h, page_width) // 10)
    font = load_font(size, "en")
    draw.text((rect.x + rect.w / 2, rect.y + rect.h / 2), label, font=font, fill=EMPTY_TEXT, anchor="mm")


def _lines(screenplay: Screenplay, panel: Panel, direction: str) -> list[LineSpec]:
    """The panel's lines to letter, each in its lettered form (``lettered``: a quote cut by its
    attribution ends as a sentence), placed by its speaker's position."""
    spots = speaker_positions(panel, direction)
    language = screenplay.language
    return [
        LineSpec(line.id, line.speaker, lettered(line.line, language), line.emotion, spots.get(line.speaker))
        for line in screenplay.lines_of(panel)
    ]


def compose_pages(
    screenplay: Screenplay,
    images: Sequence[Image.Image],
    *,
    layout: LayoutOptions | None = None,
    lettering: LetteringOptions | None = None,
    letter: bool = True,
    border: int | None = None,
    panel_ids: Sequence[str] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    cards: bool = False,
    avoid: Sequence[Image.Image | None] | None = None,
    calm: bool = True,
) -> ComposedPages:
    """Lay out, place and letter every panel; ``images`` may be fewer or more than the panels.
    ``cards``: no images; each panel's storyboard card is drawn for its frame (nothing cropped) and
    its balloons keep off the card's header and text rows. ``avoid``: a mask per image (matched to
    panels as the images are; white where no balloon may go: a face, the subject). Balloons go
    where the picture is calmest (``calm.py``; ``calm=False``: where they are packed, top first)."""
    layout = layout or LayoutOptions()
    started = time.perf_counter()
    pictures = _Pictures(cards, calm, letter)
    direction = text_order(layout.direction)
    if lettering is None:
        lettering = LetteringOptions(language=screenplay.language, direction=direction)
    if cards:
        result = _storyboard_pages(screenplay, layout, lettering, letter, direction, pictures)
        pages_layout = result.layout
    else:
        pages_layout = layout_pages(screenplay.panels, layout)
        result = ComposedPages([], pages_layout)
        pictures.matched = _match_images(screenplay, images, panel_ids, result.problems)
        if avoid:
            given = _match_images(screenplay, avoid, panel_ids, [])  # type: ignore[arg-type]
            pictures.masks = {pid: mask for pid, mask in given.items() if mask is not None}
    panels = {p.id: p for p in screenplay.panels}
    placing = lettering_time = 0.0
    for page in pages_layout:
        t0 = time.perf_counter()
        canvas = Image.new("RGB", (page.width, page.height), PAPER)
        stroke = border if border is not None else max(2, page.width // 400)
        calm_maps, areas = pictures.place(canvas, page, stroke)
        t1 = time.perf_counter()
        placing += t1 - t0
        for frame in page.frames if letter else ():
            if frame.panel_id not in panels:  # a card's continuation: its lines are on its first frame
                continue
            specs = _lines(screenplay, panels[frame.panel_id], direction)
            if not specs:
                continue
            plans, problems = plan_balloons(
                frame.rect,
                specs,
                lettering,
                page.width,
                panel_id=frame.panel_id,
                calm=calm_maps.get(frame.panel_id),
                area=areas.get(frame.panel_id),
            )
            result.balloons[frame.panel_id] = plans
            result.problems += problems
            draw_balloons(canvas, plans, lettering)
        lettering_time += time.perf_counter() - t1
        result.pages.append(canvas)
        if on_progress is not None:
            on_progress(len(result.pages), len(pages_layout))
    result.seconds = {"place": placing, "letter": lettering_time, "total": time.perf_counter() - started}
    for problem in result.problems:
        log.warning("Compose Page: %s", problem)
    return result


@dataclass
class _Pictures:
    """What goes in each frame: the pictures by panel id, their avoid masks, and how balloons are
    to be placed over them."""

    cards: bool
    calm: bool
    letter: bool
    matched: dict[str, Image.Image] = field(default_factory=dict)
    masks: dict[str, Image.Image] = field(default_factory=dict)

    def place(
        self, canvas: Image.Image, page: PageLayout, stroke: int
    ) -> tuple[dict[str, CalmMap], dict[str, Rect]]:
        """Draw ``page``'s frames on ``canvas``; each picture's calm map and, for a card, the band its
        header and text rows leave free."""
        draw = ImageDraw.Draw(canvas)
        calm_maps: dict[str, CalmMap] = {}
        areas: dict[str, Rect] = {}
        for frame in page.frames:
            rect = frame.rect
            image = self.matched.get(frame.panel_id)
            if image is None:
                _empty_frame(draw, rect, frame.panel_id, page.width)
            else:
                placed = cover(image, rect.w, rect.h)
                canvas.paste(placed, (rect.x, rect.y))
                mask = self.masks.get(frame.panel_id)
                if self.cards and mask is not None:
                    areas[frame.panel_id] = free_band(mask, rect)
                    mask = None
                if self.letter and self.calm:
                    shaped = None if mask is None else cover(mask, rect.w, rect.h)
                    calm_maps[frame.panel_id] = calm_map(placed, (rect.x, rect.y), shaped)
            if stroke:
                draw.rectangle((rect.x, rect.y, rect.right - 1, rect.bottom - 1), outline=INK, width=stroke)
        return calm_maps, areas


def _storyboard_pages(
    screenplay: Screenplay,
    layout: LayoutOptions,
    lettering: LetteringOptions,
    letter: bool,
    direction: str,
    pictures: _Pictures,
) -> ComposedPages:
    """The pages of a storyboard: the layout made with the cards (a card too long for its frame
    continues on a frame of its own), each card drawn for its frame into ``pictures``."""
    panels = {p.id: p for p in screenplay.panels}

    def band_fits(panel_id: str, band: Rect, page_width: int) -> bool:
        return balloons_fit(band, _lines(screenplay, panels[panel_id], direction), lettering, page_width)

    # Vertical balloons are tall: a card lettered vertically gets a taller camera frame for them.
    sketch = 0.45 if letter and vertical_enabled(lettering) else 0.3
    pages_layout, pictures.matched, problems = storyboard_pages(
        screenplay, layout, pictures.masks, sketch, band_fits if letter else None
    )
    return ComposedPages([], pages_layout, problems=problems, card_masks=dict(pictures.masks))


def preview_layout(pages_layout: Sequence[PageLayout]) -> list[Image.Image]:
    """Grey frames with their panel ids and reading order, to tune a layout before generating."""
    out = []
    for page in pages_layout:
        canvas = Image.new("RGB", (page.width, page.height), PAPER)
        draw = ImageDraw.Draw(canvas)
        stroke = max(2, page.width // 400)
        for order, frame in enumerate(page.frames, 1):
            rect = frame.rect
            _empty_frame(draw, rect, f"{order}. {frame.panel_id}", page.width)
            draw.rectangle((rect.x, rect.y, rect.right - 1, rect.bottom - 1), outline=INK, width=stroke)
        out.append(canvas)
    return out


def encode_page(
    image: Image.Image, fmt: SaveFormat = "png", *, png_level: int = PNG_LEVEL, quality: int = 92
) -> bytes:
    """The page as PNG (lossless, zlib ``png_level``) or JPEG bytes."""
    buffer = io.BytesIO()
    if fmt == "png":
        image.save(buffer, format="PNG", compress_level=png_level)
    elif fmt == "jpeg":
        image.convert("RGB").save(buffer, format="JPEG", quality=quality, subsampling=0)
    else:
        raise InputError(f"page format {fmt!r} is not one of: png, jpeg")
    return buffer.getvalue()


def save_page(image: Image.Image, path: str | Path, fmt: SaveFormat = "png") -> Path:
    """Write one page atomically (never a half-written file)."""
    path = Path(path)
    write_atomic(path, encode_page(image, fmt))
    return path
