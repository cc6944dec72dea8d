"""From command-line arguments to a run, with every input checked before any model loads.

``write``, ``demo`` and ``book`` build their runs here, so an option means the same in each:

- ``request_from_args(args)``: the ``ScreenplayRequest`` (``--panels --dialogue --language
  --sampling --seed --attempts --think``);
- ``load_options_from_args(args)``: the ``LoadOptions`` (``--ctx --gpu-layers --threads
  --flash-attn``), and ``check_lora_scale`` for ``--lora-scale``;
- ``check_output_file`` / ``check_output_folder``: the output's folder exists and can be written,
  and no output is one of the inputs (``-o chapter.txt`` would overwrite the chapter);
- ``check_model_args(args, model)``: the model's (and LoRA's) GGUF header, read without loading;
- ``open_llm(args, model)``: the LLM, in-process (``--model``) or remote (``book --remote``).

``prepare_write`` runs the checks in order (options, chapter, outputs, model header) and only
then does ``open_llm`` load the model: a bad input costs well under a second, never a model load.
Every refusal is an ``InputError`` (or ``ModelFileError``/``LoraError``) naming the option as it
is typed on the command line and the fix.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .batch.book import BIBLE_FILE, Selection, select_chapters
from .batch.options import BOOK_OPTIONS
from .errors import InputError, MangakaError
from .llm.base import LLM, CallContext
from .llm.inprocess import LoadOptions, check_lora_scale
from .llm.options import LOAD_OPTIONS
from .options import fields_from_args, flag_names
from .page.options import PAGE_OPTIONS
from .screenplay.bible import load_series_bible
from .screenplay.models import Screenplay
from .screenplay.options import OPTIONS, request_fields_from_args
from .screenplay.request import ScreenplayRequest, check_chapter
from .screenplay.scenes import auto_panels
from .source import source_map
from .source.reading import Corrections, load_corrections, reading_summary

if TYPE_CHECKING:
    from .page.layout import LayoutOptions

log = logging.getLogger("mangaka")

# The engine's field for a value → the option that sets it, to name the option in a message.
REQUEST_FLAGS = flag_names(OPTIONS)
LOAD_FLAGS = flag_names(LOAD_OPTIONS)
PAGE_FLAGS = flag_names(PAGE_OPTIONS)
STORYBOARD_SUFFIX = ".storyboard"


def request_from_args(args: argparse.Namespace) -> ScreenplayRequest:
    """The screenplay options of ``write``, ``demo`` or ``book``, checked."""
    try:
        return ScreenplayRequest(**request_fields_from_args(args))
    except InputError as exc:
        raise exc.renamed(REQUEST_FLAGS) from None


def load_options_from_args(args: argparse.Namespace) -> LoadOptions:
    """How to load ``--model``, checked (``--lora-scale`` too, though it is applied after load)."""
    fields = fields_from_args(args, LOAD_OPTIONS)
    try:
        check_lora_scale(fields.pop("lora_scale"))
        fields.pop("jump_forward")  # the LLM's, not the load's: checked by the LLM
        return LoadOptions(**fields)
    except InputError as exc:
        raise exc.renamed(LOAD_FLAGS) from None


# ------------------------------------------------------------------------------------- paths


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _check_writable_folder(folder: Path, flag: str, output: Path, *, may_create: bool) -> None:
    """``folder`` is a folder this process can write into (or, with ``may_create``, can create)."""
    probe = folder
    while not probe.exists() and probe != probe.parent:
        if not may_create:
            raise InputError(
                f"{flag} {output}: the folder {folder} does not exist; create it first "
                f"(mkdir -p {folder}) or give a path in an existing folder"
            )
        probe = probe.parent
    if not probe.is_dir():
        raise InputError(f"{flag} {output}: {probe} is a file, not a folder; give a path in a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError(
            f"{flag} {output}: the folder {probe} is not writable by this user; "
            "give a path in a folder you can write to"
        )
    _probe_write(probe, flag, output)


def _probe_write(folder: Path, flag: str, output: Path) -> None:
    """Make and remove a file in ``folder``: the permission bits do not tell everything (root
    passes ``os.access`` on a read-only or virtual file system such as /proc)."""
    try:
        fd, name = tempfile.mkstemp(prefix=".mangaka-probe-", dir=folder)
    except OSError as exc:
        raise InputError(
            f"{flag} {output}: cannot write in the folder {folder} ({exc.strerror or exc}); "
            "give a path in a folder you can write to"
        ) from None
    os.close(fd)
    os.unlink(name)


def make_output_folder(folder: Path, flag: str, output: Path) -> Path:
    """Create ``folder`` (and its parents) and prove a file can be written in it: the last check
    of a run that writes there, so nothing fails to save after the model has worked."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"{flag} {output}: the folder {folder} cannot be made ({exc.strerror or exc}); "
            "give a path in a folder you can write to"
        ) from None
    _probe_write(folder, flag, output)
    return folder


