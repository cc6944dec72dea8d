"""``python -m mangaka page SCREENPLAY``: lettered pages from a screenplay and its panel images
(storyboard cards when none), every flag checked before anything is read or drawn."""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..compose.extract import screenplay_from_file
from ..errors import InputError, MangakaError
from ..fileio import check_input_file, read_text, write_atomic
from ..options import fields_from_args, flag_names
from ..page.layout import CUSTOM, preset_size
from ..page.options import PAGE_OPTIONS, layout_from, lettering_from
from .args import add_declared_flags
from .export import add_export_arg, export_composed, formats_of
from .paths import check_output_folder

if TYPE_CHECKING:
    from ..page.layout import LayoutOptions

log = logging.getLogger("mangaka")

PAGE_FLAGS = flag_names(PAGE_OPTIONS)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("page", help="lettered manga pages from a screenplay JSON and panel images")
    p.add_argument("screenplay", type=Path, help="screenplay JSON (or an LLM reply holding it)")
    p.add_argument("--images", type=Path, help="folder of panel images, one per panel in name order "
                   "(default: storyboard cards)")  # fmt: skip
    add_declared_flags(p, "page")  # sizes: --page custom
    p.add_argument("-o", "--output", type=Path, default=Path("pages"), help="folder for the pages")
    add_export_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Lettered pages from a screenplay JSON and panel images (storyboard cards when none)."""
    from ..page.render import compose_pages  # Pillow: loaded only to draw

    formats = formats_of(args)
    layout, lettering_of = page_options(args)  # every option checked before anything is read
    inputs = {"the screenplay": args.screenplay, "the images folder": args.images}
    check_output_folder(args.output, inputs, what="the pages")
    screenplay = screenplay_from_file(args.screenplay)
    images = read_panel_images(args.images) if args.images else []
    lettering, drawing = lettering_of(screenplay.language)
    composed = compose_pages(
        screenplay, images, layout=layout, lettering=lettering, cards=not args.images, **drawing
    )
    files = save_pages(composed, args.output, args.format)
    for out in files:
        sys.stdout.write(f"{out}\n")
    for problem in composed.problems:
        log.warning("%s", problem)
    if formats:
        export_composed(formats, files, screenplay, args)
    return 0


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")


PAGE_NAME = re.compile(r"page_\d{3,}\.(?:png|jpg)")  # the only names `page` writes, or removes


LAYOUT_FILE = "layout.json"


MAX_IMAGE_BYTES = 512 * 1024 * 1024  # a 16k × 16k RGBA PNG is far below; Pillow refuses bombs too


def panel_image_files(folder: Path, flag: str = "--images") -> list[Path]:
    """The picture files in ``folder`` in name order (one per panel, in reading order), each a
    regular file of a sane size; a folder without any is refused."""
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise InputError(f"{flag} {folder} {what}; give the folder that holds the panel images")

    try:
        named = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        files = [p for p in named if not p.is_dir()]
    except OSError as exc:
        raise InputError(f"{flag} {folder} cannot be read: {exc.strerror or exc}") from None
    for path in files:  # a FIFO or a device named like an image would block Pillow or never end
        check_input_file(path, f"{flag}: panel image", limit=MAX_IMAGE_BYTES)
    if not files:
        kinds = ", ".join(IMAGE_SUFFIXES)
        raise InputError(f"{flag} {folder} holds no images ({kinds}); give the panels' folder")
    return files


def read_panel_images(folder: Path, flag: str = "--images") -> list[Any]:
    """The pictures in ``folder`` in name order (one per panel, in reading order), each decoded
    now: a file Pillow cannot read is refused by name before any page is drawn."""
    from ..video.pictures import open_panel_image  # Pillow: loaded only to draw

    return [open_panel_image(path, flag) for path in panel_image_files(folder, flag)]


def page_options(args: argparse.Namespace) -> tuple[LayoutOptions, Callable[[str], tuple[Any, dict]]]:
    """``page``'s layout (``--width/--height`` with ``--page custom``) and its lettering for a
    screenplay's language, every flag checked now, each error naming its flag."""
    if args.page == CUSTOM and (args.width is None or args.height is None):
        raise InputError(
            f"--page custom needs --width PX and --height PX ({PAGE_OPTIONS['width'].bounds()}; --height 0 "
            "with --direction vertical for a webtoon strip)"
        )
    if args.page != CUSTOM and (args.width is not None or args.height is not None):
        raise InputError(f"--width and --height set a custom page: add --page custom (not {args.page!r})")
    fields = fields_from_args(args, PAGE_OPTIONS)
    try:
        layout = layout_from(fields)
        preset_size(layout)  # a size out of bounds, a strip on a paged direction: refused here
        lettering_from(fields, "en")
    except InputError as exc:
        raise exc.renamed(PAGE_FLAGS) from None
    return layout, lambda language: lettering_from(fields, language)


def _owned_pages(folder: Path) -> set[str]:
    """The page files an earlier ``page`` run wrote in ``folder``, by its layout.json: the names it
    lists (older layout.json files: its page count, in both formats). Only page_NNN names count."""
    try:
        old = json.loads(read_text(folder / LAYOUT_FILE, LAYOUT_FILE))
    except (MangakaError, ValueError, RecursionError):
        return set()
    if not isinstance(old, dict):
        return set()
    files = old.get("files")
    if not isinstance(files, list):
        pages = old.get("pages")
        count = len(pages) if isinstance(pages, list) else 0
        files = [f"page_{n:03d}.{ext}" for n in range(1, count + 1) for ext in ("png", "jpg")]
    return {name for name in files if isinstance(name, str) and PAGE_NAME.fullmatch(name)}


def save_pages(composed: Any, folder: Path, fmt: str) -> list[Path]:
    """Write the pages and their ``layout.json`` (which lists them) into ``folder``, each file
    atomically, then remove the pages an earlier run left there that this set does not replace:
    ``page_004.png`` from a four-page run never sits beside a layout of one page. A user's other
    files are never touched."""
    from ..page.render import save_page  # Pillow: loaded only to draw

    earlier = _owned_pages(folder)
    ext = fmt.replace("jpeg", "jpg")
    written = [save_page(p, folder / f"page_{i:03d}.{ext}", fmt) for i, p in enumerate(composed.pages, 1)]
    layout = {"files": [p.name for p in written], **composed.layout_json()}
    write_atomic(folder / LAYOUT_FILE, json.dumps(layout, indent=2) + "\n")
    for name in sorted(earlier - {p.name for p in written}):
        (folder / name).unlink(missing_ok=True)
        log.info("removed %s, a page of the earlier run this one replaces", folder / name)
    return written
