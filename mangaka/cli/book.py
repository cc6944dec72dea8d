"""``python -m mangaka book BOOK``: every chapter's screenplay, N chapters in flight, resumed by a
rerun; every input checked before any model loads."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass
from pathlib import Path

from ..batch.book import BIBLE_FILE, Selection, select_chapters, write_book
from ..batch.options import BOOK_OPTIONS
from ..chapters import Chapter
from ..compose.extract import screenplay_from_file
from ..errors import InputError
from ..llm.base import LLM
from ..screenplay.bible import load_series_bible
from ..screenplay.request import ScreenplayRequest
from .args import (
    add_declared_flags,
    add_model_args,
    check_model_args,
    load_options_from_args,
    open_llm,
    request_from_args,
    run_options_from_args,
)
from .export import add_export_arg, export_book_folder, formats_of
from .paths import check_not_an_input, check_output_folder, check_writable_folder, make_output_folder
from .video import storyboard_video

log = logging.getLogger("mangaka")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("book", help="screenplays for every chapter of a book, N chapters in flight")
    p.add_argument("book", type=Path, help="the book: a text file (UTF-8, UTF-16 or GB18030)")
    add_model_args(p, "book", model_required=False, output=None)
    p.add_argument("--remote", help="an OpenAI-compatible server's URL instead of --model")
    p.add_argument("--remote-model", default="", help="the model name on that server")
    p.add_argument("--api-key-env", help="NAME of the environment variable holding the server's API key")
    add_declared_flags(p, "book", ("book",))
    p.add_argument(
        "-o", "--out", "--output", dest="out", type=Path, default=Path("screenplays"),
        help="folder for the screenplays (default: screenplays; made if missing)",
    )  # fmt: skip
    p.add_argument(
        "--bible", type=Path,
        help="the series bible, one cast for the whole book: read first, then kept up to date "
        "(default: OUT/bible.json; made if missing)",
    )  # fmt: skip
    add_export_arg(p)
    p.add_argument(
        "--video", action="store_true",
        help="also each chapter's motion comic of its storyboard, OUT/<chapter>.mp4 with its subtitles "
        "(made again only when the screenplay is newer)",
    )  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    formats = formats_of(args)
    plan = prepare_book(args)
    code = run_book(open_llm(args), args, plan)
    width = max(2, len(str(plan.selection.total)))
    if formats:
        code = max(code, export_book_folder(formats, args, plan.selection.chapters, width))
    if args.video:
        code = max(code, chapter_videos(plan.out, plan.selection.chapters, width))
    return code


def chapter_videos(out: Path, chapters: list[Chapter], width: int) -> int:
    """``book --video``: each chapter's screenplay in ``out`` filmed as a motion comic of its
    storyboard beside it; one whose video is newer than its screenplay is kept (a rerun resumes).
    Chapters without a screenplay are named; 1 when there are any."""
    missing = []
    for chapter in chapters:
        path = out / f"{chapter.slug(width)}.json"
        video = path.with_suffix(".mp4")
        if not path.is_file():
            missing.append(f"chapter {chapter.number} ({chapter.title})")
            continue
        if video.is_file() and video.stat().st_mtime >= path.stat().st_mtime:
            log.info("%s is newer than its screenplay; kept", video)
            continue
        screenplay = screenplay_from_file(path)
        for written in storyboard_video(screenplay, video):
            sys.stdout.write(f"{written}\n")
    if missing:
        log.error("no video for %s: no screenplay", ", ".join(missing))
    return 1 if missing else 0


@dataclass(frozen=True)
class BookPlan:
    """One checked ``book`` run."""

    request: ScreenplayRequest
    out: Path
    concurrency: int
    selection: Selection
    bible: Path


def prepare_book(args: argparse.Namespace) -> BookPlan:
    """Every check of a ``book`` run, none of them loading a model (a remote handle checks its
    URL and key name when ``open_llm`` makes it, calling nothing)."""
    if bool(args.model) == bool(args.remote):
        raise InputError("give either --model FILE.gguf or --remote URL (one of them)")
    if args.remote and args.lora is not None:
        raise InputError("--lora works with --model only; a --remote server attaches its own adapters")
    request = request_from_args(args)
    concurrency = BOOK_OPTIONS["concurrency"].check(args.concurrency, "--concurrency")
    if args.model:
        load_options_from_args(args)
        run_options_from_args(args)
    if args.book.is_dir():
        raise InputError(f"book {args.book} is a folder; give the book's text file")
    selection = select_chapters(args.book, args.chapters)
    inputs = {"the book": args.book, "the model": args.model, "the LoRA": args.lora}
    check_output_folder(args.out, inputs)
    bible = getattr(args, "bible", None) or args.out / BIBLE_FILE
    check_not_an_input({"output": bible}, inputs, "--bible")
    if bible.is_dir():
        raise InputError(f"--bible {bible} is a folder; give the bible's file, e.g. {bible / BIBLE_FILE}")
    check_writable_folder(bible.parent, "--bible", bible, may_create=True)
    load_series_bible(bible, missing_ok=True)  # a bad bible is refused before the model loads
    if args.model:
        check_model_args(args, args.model)
    make_output_folder(args.out, "-o", args.out)  # last: every other check passed
    make_output_folder(bible.parent, "--bible", bible)
    return BookPlan(request, args.out, concurrency, selection, bible)


def run_book(llm: LLM, args: argparse.Namespace, plan: BookPlan) -> int:
    """Write every selected chapter's screenplay; prints the files written and the failures."""
    result = write_book(
        llm,
        args.book,
        plan.out,
        concurrency=plan.concurrency,
        request=plan.request,
        selection=plan.selection,
        bible=plan.bible,
    )
    for path in result.written:
        sys.stdout.write(f"{path}\n")
    for number, why in sorted(result.failed.items()):
        sys.stdout.write(f"chapter {number} failed: {why}\n")
    if result.skipped:
        log.info("%d chapters were written already and were skipped", len(result.skipped))
    return 0 if result.ok else 1