def _check_not_an_input(outputs: Mapping[str, Path], inputs: Mapping[str, Path | None], flag: str) -> None:
    for what, path in outputs.items():
        for name, source in inputs.items():
            if source is not None and _same_file(path, source):
                where = f"{flag} {path}" if what == "output" else f"the {what} {path} (named after {flag})"
                raise InputError(
                    f"{where} is {name} {source}: writing it would overwrite {name}; "
                    f"give {flag} another file name"
                )


def check_output_file(
    output: Path,
    inputs: Mapping[str, Path | None],
    *,
    derived: Mapping[str, Path] | None = None,
    flag: str = "-o",
) -> Path:
    """Refuse an output file that cannot be written or that is one of ``inputs`` (by name → path).

    ``derived``: the files written beside it (the plan, the storyboard), checked against the
    inputs too. Returns ``output``."""
    from .fileio import NAME_MAX, file_kind, name_too_long, written_through

    for path in (output, *(derived or {}).values()):
        if name_too_long(path):
            raise InputError(
                f"{flag} {output}: the file name {path.name[:40]}… is {len(os.fsencode(path.name))} bytes, "
                f"more than the {NAME_MAX} a file name may have; give a shorter name"
            )
    if output.is_dir():
        raise InputError(
            f"{flag} {output} is a folder; give a file name in it, e.g. {output / 'chapter.screenplay.json'}"
        )
    try:
        kind = file_kind(os.stat(output).st_mode)
    except OSError:
        kind = None  # absent (or unreachable: the folder checks below say why)
    if kind is not None and kind != "file":
        if not written_through(kind):
            raise InputError(f"{flag} {output} is a {kind}, which Mangaka never replaces; give a file path")
        if derived:
            beside = ", ".join(str(p) for p in derived.values())
            raise InputError(
                f"{flag} {output} is a {kind}: the files written beside the screenplay ({beside}) would "
                "land in its folder; give a file path, or leave out the options that write them"
            )
        return output  # written through, as a shell redirection would (fileio.write_atomic)
    _check_writable_folder(output.parent, flag, output, may_create=False)
    _check_not_an_input({"output": output, **(derived or {})}, inputs, flag)
    return output


def check_output_folder(
    folder: Path, inputs: Mapping[str, Path | None], *, flag: str = "-o", what: str = "the screenplays"
) -> Path:
    """Refuse an output folder that is a file, or that cannot be made or written."""
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{flag} {folder} is a file, not a folder; give a folder for {what}")
    _check_writable_folder(folder, flag, folder, may_create=True)
    _check_not_an_input({"output": folder}, inputs, flag)
    return folder


def storyboard_path(output: Path, page: int = 1) -> Path:
    """The storyboard picture beside the screenplay ``output``: ``X.json`` and
    ``X.screenplay.json`` both give ``X.storyboard.png``; page 2 on: ``X.storyboard-2.png``."""
    stem = output.name
    for suffix in (".json", ".screenplay"):
        if stem.lower().endswith(suffix) and len(stem) > len(suffix):
            stem = stem[: -len(suffix)]
    number = "" if page == 1 else f"-{page}"
    return output.with_name(f"{stem}{STORYBOARD_SUFFIX}{number}.png")


def thinking_path(output: Path) -> Path:
    """The plan beside the screenplay ``output`` (``--think``)."""
    return output.with_suffix(".thinking.txt")


def storyboard_page_count(panels: int) -> int:
    from .page.layout import LayoutOptions, page_sizes

    return len(page_sizes(panels, LayoutOptions().panels_per_page))


# ------------------------------------------------------------------------------------- model


def read_chapter(path: Path) -> str:
    """A chapter file's text (UTF-8, UTF-16 with a BOM or GB18030), refused when there is nothing
    to adapt in it."""
    from .chapters import read_book

    if path.is_dir():
        raise InputError(f"chapter file {path} is a folder; give a text file with the chapter")
    if not path.exists():
        raise InputError(f"chapter file {path} not found; give the path of a text file with the chapter")
    return check_chapter(read_book(path, "chapter file"), f"chapter file {path}")


def check_model_args(args: argparse.Namespace, model: Path) -> None:
    """``model`` (and ``--lora``) are GGUF files llama.cpp can load: their headers only are read."""
    from .llm.inprocess import check_lora_file, check_model_file

    info = check_model_file(model)
    if args.lora is not None:
        check_lora_file(args.lora, info.architecture, model.name)


def open_llm(args: argparse.Namespace, model: Path | None = None) -> LLM:
    """The LLM the arguments name: ``model`` (default ``--model``) loaded in-process, with
    ``--lora`` at ``--lora-scale``, or ``--remote`` (``book``). Loading is the slow part: check first."""
    if getattr(args, "remote", None):
        from .llm.openai import OpenAICompatibleLLM

        return OpenAICompatibleLLM(
            args.remote, args.remote_model, api_key_env=args.api_key_env, concurrency=args.concurrency
        )
    from .llm import inprocess

    model = model or args.model
    llm = inprocess.LlamaCppLLM(
        model,
        load_options_from_args(args),
        args.lora,
        args.lora_scale,
        jump_forward=getattr(args, "jump_forward", inprocess.DEFAULT_JUMP_FORWARD),
    )
    log.info("model: %s", llm.model.report())
    return llm


