"""``python -m mangaka write CHAPTER --model FILE``: a chapter's screenplay (and its storyboard).

``prepare_write`` runs every check in order (options, chapter, reading, outputs, model header) and
only then does ``open_llm`` load the model: a bad input costs well under a second, never a model
load. ``demo`` runs the same plan with the sample chapter and the toy model.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..evaluate.metrics import dialogue_kept, fidelity_report
from ..fileio import write_atomic
from ..llm.base import LLM, CallContext
from ..screenplay.generate import write_screenplay
from ..screenplay.models import Screenplay
from ..screenplay.request import ScreenplayRequest, read_chapter
from ..screenplay.scenes import auto_panels
from ..source import source_map
from ..source.reading import Corrections, load_corrections, reading_summary
from .args import (
    REQUEST_FLAGS,
    add_model_args,
    add_reading_arg,
    check_model_args,
    load_options_from_args,
    open_llm,
    request_from_args,
    run_options_from_args,
)
from .paths import check_output_file, storyboard_page_count, storyboard_path, thinking_path

log = logging.getLogger("mangaka")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("write", help="write a screenplay for a chapter with a GGUF model")
    p.add_argument("chapter", type=Path, help="chapter text file (UTF-8)")
    add_model_args(p, "write", model_required=True, output="screenplay JSON file to write (default: "
                   "CHAPTER.screenplay.json); its folder must exist")  # fmt: skip
    p.add_argument(
        "--storyboard",
        action="store_true",
        help="also draw the screenplay's storyboard page: X.storyboard.png beside X.json or "
        "X.screenplay.json (X.storyboard-2.png… for more pages)",
    )
    add_reading_arg(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    output = args.output or args.chapter.with_suffix(".screenplay.json")
    plan = prepare_write(args, args.chapter, args.model, output=output, storyboard=args.storyboard)
    run_write(open_llm(args, plan.model), plan)
    return 0


def derived_outputs(
    output: Path, request: ScreenplayRequest, *, storyboard: bool, chapter: str = ""
) -> dict[str, Path]:
    """The files a ``write``/``demo`` run writes beside the screenplay ``output``, by what they are
    (``chapter``: to count the storyboard's pages when ``--panels auto``)."""
    derived = {"plan file": thinking_path(output)} if request.think_tokens else {}
    if storyboard:
        panels = request.panels if isinstance(request.panels, int) else auto_panels(chapter)
        for n in range(1, storyboard_page_count(panels) + 1):
            derived["storyboard picture" if n == 1 else f"storyboard page {n}"] = storyboard_path(output, n)
    return derived


@dataclass(frozen=True)
class WritePlan:
    """One checked ``write`` or ``demo`` run: what to read, ask, load and write."""

    chapter_path: Path
    chapter: str
    request: ScreenplayRequest
    model: Path
    output: Path
    storyboard: bool = False
    reading: Corrections | None = None  # a person's corrections of the chapter's reading


def prepare_write(
    args: argparse.Namespace,
    chapter_path: Path,
    model: Path | None,
    *,
    output: Path,
    storyboard: bool = False,
    default_model: Callable[[], Path] | None = None,
) -> WritePlan:
    """Every check of a ``write``/``demo`` run, in order, none of them loading a model: the
    options, the chapter, the outputs, then the model's header. ``default_model()`` gives the
    model when ``model`` is None (the demo's toy model)."""
    request = request_from_args(args)
    load_options_from_args(args)
    run_options_from_args(args)
    chapter = read_chapter(chapter_path)
    try:
        request = request.for_chapter(chapter)  # its language: read from the text, or checked against it
    except InputError as exc:
        raise exc.renamed(REQUEST_FLAGS) from None  # --language, as typed
    reading = None
    if getattr(args, "reading", None) is not None:  # refused before any model loads
        reading = load_corrections(args.reading, source_map(chapter, request.language))
    derived = derived_outputs(output, request, storyboard=storyboard, chapter=chapter)
    check_output_file(
        output, {"the chapter": chapter_path, "the model": model, "the LoRA": args.lora}, derived=derived
    )
    if model is None:
        if default_model is None:
            raise InputError("--model is missing: give the GGUF model file")
        model = default_model()
        check_output_file(output, {"the model": model}, derived=derived)
    check_model_args(args, model)
    return WritePlan(chapter_path, chapter, request, model, output, storyboard, reading)


class ProgressLog:
    """Logs generation progress every 10% of the token budget."""

    def __init__(self) -> None:
        self.last = -1

    def __call__(self, done: int, total: int) -> None:
        step = (10 * done) // max(total, 1)
        if step != self.last:
            self.last = step
            log.info("generating: %d / %d tokens (budget)", done, total)


def save_storyboard(screenplay: Screenplay, output: Path) -> list[Path]:
    """The screenplay's storyboard page(s), lettered, as ``storyboard_path(output, n)`` PNGs."""
    from ..page.render import compose_pages, save_page  # Pillow: loaded only to draw

    composed = compose_pages(screenplay, [], cards=True)
    for problem in composed.problems:
        log.warning("storyboard: %s", problem)
    return [save_page(page, storyboard_path(output, n)) for n, page in enumerate(composed.pages, 1)]


def log_dialogue_kept(chapter: str, screenplay: Screenplay, what: str) -> None:
    """How many of the chapter's quoted lines ``screenplay`` kept, and a warning when few."""
    kept = dialogue_kept(chapter, screenplay)
    log.info("%s: %s", what, fidelity_report(chapter, screenplay))
    if kept.warning:
        log.warning("%s: %s", what, kept.warning)


def run_write(llm: LLM, plan: WritePlan) -> list[Path]:
    """Write the screenplay (and its plan, and its storyboard when asked); the files written,
    the screenplay first."""
    log.info("read: %s", reading_summary(plan.chapter, plan.request.language, plan.reading))
    result = write_screenplay(
        llm, plan.chapter, plan.request, context=CallContext(on_progress=ProgressLog()), reading=plan.reading
    )
    screenplay = result.screenplay
    text = json.dumps(screenplay.model_dump(mode="json"), ensure_ascii=False, indent=2) + "\n"
    if result.thinking:  # the plan first: a screenplay on disk always has its plan beside it
        write_atomic(thinking_path(plan.output), result.thinking + "\n")
    write_atomic(plan.output, text)
    log.info("wrote %s: %s", plan.output, result.summary())
    log_dialogue_kept(plan.chapter, screenplay, str(plan.output))
    written = [plan.output]
    if plan.storyboard:
        pictures = save_storyboard(screenplay, plan.output)
        log.info("wrote the storyboard: %s", ", ".join(str(p) for p in pictures))
        written += pictures
    return written
