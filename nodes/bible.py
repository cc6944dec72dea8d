"""Series bible nodes: Series Cast (a book's first pass) and Save Series Bible; the bible inputs
the Screenwriter shares with them.

A bible comes in as JSON text (``bible``, e.g. linked from Series Cast) or as a file of ComfyUI's
``input/mangaka_bibles`` folder (``bible_file``); with both, the text is used. It goes out as JSON
text, so any text node can show or edit it, and Save Series Bible writes it into the output folder.
"""

from __future__ import annotations

import logging
from typing import Any

from comfy_api.latest import io, ui

from ..mangaka.errors import InputError
from ..mangaka.llm.base import CallContext
from ..mangaka.llm.inprocess import release_if_asked
from ..mangaka.options import widget_names
from ..mangaka.screenplay import (
    ScreenplayRequest,
    SeriesBible,
    load_series_bible,
    parse_series_bible,
    write_cast,
)
from ..mangaka.screenplay.options import OPTIONS
from ..mangaka.screenplay.request import check_chapter
from ..mangaka.screenplay.scenes import AUTO
from . import _comfy
from ._comfy import BIBLE_FOLDER, NONE, bible_files, bible_path, from_widgets, widget
from .llm import LLM_SOCKET

log = logging.getLogger("mangaka")

STEPS_PER_CHAPTER = 1000  # the Series Cast bar: each chapter's tokens as a share of its slice


def bible_inputs() -> list:
    """The two optional ways a series bible comes in: JSON text, or a file in input/mangaka_bibles."""
    return [
        io.String.Input(
            "bible",
            multiline=True,
            default="",
            optional=True,  # workflows saved before it existed still run
            tooltip="Series bible JSON (one id, name and look per person across the book), e.g. from "
            "Series Cast; empty = none. Used instead of bible_file when both are given",
        ),
        io.Combo.Input(
            "bible_file",
            options=bible_files(),
            default=NONE,
            optional=True,
            tooltip=f"A series bible .json in ComfyUI's input/{BIBLE_FOLDER} folder",
        ),
    ]


def _file_bible(bible_file: str) -> SeriesBible:
    path = bible_path(bible_file)
    if not path.is_file():
        raise InputError(
            f"bible_file {bible_file!r} is not in input/{BIBLE_FOLDER}; put the file there and refresh, "
            "or choose none"
        )
    return load_series_bible(path)


def read_series_bible(bible: str | None, bible_file: str | None) -> SeriesBible | None:
    """The bible a node was given (the text wins over the file); None when neither is given.
    ``InputError`` names the input and the field to fix."""
    if bible and bible.strip():
        if bible_file not in (None, NONE):
            log.warning("bible and bible_file are both given: using the bible text, not %s", bible_file)
        return parse_series_bible(bible, source="bible")
    if bible_file not in (None, NONE):
        return _file_bible(bible_file)
    return None


def series_bible_problem(bible: str | None, bible_file: str | None) -> str | None:
    """What is wrong with a bible typed in or chosen as a file (linked ones arrive as None), else None."""
    try:
        read_series_bible(bible, bible_file)
    except InputError as exc:
        return str(exc)
    return None


def _first(value):
    """An input-list node's widget value: a list of one."""
    return value[0] if isinstance(value, list) and value else value


