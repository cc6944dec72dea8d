"""Screenplays for a whole book with N chapters in flight against one LLM (``python -m mangaka book``).

Against an OpenAI-compatible server with parallel slots, N requests at once are batched by the
server; in-process, the model's lock runs them one at a time. Each chapter's screenplay is written
atomically to ``OUT/<number title>.json``; a chapter whose file exists is skipped, so a rerun
resumes. A chapter that fails is reported and the others go on; a chapter that cannot be saved
(``OSError``: a full disk, a file-size limit) stops the run, those not started are not generated,
and the ``OSError`` names the file (the chapters saved before it stay saved).

One cast across the book: a series bible (``OUT/bible.json`` unless given) is read first; a first
pass runs the cast call of every chapter to write, in chapter order, each shown the bible as the
chapters before it left it, and saves the bible (atomically) after each; then the scripts run,
``concurrency`` at a time, each with its chapter's cast and the bible as the first pass left it.
A rerun reads the bible file again, so a person's edits between two runs are kept (the rule is
in ``screenplay/bible.py``: ``edited`` entries are never touched, no appearance is rewritten).
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from ..book_file import read_book
from ..chapters import DEFAULT_MAX_CHARS, Chapter, parse_range, split_chapters
from ..errors import InputError, MangakaError
from ..evaluate import dialogue_kept, fidelity_report
from ..fileio import write_atomic
from ..llm.base import LLM, CallContext
from ..screenplay import SeriesBible, load_series_bible, save_series_bible, write_cast, write_screenplay
from ..screenplay.models import Character
from ..screenplay.request import ScreenplayRequest, check_chapter

log = logging.getLogger(__name__)

BIBLE_FILE = "bible.json"


@dataclass
class BookResult:
    written: list[Path] = field(default_factory=list)
    bible: SeriesBible = field(default_factory=SeriesBible)
    skipped: list[Path] = field(default_factory=list)
    failed: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


class Selection(NamedTuple):
    """The chapters to write, and how many the book has (for the width of the file numbers)."""

    chapters: list[Chapter]
    total: int


def select_chapters(
    book: Path, chapters: str | None = None, *, max_chars: int = DEFAULT_MAX_CHARS
) -> Selection:
    """The book's chapters that ``chapters`` (e.g. ``"3-7"``, default all) selects; ``InputError``
    for a book with nothing to adapt or a range outside it. Reads the file, loads no model."""
    text = read_book(book)
    try:
        check_chapter(text, f"book {book}")
    except InputError as exc:  # the same refusal, with the fix a book needs
        why = str(exc).rsplit(": ", 1)[0]
        raise InputError(f"{why}: give a text file with the book's chapters") from None
    found = split_chapters(text, max_chars=max_chars)
    if not found:
        raise InputError(f"book {book} has no text: give a book file with its chapters in it")
    selected = set(parse_range(chapters, len(found))) if chapters else {c.number for c in found}
    return Selection([c for c in found if c.number in selected], len(found))


def cast_pass(
    llm: LLM,
    chapters: list[Chapter],
    request: ScreenplayRequest,
    bible: SeriesBible,
    bible_path: Path,
    result: BookResult,
    context: CallContext | None = None,
) -> dict[int, list[Character]]:
    """The first pass: each chapter's cast, in order, each call shown the bible as the chapters
    before it left it; the bible saved after each. Failures go to ``result.failed``; the final
    bible to ``result.bible``. Returns each cast chapter's characters, by chapter number."""
    casts: dict[int, list[Character]] = {}
    for chapter in chapters:
        try:
            cast = write_cast(llm, chapter.text, request, bible=bible, context=context).value
        except MangakaError as exc:
            result.failed[chapter.number] = str(exc)
            log.error("chapter %d (%s): the cast call failed: %s", chapter.number, chapter.title, exc)
            continue
        casts[chapter.number] = cast
        bible = bible.updated_with(cast, chapter.number)
        save_series_bible(bible, bible_path)
        log.info("chapter %d: cast %s", chapter.number, ", ".join(c.id for c in cast))
    result.bible = bible
    return casts


def write_book(
    llm: LLM,
    book: Path,
    out: Path,
    *,
    concurrency: int = 1,
    request: ScreenplayRequest | None = None,
    selection: Selection | None = None,
    context: CallContext | None = None,
    bible: Path | None = None,
) -> BookResult:
    """Every selected chapter's screenplay, ``concurrency`` at a time; see the module docstring.

    ``request`` (default: ``ScreenplayRequest()``) applies to every chapter; it is checked once,
    before any chapter is written. ``selection``: the chapters to write, made by
    ``select_chapters(book, chapters, max_chars=…)`` (default: every chapter, at the default
    size). ``context``: how to stop the run (``cancel``), and where each chapter's progress goes
    (chapters in flight report to it in turn). ``bible``: the series bible's file (default
    ``out/bible.json``; made when missing, checked before any call)."""
    if concurrency < 1:
        raise InputError(f"concurrency must be at least 1, got {concurrency}")
    if request is None:
        request = ScreenplayRequest()
    bible_path = bible if bible is not None else out / BIBLE_FILE
    series = load_series_bible(bible_path, missing_ok=True)
    selected, total = selection or select_chapters(book)
    width = max(2, len(str(total)))
    result = BookResult()
    todo: list[tuple[Chapter, Path]] = []
    for chapter in selected:
        path = out / f"{chapter.slug(width)}.json"
        if path.exists():
            result.skipped.append(path)
        else:
            todo.append((chapter, path))

    casts = cast_pass(llm, [c for c, _ in todo], request, series, bible_path, result, context)
    series = result.bible
    todo = [(c, p) for c, p in todo if c.number in casts]

    def one(item: tuple[Chapter, Path]) -> Path:
        chapter, path = item
        cast = casts[chapter.number]
        done = write_screenplay(llm, chapter.text, request, cast=cast, bible=series, context=context)
        data = done.screenplay.model_dump(mode="json")
        if done.thinking:  # the plan first: a screenplay on disk always has its plan beside it
            write_atomic(path.with_suffix(".thinking.txt"), done.thinking + "\n")
        write_atomic(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")
        log.info("chapter %d (%s) → %s: %s", chapter.number, chapter.title, path.name, done.summary())
        kept = dialogue_kept(chapter.text, done.screenplay)
        log.info("chapter %d: %s", chapter.number, fidelity_report(chapter.text, done.screenplay))
        if kept.warning:
            log.warning("chapter %d: %s", chapter.number, kept.warning)
        for repair in done.repairs:
            log.info("chapter %d: repaired %s", chapter.number, repair)
        return path

    with concurrent.futures.ThreadPoolExecutor(
        max_workers=concurrency, thread_name_prefix="mangaka-book"
    ) as pool:
        futures = {pool.submit(one, item): item[0] for item in todo}
        for future in concurrent.futures.as_completed(futures):
            chapter = futures[future]
            try:
                result.written.append(future.result())
            except MangakaError as exc:
                result.failed[chapter.number] = str(exc)
                log.error("chapter %d (%s) failed: %s", chapter.number, chapter.title, exc)
            except OSError:  # a chapter that cannot be saved (a full disk): the rest would not be either
                for pending in futures:
                    pending.cancel()  # the chapters not started yet are not generated at all
                raise
    result.written.sort()
    return result
