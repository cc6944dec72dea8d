"""``--export`` of the ``page``, ``book`` and ``queue`` commands: the pages as files a reader opens."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from ..batch.workflow import load_workflow
from ..book_file import read_book
from ..dataset import chapter_language
from ..export import BookInfo, Section, export, export_book, file_stem, parse_formats, read_page
from ..export.sources import compose_settings, page_dpi, queue_sections, screenplay_info, storyboard_section

log = logging.getLogger("mangaka.export")
# The book's language is read from its start: this many characters tell en, zh and ja apart.
LANGUAGE_SAMPLE = 20000

HELP = (
    "also write the pages as files a reader opens: cbz, epub, pdf, or several separated by commas "
    "(e.g. cbz,pdf); right-to-left pages are marked as manga in each"
)


def add_export_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--export", metavar="FORMATS", help=HELP)


def formats_of(args: argparse.Namespace) -> tuple[str, ...]:
    """The checked ``--export`` formats (none when not given), before any work starts."""
    return parse_formats(args.export) if args.export else ()


def export_composed(
    formats: tuple[str, ...], files: list[Path], screenplay: Any, args: argparse.Namespace
) -> None:
    """``page --export``: the page files just written, as they are, as one chapter beside them."""
    info = screenplay_info(screenplay, args.direction)
    section = Section(screenplay.title, tuple(read_page(path, page_dpi(args.page)) for path in files))
    for path in export([section], info, formats, args.output, file_stem(screenplay.title)):
        sys.stdout.write(f"{path}\n")


def export_book_folder(
    formats: tuple[str, ...], args: argparse.Namespace, chapters: list[Any], width: int
) -> int:
    """``book --export``: each written chapter's screenplay drawn as storyboard pages, one file per
    chapter and one for the book, in ``OUT``; chapters without a screenplay are named as missing."""
    sections, missing, screenplays = [], [], []
    for chapter in chapters:
        path = Path(args.out) / f"{chapter.slug(width)}.json"
        if not path.is_file():
            missing.append(f"chapter {chapter.number} ({chapter.title})")
            continue
        section, screenplay = storyboard_section(path, chapter.number, "rtl")
        sections.append(section)
        screenplays.append(screenplay)
    if not sections:
        log.error("no chapter has a screenplay to export")
        return 1
    cast = tuple(dict.fromkeys(c.name for s in screenplays for c in s.characters if c.id != "narrator"))
    info = BookInfo(file_stem(Path(args.book).stem, "book"), screenplays[0].language, "rtl", characters=cast)
    result = export_book(sections, info, formats, args.out, missing=missing)
    for path in result.files:
        sys.stdout.write(f"{path}\n")
    return 0 if not missing else 1


def export_queue_folder(formats: tuple[str, ...], args: argparse.Namespace, result: Any) -> int:
    """``queue --export``: the pages each finished chapter's workflow saved, one file per chapter and
    one for the book, in ``--out``."""
    workflow = load_workflow(args.workflow)
    chapters = [result.state.chapters[n] for n in result.selected]
    sections, missing, _ = queue_sections(Path(args.out), chapters, workflow)
    direction, _ = compose_settings(workflow)
    language = chapter_language(read_book(args.book)[:LANGUAGE_SAMPLE])
    info = BookInfo(file_stem(Path(args.book).stem, "book"), language, direction)
    exported = export_book(sections, info, formats, args.out, missing=missing)
    for path in exported.files:
        sys.stdout.write(f"{path}\n")
    return 0 if not missing else 1
