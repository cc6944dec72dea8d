"""Compose nodes: Screenplay → SD Prompts (the "JSON Parse" node) and Storyboard."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import folder_paths
from comfy_api.latest import io, ui

from ..mangaka.compose import (
    MODES,
    ClipTokenizer,
    build_bible,
    compile_prompts,
    load_bible_file,
    parse_bible_text,
    screenplay_from_text,
    style_names,
)
from ..mangaka.errors import InputError
from ..mangaka.page.storyboard import DEFAULT_HEIGHT, DEFAULT_WIDTH, MAX_SIDE, MIN_SIDE, render_card
from ..mangaka.screenplay.models import Screenplay
from ..mangaka.screenplay.validate import load_screenplay
from . import _comfy
from ._comfy import BIBLE_FOLDER, bible_files, bible_path
from .screenplay import SCREENPLAY

log = logging.getLogger("mangaka")


@lru_cache(maxsize=1)
def _clip_tokenizer() -> ClipTokenizer | None:
    """CLIP's tokenizer files as ComfyUI ships them, for exact token counts; None if absent."""
    folder = Path(folder_paths.base_path) / "comfy" / "sd1_tokenizer"
    try:
        return ClipTokenizer.from_folder(folder)
    except (OSError, ValueError) as exc:
        log.warning("CLIP tokenizer files not readable in %s (%s); token counts are estimates", folder, exc)
        return None


def screenplay_inputs() -> list:
    """The two ways a screenplay comes in: the Screenwriter's output, or raw text from any LLM node."""
    return [
        SCREENPLAY.Input("screenplay", optional=True),
        io.String.Input(
            "json_text",
            multiline=True,
            default="",
            optional=True,
            tooltip="Screenplay JSON from any LLM node when no screenplay is connected: code fences, "
            "<think> blocks and prose around it are removed",
        ),
    ]


def read_screenplay(screenplay: dict | None, json_text: str | None, node: str) -> Screenplay:
    """The screenplay a node was given: the Screenwriter's, or one found in raw LLM text."""
    if screenplay is not None:
        return load_screenplay(screenplay, source=f"{node}: screenplay")
    if json_text and json_text.strip():
        return screenplay_from_text(json_text, source=f"{node}: json_text")
    raise InputError(
        f"{node}: connect a screenplay (from Screenwriter) or JSON text (from any LLM node) to json_text"
    )


BALLOON_ROOM = ("style default", "on", "off")


