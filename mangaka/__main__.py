"""``python -m mangaka …``: write, demo, book, queue, page, doctor, eval, bench, schemas."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import procs
from .batch.options import BOOK_OPTIONS
from .demo import DEMO_CHAPTER, DEMO_MODEL_FILE, REAL_MODEL_HINT, demo_model_path
from .errors import MangakaError
from .export.cli import add_export_arg
from .llm.options import LOAD_OPTIONS
from .options import UNSET, add_flags
from .page.options import PAGE_OPTIONS
from .paths import PACK_ROOT
from .screenplay.options import OPTIONS as REQUEST_OPTIONS

log = logging.getLogger("mangaka")

DEMO_OUTPUT = "demo.screenplay.json"  # in the current folder, with demo.storyboard.png beside it


def _add_model_args(
    p: argparse.ArgumentParser,
    *,
    model_required: bool,
    output: str | None,
    defaults: dict[str, Any] | None = None,
    unset: str = UNSET,
) -> None:
    """--model, --lora, Load LLM's and the Screenwriter's flags (``defaults``: the command's own,
    by field; ``unset``: how their help says a None one) and ``-o`` when ``output`` is given."""
    from .screenplay.options import add_request_args

    p.add_argument("--model", type=Path, required=model_required, help="GGUF model file")
    p.add_argument("--lora", type=Path, help="GGUF LoRA adapter, attached after load")
    add_flags(p, {k: o for k, o in LOAD_OPTIONS.items() if k != "memory"})  # llm/options.py
    add_request_args(p, defaults, unset)  # the Screenwriter's (screenplay/options.py)
    if output is not None:
        p.add_argument("-o", "--output", type=Path, help=output)


def cmd_write(args: argparse.Namespace) -> int:
    from .cli_run import open_llm, prepare_write, run_write

    output = args.output or args.chapter.with_suffix(".screenplay.json")
    plan = prepare_write(args, args.chapter, args.model, output=output, storyboard=args.storyboard)
    run_write(open_llm(args, plan.model), plan)
    return 0


def cmd_read(args: argparse.Namespace) -> int:
    """What the pack reads in a chapter, before any model: printed, or the reading file (--json)."""
    from .cli_run import read_chapter
    from .fileio import write_atomic
    from .screenplay.request import ScreenplayRequest
    from .source import source_map
    from .source.reading import reading_json, reading_text

    chapter = read_chapter(args.chapter)
    request = ScreenplayRequest(language=args.language).for_chapter(chapter)
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


def cmd_demo(args: argparse.Namespace) -> int:
    from .cli_run import open_llm, prepare_write, run_write

    output = args.output or Path.cwd() / DEMO_OUTPUT
    plan = prepare_write(
        args, args.chapter or DEMO_CHAPTER, args.model, output=output, storyboard=True,
        default_model=demo_model_path,
    )  # fmt: skip
    if args.model is None:
        log.warning(
            "demo: using the embedded toy model %s (135M parameters) for a smoke run; its "
            "screenplay is valid but its writing is poor. %s",
            DEMO_MODEL_FILE,
            REAL_MODEL_HINT,
        )
    for path in run_write(open_llm(args, plan.model), plan):
        sys.stdout.write(f"{path}\n")
    return 0


def cmd_schemas(args: argparse.Namespace) -> int:
    from .evaluate import write_gold_schema
    from .screenplay import write_schemas
    from .screenplay.bible import write_bible_schema

    written = [*write_schemas(args.folder), write_gold_schema(args.folder), write_bible_schema(args.folder)]
    for path in written:
        log.info("wrote %s", path)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from .devtools import bench

    figures = bench.run(
        threads=args.threads or (os.cpu_count() or 1),
        gpu_layers=args.gpu_layers,
        quick=args.quick,
        engine=args.engine,
        only=args.only,
        quant=args.quant,
    )
    if args.json:
        sys.stdout.write(json.dumps(figures, sort_keys=False) + "\n")
    else:
        sys.stdout.write(bench.format_table(figures) + "\n")
    return 0


def cmd_page(args: argparse.Namespace) -> int:
    """Lettered pages from a screenplay JSON and panel images (storyboard cards when none)."""
    from .cli_run import check_output_folder, page_options, read_panel_images, save_pages
    from .compose import screenplay_from_text
    from .export.cli import export_composed, formats_of
    from .fileio import read_text
    from .page.render import compose_pages

    formats = formats_of(args)
    layout, lettering_of = page_options(args)  # every option checked before anything is read
    inputs = {"the screenplay": args.screenplay, "the images folder": args.images}
    check_output_folder(args.output, inputs, what="the pages")
    text = read_text(args.screenplay, "screenplay file")
    screenplay = screenplay_from_text(text, source=str(args.screenplay))
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


def cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import diagnose, read_checkpoint

    checkpoint = read_checkpoint(args.checkpoint) if args.checkpoint is not None else None
    report = diagnose(args.model, args.ctx, checkpoint=checkpoint)
    sys.stdout.write((report.to_json() if args.json else report.text()) + "\n")
    return 1 if report.worst == "error" else 0


def cmd_book(args: argparse.Namespace) -> int:
    from .cli_run import open_llm, prepare_book, run_book
    from .export.cli import export_book_folder, formats_of

    formats = formats_of(args)
    plan = prepare_book(args)
    code = run_book(open_llm(args), args, plan)
    if formats:
        width = max(2, len(str(plan.selection.total)))
        code = max(code, export_book_folder(formats, args, plan.selection.chapters, width))
    return code


def cmd_queue(args: argparse.Namespace) -> int:
    import asyncio

    from .batch.queue import run_queue
    from .export.cli import export_queue_folder, formats_of

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mangaka", description="Mangaka: novel chapter → manga")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    _add_write_commands(sub)
    _add_page_commands(sub)
    _add_book_commands(sub)
    return parser


def _add_write_commands(sub: argparse._SubParsersAction) -> None:
    """write and demo."""
    p = sub.add_parser("write", help="write a screenplay for a chapter with a GGUF model")
    p.add_argument("chapter", type=Path, help="chapter text file (UTF-8)")
    _add_model_args(p, model_required=True, output="screenplay JSON file to write (default: "
                    "CHAPTER.screenplay.json); its folder must exist")  # fmt: skip
    p.add_argument(
        "--storyboard",
        action="store_true",
        help="also draw the screenplay's storyboard page: X.storyboard.png beside X.json or "
        "X.screenplay.json (X.storyboard-2.png… for more pages)",
    )
    _add_reading_arg(p)
    p.set_defaults(func=cmd_write)

    p = sub.add_parser(
        "read", help="what the pack reads in a chapter (title, quotes, speakers, names), no model"
    )
    p.add_argument("chapter", type=Path, help="chapter text file (UTF-8)")
    add_flags(p, {"language": REQUEST_OPTIONS["language"]})
    p.add_argument(
        "--json", action="store_true", help="the reading file, to correct and pass to write --reading"
    )
    p.add_argument("-o", "--output", type=Path, help="write to this file instead of the terminal")
    p.set_defaults(func=cmd_read)

    p = sub.add_parser(
        "demo",
        help="write a screenplay for a sample chapter and draw its storyboard page "
        "(toy model unless --model)",
    )
    p.add_argument("--chapter", type=Path, help="chapter text file (default: a sample chapter)")
    _add_model_args(
        p,
        model_required=False,
        output=f"screenplay JSON file to write (default: {DEMO_OUTPUT} in the current folder); the "
        "storyboard picture goes beside it, named without .json and .screenplay: X.json or "
        "X.screenplay.json gives X.storyboard.png (X.storyboard-2.png… for more pages)",
    )
    _add_reading_arg(p)
    p.set_defaults(func=cmd_demo, panels=4, dialogue=6)


def _add_reading_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reading",
        type=Path,
        help="the chapter's reading (read --json), corrected by you: its speakers, names and title "
        "are forced",
    )


def _add_page_commands(sub: argparse._SubParsersAction) -> None:
    """bench, page and doctor."""
    p = sub.add_parser(
        "bench", help="speed figures measured side by side on this machine (keys: docs/performance.md)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object (keys in docs/performance.md)")
    p.add_argument("--quick", action="store_true", help="fewer tokens and one repeat: a smoke run")
    p.add_argument("--threads", type=int, default=0, help="CPU threads; 0 = every core")
    p.add_argument("--gpu-layers", type=int, default=0, help="layers on the GPU (-1 all)")
    p.add_argument("--engine", help="constrained-decoding engine (default: the fastest measured)")
    p.add_argument(
        "--only", action="append",
        help="run only this part (repeatable); real_shape (Qwen3.5-35B-A3B's shape, random weights) "
        "runs only when named",
    )  # fmt: skip
    p.add_argument("--quant", choices=("Q4_K_M", "Q3_K_M"), default="Q4_K_M",
                   help="real_shape: the llama.cpp layout of its model")  # fmt: skip
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("page", help="lettered manga pages from a screenplay JSON and panel images")
    p.add_argument("screenplay", type=Path, help="screenplay JSON (or an LLM reply holding it)")
    p.add_argument("--images", type=Path, help="folder of panel images, one per panel in name order "
                   "(default: storyboard cards)")  # fmt: skip
    add_flags(p, PAGE_OPTIONS, {"width": None, "height": None})  # page/options.py; sizes: --page custom
    p.add_argument("-o", "--output", type=Path, default=Path("pages"), help="folder for the pages")
    add_export_arg(p)
    p.set_defaults(func=cmd_page)

    p = sub.add_parser("doctor", help="what this machine's llama.cpp can do, and what is wrong")
    p.add_argument("--model", type=Path, help="a GGUF model to check (architecture, memory)")
    add_flags(p, {"n_ctx": LOAD_OPTIONS["n_ctx"]})  # the context the memory estimate is for
    p.add_argument(
        "--checkpoint",
        metavar="FILE_OR_GB",
        help="an image checkpoint (.safetensors, or its size in GiB): do it and --model fit together?",
    )
    p.add_argument("--json", action="store_true", help="the findings as one JSON object")
    p.set_defaults(func=cmd_doctor)


def _add_book_commands(sub: argparse._SubParsersAction) -> None:
    """book, queue and schemas."""
    p = sub.add_parser("book", help="screenplays for every chapter of a book, N chapters in flight")
    p.add_argument("book", type=Path, help="the book: a text file (UTF-8, UTF-16 or GB18030)")
    _add_model_args(p, model_required=False, output=None)
    p.add_argument("--remote", help="an OpenAI-compatible server's URL instead of --model")
    p.add_argument("--remote-model", default="", help="the model name on that server")
    p.add_argument("--api-key-env", help="NAME of the environment variable holding the server's API key")
    add_flags(p, {k: BOOK_OPTIONS[k] for k in ("chapters", "concurrency")}, {"chapters": None})
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
    p.set_defaults(func=cmd_book)

    p = sub.add_parser("queue", help="run a whole book through a ComfyUI workflow, chapter by chapter")
    p.add_argument("book", type=Path, help="the book: a text file (UTF-8, UTF-16 or GB18030)")
    p.add_argument("--workflow", type=Path, required=True, help="API-format workflow JSON")
    p.add_argument("--server", action="append", required=True, help="ComfyUI URL (repeat for several)")
    add_flags(p, {k: BOOK_OPTIONS[k] for k in ("chapters", "max_chars")}, {"chapters": None})
    p.add_argument("--out", type=Path, default=Path("book-out"), help="folder for pages and the state file")
    p.add_argument("--chapter-input", help="NODE_ID.INPUT that takes the chapter text (default: found)")
    p.add_argument(
        "--bible", type=Path,
        help="the series bible, one cast for the whole book: put into each chapter's Screenwriter and "
        "kept up to date from the chapters' saved bibles or screenplays (default: OUT/bible.json)",
    )  # fmt: skip
    add_export_arg(p)
    p.set_defaults(func=cmd_queue)

    _add_eval_command(sub)
    _add_dataset_command(sub)

    p = sub.add_parser("schemas", help="write the JSON Schemas in schemas/ from the models")
    p.add_argument("--folder", type=Path, default=PACK_ROOT / "schemas")
    p.set_defaults(func=cmd_schemas)


def _add_eval_command(sub: argparse._SubParsersAction) -> None:
    from .evaluate.cli import add_arguments, cmd_eval

    p = sub.add_parser(
        "eval", help="score the Screenwriter against a gold chapter set (fidelity; seeds; two configurations)"
    )
    _add_model_args(
        p, model_required=False, output=None, defaults={"panels": None, "dialogue": None},
        unset="default: the chapter's reference screenplay's count, else auto",
    )  # fmt: skip
    add_arguments(p)
    p.set_defaults(func=cmd_eval)


def _add_dataset_command(sub: argparse._SubParsersAction) -> None:
    from .dataset import add_arguments, cmd_dataset

    p = sub.add_parser(
        "dataset", help="approved chapter + screenplay pairs as a LoRA training set (chat JSONL)"
    )
    add_arguments(p)
    p.set_defaults(func=cmd_dataset)


REPORT_URL = "https://github.com/mangaka-comfy/comfyui-mangaka/issues"
# What to do about an OSError, by errno; the path and the system's words come first.
OS_ERROR_FIXES = {
    errno.ENOSPC: "free some space or write somewhere else",
    errno.EDQUOT: "free some space or write somewhere else",
    errno.EFBIG: "the file is larger than this shell lets a program write (ulimit -f); raise the limit",
    errno.EACCES: "give a path this user may use, or change its permissions",
    errno.EPERM: "give a path this user may use, or change its permissions",
    errno.EROFS: "that file system is read-only; give a path on a writable one",
    errno.ENOENT: "check the path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; check the path",
    errno.EISDIR: "it is a folder; give a file",
    errno.EEXIST: "it is in the way; move it or give another path",
    errno.ENAMETOOLONG: "give a shorter path",
    errno.EMFILE: "too many files are open; raise the limit (ulimit -n)",
}


def os_error_line(exc: OSError) -> str:
    """One line for an ``OSError``: the path(s), the cause as the system words it, and a fix."""
    paths = " → ".join(str(p) for p in (exc.filename, exc.filename2) if p is not None)
    cause = exc.strerror or str(exc) or type(exc).__name__
    fix = OS_ERROR_FIXES.get(exc.errno or -1)
    return f"{paths + ': ' if paths else ''}{cause}{'; ' + fix if fix else ''}"


def report_bug(exc: BaseException, argv: list[str] | None) -> str:
    """The line for an exception no code path expected: it is a bug; the traceback is saved to a
    file (logged at debug level when it cannot be) for the report."""
    import tempfile
    import traceback
    from datetime import datetime

    from .fileio import write_atomic

    command = " ".join(["python -m mangaka", *(sys.argv[1:] if argv is None else argv)])
    text = f"{command}\n\n{''.join(traceback.format_exception(exc))}"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        saved = write_atomic(Path(tempfile.gettempdir()) / f"mangaka-bug-{stamp}-{os.getpid()}.txt", text)
        where = f"the traceback is in {saved}"
    except OSError:
        saved = None
        where = "run it again with -v to see the traceback"
    log.debug("%s", text)
    return (
        f"internal error, a bug in Mangaka: {type(exc).__name__}: {exc}. Please report it at "
        f"{REPORT_URL} with the command you ran; {where}"
    )


Command = Callable[[argparse.Namespace], int]


def run_command(func: Command, args: argparse.Namespace, argv: list[str] | None = None) -> int:
    """``func(args)``'s exit code; every error it raises becomes one logged error: a
    ``MangakaError`` as it is worded (1), Ctrl-C "interrupted" (130), an ``OSError`` one line with
    its path and cause (1), anything else a bug, said so on one line with how to report it (1).
    Never a bare traceback."""
    try:
        return func(args)
    except MangakaError as exc:
        log.error("%s", exc)  # as worded: some list their problems, one a line
        return 1
    except KeyboardInterrupt:
        log.error("interrupted")
        return 130
    except OSError as exc:
        log.error("%s", one_line(os_error_line(exc)))
        return 1
    except Exception as exc:  # noqa: BLE001 - the last resort: a bug, said so, with how to report it
        log.error("%s", one_line(report_bug(exc, argv)))
        return 1


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def one_line(message: str) -> str:
    """``message`` on one line: a control character (a newline in a file name) is written as its
    escape (``\\n``)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], message)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(levelname)s %(name)s: %(message)s"
    )
    if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past `ulimit -f` a write fails (EFBIG), no kill
    with procs.terminate_as_interrupt():  # SIGTERM ends the run as Ctrl-C does, children included
        return run_command(args.func, args, argv)


if __name__ == "__main__":
    sys.exit(main())
