"""What an export is made of: pages, chapters (``Section``), what a reader is told about the book
(``BookInfo``), and the checks every export makes before it writes anything."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError
from ..fileio import check_input_file, read_input
from .xmltext import xml_safe

log = logging.getLogger("mangaka.export")

FORMATS = ("cbz", "epub", "pdf")
DIRECTIONS = ("rtl", "ltr", "vertical")
PageKind = Literal["png", "jpeg"]
# Screen pages (a webtoon strip, a custom size) have no print size: 96 pixels to the inch, as a
# browser lays them out.
SCREEN_DPI = 96
MIN_DPI, MAX_DPI = 36, 2400
# The longest name a container file may have (before its ".cbz"): fits every file system.
MAX_NAME_CHARS = 120
# ... and at most this many bytes (UTF-8), so "<stem>.epub" fits a file name's 255 bytes: 120 emoji
# or CJK characters would not.
MAX_NAME_BYTES = 240
_BAD_NAME = re.compile(r'[/\\:*?"<>|\x00-\x1f\ud800-\udfff\ufffe\uffff]')
# A language tag (BCP 47's shape: "en", "zh-Hant", "pt-BR"); anything else is written as "und".
_LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,8}(?:-[A-Za-z0-9]{1,8})*")


@dataclass(frozen=True)
class Page:
    """One page image, encoded (``data`` is written into the containers as it is)."""

    data: bytes
    kind: PageKind
    width: int
    height: int
    dpi: float
    source: str  # where it came from, for messages ("page_003.png", "image 3 of the batch")

    @property
    def suffix(self) -> str:
        return ".png" if self.kind == "png" else ".jpg"

    @property
    def media_type(self) -> str:
        return "image/png" if self.kind == "png" else "image/jpeg"


@dataclass(frozen=True)
class Section:
    """One chapter's pages, with the title its bookmark and table-of-contents entry show."""

    title: str
    pages: tuple[Page, ...]
    number: int | None = None

    def __post_init__(self) -> None:
        # Every writer reads the title from here: made legal for XML and PDF once (see xmltext).
        where = f"the title of chapter {self.number}" if self.number is not None else "a chapter title"
        object.__setattr__(self, "title", xml_safe(self.title, where))


@dataclass(frozen=True)
class BookInfo:
    """What a reader is told about the book. ``direction``: rtl (manga), ltr, vertical (webtoon)."""

    title: str
    language: str = "en"
    direction: str = "rtl"
    series: str = ""
    number: int | None = None
    characters: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        # Every writer reads these from here: made legal for XML and PDF once (see xmltext).
        object.__setattr__(self, "title", xml_safe(self.title, "the title"))
        object.__setattr__(self, "series", xml_safe(self.series, "the series"))
        names = (xml_safe(name, f"character name {i}") for i, name in enumerate(self.characters, 1))
        object.__setattr__(self, "characters", tuple(name for name in names if name.strip()))
        language = xml_safe(self.language, "the language").strip()
        if not _LANGUAGE_TAG.fullmatch(language):
            log.warning(
                "export: the language %r is not a language tag (like en or zh-Hant); und is written", language
            )
            language = "und"
        object.__setattr__(self, "language", language)

    @property
    def rtl(self) -> bool:
        return self.direction == "rtl"


# ------------------------------------------------------------------------------ checks


def parse_formats(text: str | Iterable[str], what: str = "--export") -> tuple[str, ...]:
    """``"cbz,epub"`` → ``("cbz", "epub")``, in FORMATS order, each once; anything else refused."""
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = {item.strip().lower() for item in items if item.strip()}
    unknown = sorted(wanted - set(FORMATS))
    if unknown or not wanted:
        raise InputError(
            f"{what}: {', '.join(unknown) or 'nothing'} is not an export format; give one or more of "
            f"{', '.join(FORMATS)}, separated by commas (e.g. {what} cbz,pdf)"
        )
    return tuple(f for f in FORMATS if f in wanted)


