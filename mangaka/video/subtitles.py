"""The timeline's lines as subtitles: SRT and ASS files beside the video, and captions burned into
its frames.

What each form keeps of a line: its lettered text (``Cue.text``), every line of it that is not
blank (a subtitle has no blank line inside it: an SRT reader takes one as the entry's end).

* SRT (:func:`srt`): one entry per cue, the text alone (no speaker name).
* ASS (:func:`ass`): the frame size as its canvas (``PlayResX``/``PlayResY``), one style per
  speaker (the narrator's italic, each character's own colour from :data:`PALETTE`, in order of
  first appearance), sized and placed as the burned captions are. A line's text cannot make an
  override tag: ``{``, ``}`` and ``\\`` become their fullwidth forms (``｛``, ``｝``, ``＼``), which
  no ASS renderer reads as markup; its line breaks become ``\\N``.
* Burned (:class:`Burner`): white text with a dark outline, at most two lines at a time inside
  :func:`safe_area`; a longer text is shown as pages one after the other within the cue's time.
  The burner makes each caption when asked and keeps none, so memory does not grow with the video.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..errors import InputError
from ..fileio import write_atomic
from ..page.fonts import (
    FACE_HK,
    FACE_JP,
    FACE_KR,
    FACE_SC,
    FACE_TC,
    face_index,
    load_font,
    missing_glyphs,
    text_width,
    wrap,
)
from ..screenplay.models import NARRATOR
from .timeline import Cue, Timeline

log = logging.getLogger(__name__)

FONT_SHARE = 0.042  # a burned caption's font size, a share of the frame's shorter side
MIN_FONT = 24  # pixels, however small the frame
MAX_LINES = 2  # lines shown at once; a longer text is shown in pages
LINE_PITCH = 1.25  # baseline to baseline, in font sizes
STROKE_SHARE = 0.055  # the outline's width, in font sizes (at least 2 px)
TEXT_FILL = (255, 255, 255, 255)
OUTLINE_FILL = (16, 16, 16, 255)
BAND_FILL = (0, 0, 0, 110)  # the band behind a caption: the picture shows through, darkened
# (sides, top, bottom) margins of the safe area, shares of the frame's width and height. A vertical
# frame keeps clear of the bottom fifth, where short-video apps draw their captions and buttons.
SAFE_VERTICAL = (0.08, 0.10, 0.20)
SAFE_OTHER = (0.08, 0.07, 0.07)
VERTICAL_RATIO = 1.2  # height over width above which a frame counts as vertical

# Light colours that read on a dark outline, one per speaker in order of first appearance (cycled
# past the eighth); "RRGGBB". The narrator and the Default style are white.
PALETTE = ("FFF59D", "81D4FA", "A5D6A7", "F48FB1", "FFCC80", "CE93D8", "80DEEA", "E6EE9C")
WHITE = "FFFFFF"
# ASS sizes a font by its cell (ascender + descender), which for Noto Sans CJK is 1.448 em.
ASS_CELL = 1.448
ASS_FAMILIES = {
    FACE_JP: "Noto Sans CJK JP",
    FACE_KR: "Noto Sans CJK KR",
    FACE_SC: "Noto Sans CJK SC",
    FACE_TC: "Noto Sans CJK TC",
    FACE_HK: "Noto Sans CJK HK",
}
MAX_FRAME = 16384  # pixels a side

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ASS_MARKUP = str.maketrans({"{": "\uff5b", "}": "\uff5d", "\\": "\uff3c"})
_ASS_FIELD = str.maketrans({",": " ", "{": "\uff5b", "}": "\uff5d", "\\": "\uff3c"})


def _check_frame(frame_size: tuple[int, int]) -> tuple[int, int]:
    try:
        width, height = (int(v) for v in frame_size)
    except (TypeError, ValueError):
        raise InputError(f"frame_size must be (width, height) in pixels; got {frame_size!r}") from None
    if not (16 <= width <= MAX_FRAME and 16 <= height <= MAX_FRAME):
        raise InputError(
            f"frame_size {width}x{height} is out of range; "
            f"give a width and height of 16 to {MAX_FRAME} pixels"
        )
    return width, height


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` a subtitle shows: split at any line break, control characters as
    spaces, each stripped, blank ones left out."""
    lines = (_CONTROL.sub(" ", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


# --- SRT ---------------------------------------------------------------------------------------


def _srt_time(seconds: float) -> str:
    ms = max(0, round(seconds * 1000))
    hours, ms = divmod(ms, 3_600_000)
    minutes, ms = divmod(ms, 60_000)
    secs, ms = divmod(ms, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d},{ms:03d}"


def srt(timeline: Timeline) -> str:
    """The timeline's lines as SubRip: one entry per cue in order, numbered from 1, its text alone
    (a blank text shows as one no-break space, so the entry keeps its place)."""
    entries = []
    for number, cue in enumerate(timeline.cues(), start=1):
        body = "\n".join(text_lines(cue.text)) or "\u00a0"
        entries.append(f"{number}\n{_srt_time(cue.start)} --> {_srt_time(cue.end)}\n{body}\n")
    return "\n".join(entries)


# --- ASS ---------------------------------------------------------------------------------------


def _ass_time(centiseconds: int) -> str:
    hours, cs = divmod(max(0, centiseconds), 360_000)
    minutes, cs = divmod(cs, 6000)
    secs, cs = divmod(cs, 100)
    return f"{hours:d}:{minutes:02d}:{secs:02d}.{cs:02d}"


def ass_text(text: str) -> str:
    """``text`` as an ASS event's text: its lines joined by ``\\N``; braces and backslashes as
    their fullwidth forms, so nothing in it is read as an override tag or an escape."""
    return r"\N".join(line.translate(_ASS_MARKUP) for line in text_lines(text))


def _ass_field(value: str) -> str:
    """A value for a comma-separated ASS field (a style or actor name): one line, no commas, no
    markup, not starting with ``*`` (which readers strip from a style name)."""
    return " ".join(_CONTROL.sub(" ", value).translate(_ASS_FIELD).split()).lstrip("*").strip()


def _ass_colour(rgb: str, alpha: int = 0) -> str:
    return f"&H{alpha:02X}{rgb[4:6]}{rgb[2:4]}{rgb[0:2]}".upper()


def speaker_styles(timeline: Timeline) -> dict[str, str]:
    """Each speaker's ASS style name, in order of first appearance: the display name (the id for
    the narrator or a blank name), made unique (case aside, ``Default`` taken) by adding the id."""
    styles: dict[str, str] = {}
    taken = {"default"}
    for cue in timeline.cues():
        if cue.speaker in styles:
            continue
        name = _ass_field(cue.name) or _ass_field(cue.speaker) or "speaker"
        if name.casefold() in taken:
            name = f"{name} ({_ass_field(cue.speaker)})"
        base, n = name, 2
        while name.casefold() in taken:
            name, n = f"{base} {n}", n + 1
        taken.add(name.casefold())
        styles[cue.speaker] = name
    return styles


def _style_line(name: str, family: str, size: int, colour: str, italic: bool, layout: tuple[int, ...]) -> str:
    outline, margin_l, margin_r, margin_v = layout
    fields = [
        name, family, str(size), _ass_colour(colour), _ass_colour("FF0000"), _ass_colour("101010"),
        _ass_colour("000000", 0x80), "0", "-1" if italic else "0", "0", "0", "100", "100", "0", "0",
        "1", str(outline), "0", "2", str(margin_l), str(margin_r), str(margin_v), "1",
    ]  # fmt: skip
    return "Style: " + ",".join(fields)


def ass(timeline: Timeline, frame_size: tuple[int, int]) -> str:
    """The timeline's lines as Advanced SubStation Alpha for a ``frame_size`` video: the frame as
    the canvas, a Default style and one per speaker (see :func:`speaker_styles`), sized and placed
    as :class:`Burner` burns them, one ``Dialogue`` per cue with the speaker's name as its actor."""
    width, height = _check_frame(frame_size)
    family = ASS_FAMILIES[face_index(timeline.language)]
    size = round(caption_font_size((width, height)) * ASS_CELL)
    left, _, right, bottom = safe_area((width, height))
    layout = (_stroke(caption_font_size((width, height))), left, width - right, height - bottom)
    styles = speaker_styles(timeline)
    style_lines = [_style_line("Default", family, size, WHITE, False, layout)]
    colours = iter(PALETTE * (len(styles) // len(PALETTE) + 1))
    for speaker, name in styles.items():
        narrator = speaker == NARRATOR
        colour = WHITE if narrator else next(colours)
        style_lines.append(_style_line(name, family, size, colour, narrator, layout))
    events = []
    for cue in timeline.cues():
        start = round(cue.start * 100)
        end = max(start + 1, round(cue.end * 100))
        actor = _ass_field(cue.name)
        events.append(
            f"Dialogue: 0,{_ass_time(start)},{_ass_time(end)},{styles[cue.speaker]},{actor},0,0,0,,"
            f"{ass_text(cue.text)}"
        )
    title = _ass_field(timeline.title) or "Mangaka"
    head = [
        "[Script Info]",
        "; Made by Mangaka",
        f"Title: {title}",
        "ScriptType: v4.00+",
        "WrapStyle: 0",
        "ScaledBorderAndShadow: yes",
        f"PlayResX: {width}",
        f"PlayResY: {height}",
        "YCbCr Matrix: TV.709",
        "",
        "[V4+ Styles]",
        "Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, "
        "Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, "
        "Shadow, Alignment, MarginL, MarginR, MarginV, Encoding",
        *style_lines,
        "",
        "[Events]",
        "Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text",
    ]
    return "\n".join([*head, *events]) + "\n"


def write_subtitles(timeline: Timeline, frame_size: tuple[int, int], stem: Path) -> list[Path]:
    """Write ``<stem>.srt`` and ``<stem>.ass`` (UTF-8; the ASS file with a byte-order mark, as
    Aegisub writes it, so every renderer reads it as UTF-8), each atomically; their paths."""
    stem = Path(stem)
    srt_path = write_atomic(stem.parent / f"{stem.name}.srt", srt(timeline))
    ass_path = write_atomic(stem.parent / f"{stem.name}.ass", "\ufeff" + ass(timeline, frame_size))
    return [srt_path, ass_path]


# --- burned captions ---------------------------------------------------------------------------


def safe_area(frame_size: tuple[int, int]) -> tuple[int, int, int, int]:
    """(left, top, right, bottom): the box subtitles stay in. A vertical frame (9:16) keeps clear
    of its bottom 20%, where short-video apps draw their own buttons and captions, and 8% of its
    width on each side; 16:9 and square frames 7% at the bottom and 8% at the sides."""
    width, height = _check_frame(frame_size)
    sides, top, bottom = SAFE_VERTICAL if height > width * VERTICAL_RATIO else SAFE_OTHER
    return (
        round(width * sides),
        round(height * top),
        width - round(width * sides),
        height - round(height * bottom),
    )


def caption_font_size(frame_size: tuple[int, int]) -> int:
    """A burned caption's font size in pixels: 4.2% of the frame's shorter side, at least 24."""
    width, height = _check_frame(frame_size)
    return max(MIN_FONT, round(FONT_SHARE * min(width, height)))


def _stroke(size: int) -> int:
    return max(2, round(size * STROKE_SHARE))


@dataclass(frozen=True)
class Caption:
    """One burned caption: ``image`` (RGBA, tight around the text and its outline) drawn with its
    top-left at (``x``, ``y``) in the frame from ``start`` to ``end`` seconds; ``text`` its lines
    as drawn, joined by ``\\n``."""

    start: float
    end: float
    image: Image.Image
    x: int
    y: int
    text: str


def _page_times(start: float, end: float, weights: list[int]) -> list[tuple[float, float]]:
    """``start``–``end`` cut back to back into spans in proportion to ``weights``."""
    total = sum(weights)
    times = []
    done = 0
    at = start
    for i, weight in enumerate(weights):
        done += weight
        until = end if i == len(weights) - 1 else round(start + (end - start) * done / total, 3)
        times.append((at, until))
        at = until
    return times


class Burner:
    """Captions to burn into a ``frame_size`` video of a ``language`` timeline. Keeps only its
    font: each caption's image is made when :meth:`captions` is called."""

    def __init__(self, language: str, frame_size: tuple[int, int]) -> None:
        self.language = language
        self.frame_size = _check_frame(frame_size)
        self.box = safe_area(self.frame_size)
        self.size = caption_font_size(self.frame_size)
        self.stroke = _stroke(self.size)
        self.font: ImageFont.FreeTypeFont = load_font(self.size, language)
        left, _, right, _ = self.box
        self.margin = max(4, self.size // 3)  # the translucent band's, around the text's ink
        # The outline, a glyph's overhang and the band stay inside the box too.
        self.max_width = right - left - 2 * (self.stroke + self.margin) - max(2, self.size // 8)
        self._warned: set[str] = set()

    def pages(self, text: str) -> list[list[str]]:
        """``text`` wrapped to the safe area's width, in pages of at most two lines."""
        lines = [line.strip() for line in wrap("\n".join(text_lines(text)), self.font, self.max_width)]
        lines = [line for line in lines if line]
        return [lines[i : i + MAX_LINES] for i in range(0, len(lines), MAX_LINES)]

    def captions(self, cue: Cue) -> list[Caption]:
        """The captions of ``cue``: one per page, back to back from ``cue.start`` to ``cue.end``,
        each page's time in proportion to its characters (spaces aside). None for a blank text."""
        self._warn_missing(cue.text)
        pages = self.pages(cue.text)
        if not pages:
            return []
        weights = [max(1, sum(len("".join(line.split())) for line in page)) for page in pages]
        captions = []
        for page, (start, end) in zip(pages, _page_times(cue.start, cue.end, weights), strict=True):
            drawn = self._draw(page)
            if drawn is not None:
                image, x, y = drawn
                captions.append(Caption(start, end, image, x, y, "\n".join(page)))
        return captions

    def _draw(self, lines: list[str]) -> tuple[Image.Image, int, int] | None:
        """The page's image, cropped to its ink, and its top-left in the frame: centred in the
        safe area, its bottom on the area's bottom."""
        ascent, descent = self.font.getmetrics()
        pitch = round(self.size * LINE_PITCH)
        pad = self.stroke + self.size // 2
        widths = [text_width(line, self.font) for line in lines]
        canvas_w = round(max(widths)) + 2 * pad
        canvas_h = pitch * (len(lines) - 1) + ascent + descent + 2 * pad
        canvas = Image.new("RGBA", (canvas_w, canvas_h), (0, 0, 0, 0))
        draw = ImageDraw.Draw(canvas)
        for i, (line, width) in enumerate(zip(lines, widths, strict=True)):
            draw.text(
                ((canvas_w - width) / 2, pad + i * pitch),
                line,
                font=self.font,
                fill=TEXT_FILL,
                stroke_width=self.stroke,
                stroke_fill=OUTLINE_FILL,
            )
        ink = canvas.getchannel("A").getbbox()
        if ink is None:
            return None
        margin = self.margin  # a translucent band behind the text: it reads on white paper too
        ink = (max(0, ink[0] - margin), max(0, ink[1] - margin), min(canvas_w, ink[2] + margin),
               min(canvas_h, ink[3] + margin))  # fmt: skip
        band = Image.new("RGBA", canvas.size, (0, 0, 0, 0))
        ImageDraw.Draw(band).rounded_rectangle(ink, radius=margin, fill=BAND_FILL)
        image = Image.alpha_composite(band, canvas).crop(ink)
        left, top, right, bottom = self.box
        x = (left + right - canvas_w) // 2 + ink[0]
        x = min(max(x, left), max(left, right - image.width))
        y = max(top, bottom - image.height)
        return image, x, y

    def _warn_missing(self, text: str) -> None:
        missing = [ch for ch in missing_glyphs(text, self.language) if ch not in self._warned]
        if missing:
            self._warned.update(missing)
            shown = ", ".join(f"{ch!r} (U+{ord(ch):04X})" for ch in missing[:12])
            more = f" and {len(missing) - 12} more" if len(missing) > 12 else ""
            log.warning(
                "The subtitle font (Noto Sans CJK) has no glyph for %s%s; they show as boxes. "
                "Replace them in the screenplay's lines.",
                shown,
                more,
            )