# ------------------------------------------------------------------------------------- write


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
    chapter = read_chapter(chapter_path)
    request = request.for_chapter(chapter)  # its language: read from the text, or checked against it
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
    from .page.render import compose_pages, save_page

    composed = compose_pages(screenplay, [], cards=True)
    for problem in composed.problems:
        log.warning("storyboard: %s", problem)
    return [save_page(page, storyboard_path(output, n)) for n, page in enumerate(composed.pages, 1)]


def log_dialogue_kept(chapter: str, screenplay: Screenplay, what: str) -> None:
    """How many of the chapter's quoted lines ``screenplay`` kept, and a warning when few."""
    from .evaluate import dialogue_kept, fidelity_report

    kept = dialogue_kept(chapter, screenplay)
    log.info("%s: %s", what, fidelity_report(chapter, screenplay))
    if kept.warning:
        log.warning("%s: %s", what, kept.warning)


def run_write(llm: LLM, plan: WritePlan) -> list[Path]:
    """Write the screenplay (and its plan, and its storyboard when asked); the files written,
    the screenplay first."""
    from .fileio import write_atomic
    from .screenplay import write_screenplay

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


# -------------------------------------------------------------------------------------- page

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp")
PAGE_NAME = re.compile(r"page_\d{3,}\.(?:png|jpg)")  # the only names `page` writes, or removes
LAYOUT_FILE = "layout.json"


MAX_IMAGE_BYTES = 512 * 1024 * 1024  # a 16k × 16k RGBA PNG is far below; Pillow refuses bombs too


def read_panel_images(folder: Path, flag: str = "--images") -> list[Any]:
    """The pictures in ``folder`` in name order (one per panel, in reading order), each decoded
    now: a file Pillow cannot read is refused by name before any page is drawn."""
    from PIL import Image

    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise InputError(f"{flag} {folder} {what}; give the folder that holds the panel images")
    from .fileio import check_input_file

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
    images = []
    for path in files:
        try:
            image = Image.open(path)
            image.load()  # decoded here: a truncated file fails now, naming itself
        except (OSError, ValueError, EOFError, SyntaxError, Image.DecompressionBombError) as exc:
            raise InputError(
                f"{flag}: {path} is not an image Pillow can read ({exc}); replace it, or move it out "
                f"of {folder}"
            ) from None
        images.append(image)
    return images


def page_options(args: argparse.Namespace) -> tuple[LayoutOptions, Callable[[str], tuple[Any, dict]]]:
    """``page``'s layout (``--width/--height`` with ``--page custom``) and its lettering for a
    screenplay's language, every flag checked now, each error naming its flag."""
    from .page.layout import CUSTOM, preset_size
    from .page.options import PAGE_OPTIONS, layout_from, lettering_from

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
    from .fileio import read_text

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
    from .fileio import write_atomic
    from .page.render import save_page

    earlier = _owned_pages(folder)
    ext = fmt.replace("jpeg", "jpg")
    written = [save_page(p, folder / f"page_{i:03d}.{ext}", fmt) for i, p in enumerate(composed.pages, 1)]
    layout = {"files": [p.name for p in written], **composed.layout_json()}
    write_atomic(folder / LAYOUT_FILE, json.dumps(layout, indent=2) + "\n")
    for name in sorted(earlier - {p.name for p in written}):
        (folder / name).unlink(missing_ok=True)
        log.info("removed %s, a page of the earlier run this one replaces", folder / name)
    return written


# -------------------------------------------------------------------------------------- book


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
    if args.book.is_dir():
        raise InputError(f"book {args.book} is a folder; give the book's text file")
    selection = select_chapters(args.book, args.chapters)
    inputs = {"the book": args.book, "the model": args.model, "the LoRA": args.lora}
    check_output_folder(args.out, inputs)
    bible = getattr(args, "bible", None) or args.out / BIBLE_FILE
    _check_not_an_input({"output": bible}, inputs, "--bible")
    if bible.is_dir():
        raise InputError(f"--bible {bible} is a folder; give the bible's file, e.g. {bible / BIBLE_FILE}")
    _check_writable_folder(bible.parent, "--bible", bible, may_create=True)
    load_series_bible(bible, missing_ok=True)  # a bad bible is refused before the model loads
    if args.model:
        check_model_args(args, args.model)
    make_output_folder(args.out, "-o", args.out)  # last: every other check passed
    make_output_folder(bible.parent, "--bible", bible)
    return BookPlan(request, args.out, concurrency, selection, bible)


def run_book(llm: LLM, args: argparse.Namespace, plan: BookPlan) -> int:
    """Write every selected chapter's screenplay; prints the files written and the failures."""
    from .batch.book import write_book

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


__all__ = [
    "BookPlan",
    "WritePlan",
    "check_model_args",
    "check_output_file",
    "check_output_folder",
    "load_options_from_args",
    "open_llm",
    "prepare_book",
    "prepare_write",
    "read_chapter",
    "request_from_args",
    "run_book",
    "run_write",
    "save_storyboard",
    "storyboard_path",
]
