"""What lettering works with: the balloon kinds, the options, a line to letter, a balloon's plan,
the :class:`Box` it is measured in, and the sizes (pitches, spikes, tails) derived from a font size.

:mod:`.fit` fits text, :mod:`.plan` places balloons in a panel, :mod:`.draw` draws them;
:mod:`.lettering` gathers the three.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..errors import InputError
from ..screenplay.models import NARRATOR
from . import fonts
from .fonts import face_index
from .layout import Rect, TextOrder

BalloonKind = Literal["speech", "shout", "whisper", "thought", "caption"]
BALLOON_KINDS: tuple[str, ...] = get_args(BalloonKind)
LayoutEngine = Literal["auto", "raqm", "basic"]

ELLIPSIS = "…"

# Fractions of the page width, and of the font size.
LINE_PER_PAGE_WIDTH = 1 / 830  # outline width: 3 px on A4 300 dpi
LINE_HEIGHT = 1.25  # horizontal line pitch, in ems
COLUMN_PITCH = 1.3  # vertical column pitch, in ems
TAIL_LENGTH = 1.1  # in ems

_VERTICAL_LANGUAGES = ("zh", "ja")


@dataclass(frozen=True)
class Box(Rect):
    """The layout's ``Rect`` (page pixels, ``right`` and ``bottom`` exclusive) with what lettering
    needs besides: a fractional centre, emptiness, points, insets, and any rectangle-like input."""

    @property
    def center(self) -> tuple[float, float]:  # type: ignore[override]
        return self.x + self.w / 2, self.y + self.h / 2

    @property
    def empty(self) -> bool:
        return self.w <= 0 or self.h <= 0

    def contains(self, other: Any) -> bool:
        """Whether a rectangle (any object with x, y, w, h) or a point ``(x, y)`` lies inside."""
        if isinstance(other, tuple):
            px, py = other
            return self.x <= px < self.right and self.y <= py < self.bottom
        o = Box.of(other)
        return self.x <= o.x and self.y <= o.y and o.right <= self.right and o.bottom <= self.bottom

    def intersects(self, other: Any) -> bool:
        """Whether the two rectangles share some area (touching edges do not count)."""
        o = Box.of(other)
        return self.x < o.right and o.x < self.right and self.y < o.bottom and o.y < self.bottom

    def inset(self, d: int) -> Box:
        return Box(self.x + d, self.y + d, max(0, self.w - 2 * d), max(0, self.h - 2 * d))

    @classmethod
    def of(cls, rect: Any) -> Box:
        """A Box from any object with ``x, y, w, h`` attributes (e.g. the page layout's Rect)."""
        if isinstance(rect, Box):
            return rect
        try:
            return cls(int(rect.x), int(rect.y), int(rect.w), int(rect.h))
        except AttributeError as exc:
            raise InputError(f"A panel rectangle needs x, y, w and h attributes, got {rect!r}.") from exc


@dataclass(frozen=True)
class LineSpec:
    """One dialogue line to letter. ``speaker_x``: the speaker's horizontal position in the panel,
    0 (left) to 1 (right); None when unknown or off-panel."""

    line_id: str
    speaker: str
    text: str
    emotion: str
    speaker_x: float | None = None


@dataclass
class BalloonPlan:
    """Where and how one line is lettered, in page pixels.

    ``box`` is the balloon's outer bounding box, ``text_box`` where the text goes (inside ``box``).
    ``lines`` are horizontal lines, or, when ``vertical``, columns (each read top to bottom; the
    first is the rightmost). ``tail`` is the tail's tip (None for captions, and where there is no
    room for one). ``hidden_chars`` counts the characters (whitespace aside) that could not be
    shown. A line that could not be placed at all has an empty ``box`` and no ``lines``.
    """

    line_id: str
    kind: BalloonKind
    box: Box
    text_box: Box
    lines: list[str]
    font_size: int
    vertical: bool
    tail: tuple[int, int] | None
    fits: bool
    hidden_chars: int
    missing_glyphs: list[str]
    line_width: int = 3
    language: str = "en"
    panel: Box | None = None


@dataclass
class LetteringOptions:
    """How lines are lettered. ``vertical`` is honoured for zh and ja only. ``direction``: reading
    order of balloons in a panel (rtl starts at the top right). Font sizes None: derived from the
    page width. ``layout_engine`` applies to vertical text (horizontal text always uses BASIC)."""

    language: str = "en"
    vertical: bool = False
    direction: TextOrder = "rtl"
    max_font_size: int | None = None
    min_font_size: int | None = None
    layout_engine: LayoutEngine = "auto"


def balloon_kind(emotion: str, speaker: str) -> BalloonKind:
    """The balloon style for a line: the narrator (or the emotion "narration") gets a caption box;
    "shout" a spiky balloon, "whisper" a dashed one, "thinking" a cloud; every other emotion,
    "angry" and "excited" included, a plain oval (what makes a shout is the volume, not the mood)."""
    emotion_key = emotion.strip().lower()
    if speaker.strip().lower() == NARRATOR or emotion_key == "narration":
        return "caption"
    if emotion_key == "shout":
        return "shout"
    if emotion_key == "whisper":
        return "whisper"
    if emotion_key == "thinking":
        return "thought"
    return "speech"


def line_width(page_width: int) -> int:
    """The outline width of balloons on a page ``page_width`` pixels wide."""
    return max(2, round(page_width * LINE_PER_PAGE_WIDTH))


def vertical_enabled(options: LetteringOptions) -> bool:
    """Whether ``options`` lay text out vertically (asked for, and the language is zh or ja)."""
    key = options.language.strip().lower().replace("_", "-")
    return options.vertical and key.split("-")[0] in _VERTICAL_LANGUAGES


def use_raqm(options: LetteringOptions) -> bool:
    """Whether vertical text is drawn with raqm: "auto" where it works, "raqm" always (raising
    :class:`BackendMissingError` later where it does not), "basic" never."""
    if options.layout_engine == "basic":
        return False
    if options.layout_engine == "raqm":
        return True
    return fonts.raqm_available()  # looked up at call time: tests replace it


def check_options(options: LetteringOptions) -> None:
    """Raise :class:`InputError` for an unknown language, reading order or layout engine."""
    face_index(options.language)  # raises InputError for an unknown language
    if options.direction not in get_args(TextOrder):
        raise InputError(f"Reading direction must be 'rtl' or 'ltr', got {options.direction!r}.")
    if options.layout_engine not in get_args(LayoutEngine):
        raise InputError(f"Layout engine must be 'auto', 'raqm' or 'basic', got {options.layout_engine!r}.")


def line_height(size: int) -> int:
    """The pitch of horizontal lines at ``size`` px."""
    return max(1, round(size * LINE_HEIGHT))


def column_pitch(size: int) -> int:
    """The pitch of vertical columns at ``size`` px."""
    return max(1, round(size * COLUMN_PITCH))


def spike_depth(size: int) -> int:
    """How far a shout balloon's spikes reach out at ``size`` px."""
    return max(3, round(0.6 * size))


def bump_size(size: int) -> int:
    """The radius of a thought cloud's bumps at ``size`` px."""
    return max(3, round(0.45 * size))


def tail_length(size: int) -> int:
    """The length of a balloon's tail at ``size`` px."""
    return max(4, round(TAIL_LENGTH * size))


def tip_radius(size: int) -> int:
    """The radius of a tail's tip (and a thought tail's smallest bubble) at ``size`` px."""
    return max(2, round(0.18 * size))
