"""``python -m mangaka read CHAPTER``: what the pack reads in a chapter, before any model."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from ..errors import InputError
from ..fileio import write_atomic
from ..screenplay.request import ScreenplayRequest, read_chapter
from ..source import source_map
from ..source.reading import reading_json, reading_text
from .args import REQUEST_FLAGS, add_declared_flags

log = logging.getLogger("mangaka")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "read", help="what the pack reads in a chapter (title, quotes, speakers, names), no model"
    )
    p.add_argument("chapter", type=Path, help="chapter text file (UTF-8)")
    add_declared_flags(p, "read")
    p.add_argument(
        "--json", action="store_true", help="the reading file, to correct and pass to write --reading"
    )
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of the terminal")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """What the pack reads in a chapter, before any model: printed, or the reading file (--json)."""
    chapter = read_chapter(args.chapter)
    try:
        request = ScreenplayRequest(language=args.language).for_chapter(chapter)
    except InputError as exc:
        raise exc.renamed(REQUEST_FLAGS) from None  # --language, as typed
    m = source_map(chapter, request.language)
    text = (
        json.dumps(reading_json(m), ensure_ascii=False, indent=2) + "\n"
        if args.json
        else reading_text(m) + "\n"
    )
    if args.output is not None:
        write_atomic(args.output, text)
        log.info("wrote %s", args.output)
    else:
        sys.stdout.write(text)
    return 0
