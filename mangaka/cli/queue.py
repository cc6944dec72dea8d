"""``python -m mangaka queue BOOK --workflow W --server URL``: a whole book through a ComfyUI
workflow, chapter by chapter, resumed by a rerun."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..batch.options import BOOK_OPTIONS
from ..batch.queue import run_queue
from .args import add_declared_flags
from .export import add_export_arg, export_queue_folder, formats_of


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("queue", help="run a whole book through a ComfyUI workflow, chapter by chapter")
    p.add_argument("book", type=Path, help="the book: a text file (UTF-8, UTF-16 or GB18030)")
    p.add_argument("--workflow", type=Path, required=True, help="API-format workflow JSON")
    p.add_argument("--server", action="append", required=True, help="ComfyUI URL (repeat for several)")
    add_declared_flags(p, "queue")
    p.add_argument("--out", type=Path, default=Path("book-out"), help="folder for pages and the state file")
    p.add_argument("--chapter-input", help="NODE_ID.INPUT that takes the chapter text (default: found)")
    p.add_argument(
        "--bible", type=Path,
        help="the series bible, one cast for the whole book: put into each chapter's Screenwriter and "
        "kept up to date from the chapters' saved bibles or screenplays (default: OUT/bible.json)",
    )  # fmt: skip
    add_export_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    formats = formats_of(args)
    BOOK_OPTIONS["max_chars"].check(args.max_chars, "--max-chars")
    result = asyncio.run(
        run_queue(
            args.book,
            args.workflow,
            args.server,
            args.out,
            chapters=args.chapters,
            chapter_input=args.chapter_input,
            max_chars=args.max_chars,
            bible=args.bible,
        )
    )
    sys.stdout.write(result.summary() + "\n")
    code = 0 if result.ok else 1
    if formats:
        code = max(code, export_queue_folder(formats, args, result))
    return code
