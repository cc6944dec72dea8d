"""Where an export's pages come from: a ``page`` run's composed pages, a ``book`` run's screenplays
(drawn as storyboard pages), or a ``queue`` run's chapter folders (the pages its workflow saved)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..compose.extract import screenplay_from_file
from ..errors import InputError, MangakaError
from ..fileio import read_text
from ..page.layout import LayoutOptions, text_order
from . import SCREEN_DPI, BookInfo, Section, image_page, read_page

log = logging.getLogger("mangaka.export")

COMPOSE_NODE = "MangakaComposePage"
PAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def page_dpi(preset: str) -> float:
    """The print resolution a page preset names (``"A4 300dpi"`` → 300); screen pages (a webtoon
    strip, a custom size) are 96 dpi."""
    match = re.search(r"(\d+)\s*dpi", preset)
    return float(match.group(1)) if match else float(SCREEN_DPI)


def composed_section(composed: Any, title: str, dpi: float, number: int | None = None) -> Section:
    """A chapter from ``compose_pages``' result."""
    pages = tuple(
        image_page(image, dpi, f"page {i} of {title!r}") for i, image in enumerate(composed.pages, 1)
    )
    return Section(title, pages, number)


def screenplay_info(screenplay: Any, direction: str, title: str | None = None) -> BookInfo:
    """What a reader is told about a chapter: its title, language and cast."""
    cast = tuple(c.name for c in screenplay.characters if c.id != "narrator")
    return BookInfo(title or screenplay.title, screenplay.language, direction, characters=cast)


def storyboard_section(path: Path, number: int, direction: str) -> tuple[Section, Any]:
    """A ``book`` chapter's screenplay drawn as storyboard pages (A4 at 300 dpi), as ``page``
    draws a screenplay without images."""
    from ..page.lettering import LetteringOptions  # Pillow: loaded only to draw
    from ..page.render import compose_pages  # Pillow: loaded only to draw

    screenplay = screenplay_from_file(path)
    layout = LayoutOptions(direction=direction)
    lettering = LetteringOptions(language=screenplay.language, direction=text_order(direction))
    composed = compose_pages(screenplay, [], layout=layout, lettering=lettering, cards=True)
    for problem in composed.problems:
        log.warning("%s: %s", path.name, problem)
    return composed_section(composed, screenplay.title, page_dpi(layout.page), number), screenplay


# --------------------------------------------------------------------------------- queue


def compose_settings(workflow: dict[str, Any]) -> tuple[str, float]:
    """The reading direction and dpi of a workflow's Compose Page node (rtl, 300 without one)."""
    for node in workflow.values():
        if isinstance(node, dict) and node.get("class_type") == COMPOSE_NODE:
            inputs = node.get("inputs", {})
            direction = inputs.get("direction", "rtl")
            page = inputs.get("page", "A4 300dpi")
            return (direction if isinstance(direction, str) else "rtl"), page_dpi(str(page))
    return "rtl", 300.0


def page_files(folder: Path, workflow: dict[str, Any]) -> list[Path]:
    """The pages a chapter's run saved: the images of the saving nodes fed by Compose Page (by the
    run's ``outputs.json``), in the order saved; without a Compose Page, every PNG/JPEG it saved."""
    try:
        record = json.loads(read_text(folder / "outputs.json", "outputs.json"))
    except (MangakaError, ValueError):
        record = {}
    outputs = record.get("outputs", {}) if isinstance(record, dict) else {}
    fed = {
        node_id
        for node_id, node in workflow.items()
        if isinstance(node, dict)
        and any(
            isinstance(v, list) and v and workflow.get(str(v[0]), {}).get("class_type") == COMPOSE_NODE
            for v in node.get("inputs", {}).values()
        )
    }
    names = []
    for node_id, items in outputs.items():
        if fed and node_id not in fed:
            continue
        for values in items.values() if isinstance(items, dict) else ():
            for item in values if isinstance(values, list) else ():
                name = Path(str(item.get("filename", ""))).name if isinstance(item, dict) else ""
                if name.lower().endswith(PAGE_SUFFIXES) and (folder / name).is_file():
                    names.append(folder / name)
    return names


def queue_sections(
    out: Path, chapters: Sequence[Any], workflow: dict[str, Any]
) -> tuple[list[Section], list[str], float]:
    """The finished chapters' pages (``ChapterState``s in book order) and the names of the chapters
    not finished or without pages."""
    _, dpi = compose_settings(workflow)
    sections, missing = [], []
    for chapter in chapters:
        name = f"chapter {chapter.number} ({chapter.title})"
        files = page_files(out / chapter.folder, workflow) if chapter.status == "done" else []
        if not files:
            missing.append(name + ("" if chapter.status == "done" else f": {chapter.status}"))
            continue
        pages = tuple(read_page(path, dpi) for path in files)
        sections.append(Section(chapter.title, pages, chapter.number))
    if not sections:
        raise InputError(
            f"no chapter in {out} has pages yet; run the queue until a chapter is done (its workflow must "
            "save Compose Page's images), then export"
        )
    return sections, missing, dpi