class SeriesCast(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaSeriesCast",
            display_name="Series Cast",
            category="Mangaka",
            description="A book's first pass: the cast of every chapter, in order, each shown the "
            "characters the chapters before it met, so one person keeps one id across the book. "
            "Connect its bible to each Screenwriter's bible.",
            inputs=[
                LLM_SOCKET.Input("llm"),
                io.String.Input(
                    "chapters",
                    multiline=True,
                    default="",
                    tooltip="The chapters, in order (Split Chapters' chapter_text), or one chapter's text",
                ),
                *(widget(OPTIONS[f]) for f in ("language", "max_characters", "sampling")),
                widget(OPTIONS["seed"], control_after_generate=True),
                *bible_inputs(),
                io.Int.Input(
                    "numbers",
                    optional=True,
                    force_input=True,
                    tooltip="The chapters' numbers in the book (Split Chapters' numbers), recorded as "
                    "where each person first appears; unconnected: 1, 2, 3…",
                ),
            ],
            outputs=[io.String.Output(display_name="bible", tooltip="The series bible as JSON text")],
            is_input_list=True,
        )

    @classmethod
    def validate_inputs(
        cls, bible: list | None = None, bible_file: list | None = None, **widgets
    ) -> bool | str:
        try:
            _request(widgets)
        except InputError as exc:
            return f"Series Cast: {exc}"
        if problem := series_bible_problem(_first(bible), _first(bible_file)):
            return f"Series Cast: {problem}"
        return True

    @classmethod
    def execute(
        cls,
        llm: list,
        chapters: list[str],
        bible: list[str] | None = None,
        bible_file: list[str] | None = None,
        numbers: list[int] | None = None,
        **widgets,
    ) -> io.NodeOutput:
        model = _first(llm)
        request = _request(widgets)
        series = read_series_bible(_first(bible), _first(bible_file)) or SeriesBible()
        if numbers is not None and len(numbers) != len(chapters):
            raise InputError(
                f"Series Cast: {len(numbers)} numbers for {len(chapters)} chapters; connect Split "
                "Chapters' numbers with its chapter_text, or leave numbers unconnected"
            )
        for i, text in enumerate(chapters, 1):
            check_chapter(text, f"Series Cast: chapter {i}")
        bar = _comfy.Progress(len(chapters) * STEPS_PER_CHAPTER)
        cancel = _comfy.cancel_requested()
        try:
            with _comfy.comfy_interrupts():
                for i, text in enumerate(chapters):
                    number = numbers[i] if numbers is not None else i + 1
                    context = CallContext(_slice(bar, i, len(chapters)), cancel)
                    cast = write_cast(model, text, request, bible=series, context=context).value
                    series = series.updated_with(cast, number)
                    bar((i + 1) * STEPS_PER_CHAPTER, len(chapters) * STEPS_PER_CHAPTER)
                    log.info("Series Cast: chapter %d: %s", number, ", ".join(c.id for c in cast))
        finally:
            release_if_asked(model, "Series Cast")
        return io.NodeOutput(series.to_json(), ui=ui.PreviewText(series.listing() or "(no characters)"))


def _slice(bar: _comfy.Progress, index: int, count: int):
    """Progress of chapter ``index`` (its tokens against their budget) as its share of the bar."""
    total = count * STEPS_PER_CHAPTER

    def report(done: int, limit: int) -> None:
        bar(index * STEPS_PER_CHAPTER + STEPS_PER_CHAPTER * min(done, limit) // max(1, limit), total)

    return report


def _request(widgets: dict[str, Any]) -> ScreenplayRequest:
    """The Screenwriter options this node has (under is_input_list: each a one-item list), checked
    as their declarations say. Counts only decide where a long chapter is cut into scenes here;
    auto never refuses a chapter."""
    fields = from_widgets(OPTIONS, {name: _first(value) for name, value in widgets.items()})
    try:
        return ScreenplayRequest(panels=AUTO, dialogue=AUTO, **fields)
    except InputError as exc:
        raise exc.renamed(widget_names(OPTIONS)) from None


class SaveSeriesBible(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaSaveSeriesBible",
            display_name="Save Series Bible",
            category="Mangaka",
            description="Save the series bible as JSON in ComfyUI's output folder (never overwrites a "
            "file). Given several chapters' bibles in one run, saves one bible holding all of them.",
            inputs=[
                io.String.Input("bible", multiline=True, default="", force_input=True),
                io.String.Input("filename_prefix", default="mangaka/bible"),
            ],
            outputs=[io.String.Output(display_name="path")],
            is_output_node=True,
            is_input_list=True,
        )

    @classmethod
    def validate_inputs(cls, filename_prefix: list | None = None, **_kw) -> bool | str:
        prefix = _first(filename_prefix)
        if prefix is not None and (not prefix.strip() or ".." in prefix):
            return "Save Series Bible: filename_prefix must be a relative name like mangaka/bible"
        return True

    @classmethod
    def execute(cls, bible: list[str], filename_prefix: list[str]) -> io.NodeOutput:
        merged = SeriesBible()
        for i, text in enumerate(bible, 1):
            source = "Save Series Bible: bible" + (f" {i}" if len(bible) > 1 else "")
            merged = merged.merged(parse_series_bible(text, source=source))
        path, item = _comfy.save_output(merged.to_json(), _first(filename_prefix), ".json")
        shown = f"saved {path.name}: {len(merged)} characters"
        return io.NodeOutput(str(path), ui={"text": [shown], "files": [item]})


NODES = [SeriesCast, SaveSeriesBible]
