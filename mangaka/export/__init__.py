"""Books a reader opens: lettered pages packed as CBZ, fixed-layout EPUB 3 and PDF.

- **CBZ** (``cbz.py``): the page images stored as they are (no recompression), named in reading
  order, with a ``ComicInfo.xml`` that names the title, series, number, language, page count, each
  page's size and the cover, and says ``Manga=YesAndRightToLeft`` for right-to-left pages.
- **EPUB 3, fixed layout** (``epub.py``): one page per spine item at the page's own size, the
  book's reading direction (``page-progression-direction``), a navigation document listing the
  chapters, a cover, the language and title.
- **PDF** (``pdf.py``): one page per image at its physical size (pixels ÷ dpi), each image's own
  compressed bytes inside (a PNG's zlib stream, a JPEG's file), ``/Direction /R2L`` for
  right-to-left books, a bookmark per chapter.

A vertical-scroll (webtoon) strip is cut at its gutters into images of a readable height first
(``strip.py``). Every file is written through a temporary name and renamed at the end, so a failed
export leaves nothing behind; bad input is refused before anything is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .cbz import write_cbz
from .epub import write_epub
from .pages import (
    DIRECTIONS,
    FORMATS,
    MAX_DPI,
    MAX_NAME_CHARS,
    MIN_DPI,
    SCREEN_DPI,
    BookInfo,
    Page,
    PageKind,
    Section,
    check_dpi,
    check_name,
    check_sections,
    file_stem,
    image_page,
    parse_formats,
    read_page,
)
from .pdf import write_pdf
from .strip import slice_sections

log = logging.getLogger("mangaka.export")

__all__ = [
    "DIRECTIONS",
    "FORMATS",
    "MAX_DPI",
    "MAX_NAME_CHARS",
    "MIN_DPI",
    "SCREEN_DPI",
    "BookExport",
    "BookInfo",
    "Page",
    "PageKind",
    "Section",
    "check_dpi",
    "check_name",
    "check_sections",
    "export",
    "export_book",
    "file_stem",
    "image_page",
    "parse_formats",
    "read_page",
]


# ------------------------------------------------------------------------------ export


def _writer(fmt: str) -> Callable[[Path, Sequence[Section], BookInfo], None]:
    if fmt == "cbz":
        return write_cbz
    if fmt == "epub":
        return write_epub

    return write_pdf


def export(
    sections: Sequence[Section], info: BookInfo, formats: Sequence[str], folder: str | Path, stem: str
) -> list[Path]:
    """Write ``folder/stem.<format>`` for each format; returns the files written. A webtoon strip
    (``info.direction == "vertical"``) is cut at its gutters first."""
    formats = parse_formats(formats)
    check_sections(sections, info)
    if info.direction == "vertical":
        sections = slice_sections(sections)
    written = []
    for fmt in formats:
        path = Path(folder) / f"{stem}.{fmt}"
        _writer(fmt)(path, sections, info)
        log.info("exported %s (%d pages)", path, sum(len(s.pages) for s in sections))
        written.append(path)
    return written


@dataclass(frozen=True)
class BookExport:
    """What ``export_book`` wrote, and the chapters it could not include."""

    files: list[Path]
    missing: list[str]

    def summary(self) -> str:
        lines = [f"exported {len(self.files)} files"]
        if self.missing:
            lines.append(f"not exported (not finished): {', '.join(self.missing)}")
        return "\n".join(lines)


def export_book(
    sections: Sequence[Section],
    info: BookInfo,
    formats: Sequence[str],
    folder: str | Path,
    *,
    missing: Sequence[str] = (),
) -> BookExport:
    """One file per chapter (``NN title.<format>``) and one for the whole book
    (``<book title>.<format>``), chapters in order. ``missing`` names the chapters not finished:
    the book is exported without them and says so."""
    formats = parse_formats(formats)
    check_sections(sections, info)
    files: list[Path] = []
    width = max(2, len(str(max((s.number or 0 for s in sections), default=0))))
    for i, section in enumerate(sections, 1):
        number = section.number or i
        chapter_info = replace(info, title=section.title, number=number, series=info.series or info.title)
        stem = file_stem(f"{number:0{width}d} {section.title}", f"{number:0{width}d}")
        files += export([section], chapter_info, formats, folder, stem)
    files += export(sections, info, formats, folder, file_stem(info.title, "book"))
    for name in missing:
        log.warning("the book was exported without %s, which is not finished", name)
    return BookExport(files, list(missing))