def check_name(name: str, what: str) -> str:
    """A file name the user chose (without its extension): one plain name, no folders."""
    stripped = name.strip()
    if not stripped or stripped in {".", ".."} or ".." in stripped or _BAD_NAME.search(stripped):
        raise InputError(
            f"{what} {name!r} is not a plain file name: it may not be empty or hold '/', '\\', '..', "
            "control characters or any of :*?\"<>|. Give a name like 'My Manga 01'"
        )
    if len(stripped) > MAX_NAME_CHARS:
        raise InputError(f"{what} is {len(stripped)} characters long; give at most {MAX_NAME_CHARS}")
    return stripped


def file_stem(title: str, fallback: str = "manga") -> str:
    """A file name from a title the user did not type as one (a screenplay's): characters a file
    name may not hold are dropped, never refused."""
    clean = " ".join(_BAD_NAME.sub(" ", title).replace("..", " ").split()).strip(" .")
    clean = clean[:MAX_NAME_CHARS].encode("utf-8")[:MAX_NAME_BYTES].decode("utf-8", "ignore")
    return clean.rstrip(" .") or fallback


def check_dpi(dpi: float, what: str = "dpi") -> float:
    if not isinstance(dpi, int | float) or not MIN_DPI <= dpi <= MAX_DPI:
        raise InputError(f"{what} must be between {MIN_DPI} and {MAX_DPI} (print: 300 or 600), got {dpi!r}")
    return float(dpi)


def check_sections(sections: Sequence[Section], info: BookInfo) -> None:
    """Refuse what no reader could open: no pages, or pages of different sizes in one book (a
    webtoon strip's slices may differ in height only)."""
    if info.direction not in DIRECTIONS:
        raise InputError(f"reading direction {info.direction!r} is not one of {', '.join(DIRECTIONS)}")
    pages = [page for section in sections for page in section.pages]
    if not pages:
        raise InputError("there are no pages to export; compose the pages first (page, or Compose Page)")
    first = pages[0]
    for page in pages[1:]:
        same = page.width == first.width and (info.direction == "vertical" or page.height == first.height)
        if not same:
            raise InputError(
                f"{page.source} is {page.width}x{page.height} pixels but {first.source} is "
                f"{first.width}x{first.height}: a book's pages share one size. Compose every page "
                "with the same page preset (or the same width for a webtoon strip)"
            )


# ------------------------------------------------------------------------------- pages


def _probe(data: bytes, source: str) -> tuple[PageKind, int, int, float | None]:
    from PIL import Image, UnidentifiedImageError

    if not data:
        raise InputError(f"{source} is empty (0 bytes); write the page again")
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            kind = {"PNG": "png", "JPEG": "jpeg"}.get(image.format or "")
            width, height = image.size
            dpi = image.info.get("dpi")
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InputError(f"{source} is not a readable image ({exc}); give PNG or JPEG pages") from None
    if kind is None:
        raise InputError(f"{source} is a {image.format} image; pages are exported as PNG or JPEG")
    dpi_x = float(dpi[0]) if isinstance(dpi, tuple) and dpi and dpi[0] else None
    return kind, width, height, dpi_x if dpi_x and MIN_DPI <= dpi_x <= MAX_DPI else None


def read_page(path: str | Path, dpi: float | None = None) -> Page:
    """A page from a PNG or JPEG file. ``dpi``: the print resolution (default: the file's own, else
    300)."""
    source = str(path)
    check_input_file(path, "page image")
    data = read_input(path, "page image")
    kind, width, height, own = _probe(data, source)
    return Page(data, kind, width, height, dpi or own or 300.0, source)


def image_page(image: Any, dpi: float, source: str, kind: PageKind = "png") -> Page:
    """A page from a PIL image, encoded losslessly as PNG (or as JPEG when asked)."""
    from ..page.render import encode_page  # Pillow: loaded only to encode a page

    data = encode_page(image, kind)
    return Page(data, kind, image.width, image.height, float(dpi), source)