class ScreenplayToPrompts(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaScreenplayToPrompts",
            display_name="Screenplay → SD Prompts (JSON Parse)",
            category="Mangaka",
            description="Compile a screenplay into one Stable Diffusion prompt per panel (as lists, so one "
            "queued run draws every panel), with a character bible for consistent looks.",
            inputs=[
                *screenplay_inputs(),
                io.Combo.Input("style", options=style_names(), default="manga_bw"),
                io.Combo.Input(
                    "mode",
                    options=list(MODES),
                    default="tags",
                    tooltip="tags: SD1.5/SDXL/Illustrious/Pony; natural: Flux/SD3/Qwen-Image",
                ),
                io.String.Input(
                    "bible",
                    multiline=True,
                    default="",
                    optional=True,
                    tooltip='Character bible JSON: {"characters": [{"id", "appearance", "trigger"}]}',
                ),
                io.Combo.Input(
                    "bible_file",
                    options=bible_files(),
                    default=_comfy.NONE,
                    optional=True,
                    tooltip=f"A bible .json in ComfyUI's input/{BIBLE_FOLDER} folder",
                ),
                io.Combo.Input(
                    "balloon_room",
                    options=list(BALLOON_ROOM),
                    default=BALLOON_ROOM[0],
                    optional=True,
                    tooltip="Ask each panel with lines for empty space for its balloons, in the style's "
                    "words (style default: on for manga_bw and manhua_ink)",
                ),
            ],
            outputs=[
                io.String.Output(display_name="positive", is_output_list=True),
                io.String.Output(display_name="negative"),
                io.String.Output(display_name="captions", is_output_list=True),
                io.String.Output(display_name="dialogue", is_output_list=True),
                io.String.Output(display_name="panel_ids", is_output_list=True),
                io.Int.Output(display_name="panel_count"),
                SCREENPLAY.Output(display_name="screenplay"),
                io.String.Output(display_name="report"),
            ],
        )

    @classmethod
    def validate_inputs(
        cls,
        style: str | None = None,
        mode: str | None = None,
        bible: str | None = None,
        bible_file: str | None = None,
        **_kw,
    ) -> bool | str:
        # ComfyUI leaves every input a node validates itself to that node, combos included.
        if style is not None and style not in style_names():
            return (
                f"Screenplay → SD Prompts: style preset {style!r} does not exist; choose one of: "
                + ", ".join(style_names())
            )
        if mode is not None and mode not in MODES:
            return f"Screenplay → SD Prompts: mode {mode!r} is not one of: {', '.join(MODES)}"
        if bible:
            try:
                parse_bible_text(bible, source="bible")
            except InputError as exc:
                return f"Screenplay → SD Prompts: {exc}"
        if bible_file not in (None, _comfy.NONE):
            try:
                if not bible_path(bible_file).is_file():
                    return (
                        f"Screenplay → SD Prompts: bible file {bible_file} not found in input/{BIBLE_FOLDER}"
                    )
            except InputError as exc:
                return f"Screenplay → SD Prompts: {exc}"
        return True

    @classmethod
    def execute(
        cls,
        style: str,
        mode: str,
        screenplay: dict | None = None,
        json_text: str | None = None,
        bible: str | None = None,
        bible_file: str | None = None,
        balloon_room: str = "style default",
    ) -> io.NodeOutput:
        node = "Screenplay → SD Prompts"
        if balloon_room not in BALLOON_ROOM:
            raise InputError(
                f"{node}: balloon_room {balloon_room!r} is not one of: {', '.join(BALLOON_ROOM)}"
            )
        parsed = read_screenplay(screenplay, json_text, node)
        overrides = []
        if bible_file not in (None, _comfy.NONE):
            overrides += load_bible_file(bible_path(bible_file))
        if bible and bible.strip():
            overrides += parse_bible_text(bible, source="bible")  # typed entries win over the file's
        tokenizer = _clip_tokenizer()
        compiled = compile_prompts(
            parsed,
            style=style,
            mode=mode,
            bible=build_bible(parsed, overrides),
            count_tokens=tokenizer.count if tokenizer else None,
            token_counter="CLIP BPE" if tokenizer else "estimate",
            balloon_room={"on": True, "off": False}.get(balloon_room),
        )
        for warning in compiled.warnings:
            log.warning("%s: %s", node, warning)
        panels = compiled.panels
        report = compiled.report()
        return io.NodeOutput(
            [p.positive for p in panels],
            compiled.negative,
            [p.caption for p in panels],
            [p.dialogue for p in panels],
            [p.id for p in panels],
            len(panels),
            parsed.model_dump(mode="json"),
            report,
            ui=ui.PreviewText(report),
        )


class Storyboard(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="MangakaStoryboard",
            display_name="Storyboard",
            category="Mangaka",
            description="One sketch card per panel (shot, angle, action, characters, dialogue) to check the "
            "script before spending GPU time on diffusion. Chinese, Japanese and English text.",
            inputs=[
                *screenplay_inputs(),
                io.Int.Input("width", default=DEFAULT_WIDTH, min=MIN_SIDE, max=MAX_SIDE, step=8),
                io.Int.Input("height", default=DEFAULT_HEIGHT, min=MIN_SIDE, max=MAX_SIDE, step=8),
            ],
            outputs=[io.Image.Output(display_name="cards")],
        )

    @classmethod
    def execute(
        cls, width: int, height: int, screenplay: dict | None = None, json_text: str | None = None
    ) -> io.NodeOutput:
        import numpy as np
        import torch

        parsed = read_screenplay(screenplay, json_text, "Storyboard")
        bar = _comfy.Progress(len(parsed.panels))
        cards = []
        for i in range(len(parsed.panels)):
            card = render_card(parsed, i, width, height)
            cards.append(torch.from_numpy(np.asarray(card, dtype=np.float32) / 255.0))
            bar(i + 1, len(parsed.panels))
        return io.NodeOutput(torch.stack(cards))


NODES = [ScreenplayToPrompts, Storyboard]
