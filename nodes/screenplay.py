"""Screenplay nodes: Screenwriter (chapter → screenplay) and Save Screenplay."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from comfy_api.latest import io

from ..mangaka.errors import InputError
from ..mangaka.evaluate import dialogue_kept, fidelity_report
from ..mangaka.llm.base import CallContext
from ..mangaka.llm.inprocess import release_if_asked
from ..mangaka.options import widget_names
from ..mangaka.screenplay import SeriesBible, write_screenplay
from ..mangaka.screenplay.models import MAX_SCENE_PANELS
from ..mangaka.screenplay.options import OPTIONS
from ..mangaka.screenplay.request import ScreenplayRequest, check_chapter
from ..mangaka.screenplay.scenes import AUTO, DEFAULT_SCENE_CHARS
from ..mangaka.source import source_map
from ..mangaka.source.reading import Corrections, corrections, reading_text
from . import _comfy, memory
from ._comfy import from_widgets, widget
from .bible import bible_inputs, read_series_bible, series_bible_problem
from .llm import LLM_SOCKET

log = logging.getLogger("mangaka")

SCREENPLAY = io.Custom("MANGAKA_SCREENPLAY")
MAX_CHAPTER = 9999
# off: the panels and dialogue_lines widgets; else counted from the chapter (screenplay/scenes.py).
AUTO_COUNTS = ("off", "panels", "panels and lines")


# The dialogue widget's choices → ScreenplayRequest.dialogue_from.
DIALOGUE_CHOICES = OPTIONS["dialogue_from"].widget_choices  # the widget's words → the request's
# The request's fields → the widgets that set them, to name the widget in a message (dialogue_lines).
WIDGET_NAMES = widget_names(OPTIONS)


def _screenwriter_inputs() -> list:
    """The Screenwriter's inputs, in the order the node shows them: these, then every other declared
    option's widget, optional, in declaration order (a saved workflow's widget values are
    positional: a new option goes last, and older workflows still run without it)."""
    shown = [
        LLM_SOCKET.Input("llm"),
        io.String.Input(
            "chapter", multiline=True, default="", placeholder="Paste a chapter of the novel here"
        ),
        widget(OPTIONS["language"]),
        widget(OPTIONS["panels"]),
        widget(OPTIONS["dialogue"]),
        widget(OPTIONS["max_characters"]),
        widget(OPTIONS["sampling"]),
        widget(OPTIONS["seed"], control_after_generate=True),
        widget(OPTIONS["max_attempts"]),
        widget(OPTIONS["think_tokens"], optional=True),  # optional: older workflows still run
        io.Combo.Input(
            "auto_counts",
            options=list(AUTO_COUNTS),
            default=AUTO_COUNTS[0],
            optional=True,
            tooltip="Count panels (and lines) from the chapter itself: a panel per 200 CJK or 800 "
            "other characters, lines from its quoted speech. A chapter that does not fit one call "
            f"(the context, over {DEFAULT_SCENE_CHARS} characters, more than {MAX_SCENE_PANELS} "
            "panels) is written scene by scene either way",
        ),
        *bible_inputs(),
        io.Int.Input(
            "chapter_number",
            default=1,
            optional=True,
            min=1,
            max=MAX_CHAPTER,
            tooltip="This chapter's number in the book (Split Chapters' numbers): the bible "
            "output records new characters as first seen here",
        ),
    ]
    placed = {item.id for item in shown}
    declared = [widget(o, optional=True) for o in OPTIONS.values() if o.widget and o.widget not in placed]
    reading = io.String.Input(
        "reading",
        multiline=True,
        default="",
        optional=True,
        tooltip="The chapter's reading (the report shows it; `python -m mangaka read CHAPTER --json` "
        "writes it as JSON), corrected by you and pasted here: its speakers, names and title are forced",
    )
    return [*shown, *declared, reading]


def _screenwriter_outputs() -> list:
    return [
        SCREENPLAY.Output(display_name="screenplay"),
        io.String.Output(display_name="json"),
        io.String.Output(display_name="thinking"),
        io.String.Output(
            display_name="report",
            tooltip="Counts, tries, tokens, and every repair made without asking the model again",
        ),
        io.String.Output(
            display_name="bible",
            tooltip="The series bible with this chapter's new characters added (without a bible "
            "in: the bible of this screenplay's cast); for the next chapter or Save Series Bible",
        ),
    ]


class Screenwriter(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaScreenwriter",
            display_name="Screenwriter",
            category="Mangaka",
            description="Turn a novel chapter into a structured manga screenplay (characters, dialogue, "
            "panels), guaranteed to match schemas/screenplay.schema.json.",
            inputs=_screenwriter_inputs(),
            outputs=_screenwriter_outputs(),
        )

    @classmethod
    def validate_inputs(
        cls,
        chapter: str | None = None,
        bible: str | None = None,
        bible_file: str | None = None,
        auto_counts: str | None = None,
        reading: str | None = None,
        **widgets,
    ) -> bool | str:
        # Widget values arrive here; a linked input is None until it runs (checked then, in execute).
        try:
            if chapter is not None:
                check_chapter(chapter, "the chapter")
            request = _request(widgets, auto_counts or AUTO_COUNTS[0])
            if chapter is not None:
                _corrections(reading, chapter, request.for_chapter(chapter))
        except InputError as exc:
            return f"Screenwriter: {exc}"
        if problem := series_bible_problem(bible, bible_file):
            return f"Screenwriter: {problem}"
        return True

    @classmethod
    def execute(
        cls,
        llm,
        chapter: str,
        bible: str | None = None,
        bible_file: str | None = None,
        chapter_number: int = 1,
        auto_counts: str = AUTO_COUNTS[0],
        reading: str | None = None,
        **widgets,
    ) -> io.NodeOutput:
        memory.check_hooks()  # the LLM loads here again after a release: its room asked for
        check_chapter(chapter, "the chapter")
        request = _request(widgets, auto_counts).for_chapter(chapter)
        corrected = _corrections(reading, chapter, request)
        series = read_series_bible(bible, bible_file)
        try:
            with _comfy.comfy_interrupts():
                result = write_screenplay(
                    llm,
                    chapter,
                    request,
                    bible=series,
                    context=CallContext(on_progress=_comfy.progress(), cancel=_comfy.cancel_requested()),
                    reading=corrected,
                )
        finally:
            release_if_asked(llm, "Screenwriter")
        data = result.screenplay.model_dump(mode="json")
        text = json.dumps(data, ensure_ascii=False, indent=2)
        kept = dialogue_kept(chapter, result.screenplay)
        report = f"{result.report()}\n{fidelity_report(chapter, result.screenplay)}"
        shown = source_map(chapter, request.language)
        report += "\n\nreading (correct it and paste it as JSON into the reading input):\n"
        report += reading_text(corrected.apply(shown) if corrected else shown)
        if warning := kept.advice("dialogue_lines"):
            log.warning("Screenwriter: %s", warning)
            report += f"\nwarning: {warning}"
        learned = (series or SeriesBible()).updated_with(result.screenplay, chapter_number)
        return io.NodeOutput(data, text, result.thinking, report, learned.to_json())


def _corrections(reading: str | None, chapter: str, request: ScreenplayRequest) -> Corrections | None:
    """The reading input (a corrected reading as JSON) for this chapter, or None when it is empty."""
    if not reading or not reading.strip():
        return None
    try:
        data = json.loads(reading)
    except RecursionError:
        raise InputError(
            "reading: nested too deeply to be a reading; paste the JSON of `read --json`"
        ) from None
    except ValueError as exc:
        raise InputError(
            f"reading: not JSON ({exc}); paste the JSON of `python -m mangaka read --json`"
        ) from None
    return corrections(data, source_map(chapter, request.language))


def _request(widgets: Mapping[str, Any], auto_counts: str = "off") -> ScreenplayRequest:
    """The node's widgets (by name) as a checked request: each from its declaration, a widget not
    given (linked, or older workflows without it) at its declared default; a message names the
    widget, not the engine's field."""
    if auto_counts not in AUTO_COUNTS:
        raise InputError(f"auto_counts {auto_counts!r} is not one of: {', '.join(AUTO_COUNTS)}")
    fields = from_widgets(OPTIONS, widgets)
    if "dialogue_from" in fields:
        if fields["dialogue_from"] not in DIALOGUE_CHOICES:
            raise InputError(
                f"dialogue {fields['dialogue_from']!r} is not one of: {', '.join(DIALOGUE_CHOICES)}"
            )
        fields["dialogue_from"] = DIALOGUE_CHOICES[fields["dialogue_from"]]
    if auto_counts != "off":
        fields["panels"] = AUTO
    if auto_counts == "panels and lines":
        fields["dialogue"] = AUTO
    try:
        return ScreenplayRequest(**fields)
    except InputError as exc:
        raise exc.renamed(WIDGET_NAMES) from None


class SaveScreenplay(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaSaveScreenplay",
            display_name="Save Screenplay",
            category="Mangaka",
            description="Save the screenplay as JSON in ComfyUI's output folder (never overwrites a file).",
            inputs=[
                SCREENPLAY.Input("screenplay"),
                io.String.Input("filename_prefix", default="mangaka/screenplay"),
            ],
            outputs=[io.String.Output(display_name="path")],
            is_output_node=True,
        )

    @classmethod
    def validate_inputs(cls, filename_prefix: str | None = None, **_kw) -> bool | str:
        if filename_prefix is not None and (not filename_prefix.strip() or ".." in filename_prefix):
            return "Save Screenplay: filename_prefix must be a relative name like mangaka/screenplay"
        return True

    @classmethod
    def execute(cls, screenplay: dict, filename_prefix: str) -> io.NodeOutput:
        text = json.dumps(screenplay, ensure_ascii=False, indent=2) + "\n"
        path, item = _comfy.save_output(text, filename_prefix, ".json")
        return io.NodeOutput(str(path), ui={"text": [f"saved {path.name}"], "files": [item]})


NODES = [Screenwriter, SaveScreenplay]
