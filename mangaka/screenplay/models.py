"""The stored screenplay contract: pydantic models, and the bounds that keep it finite.

Every string and every list is bounded, so the JSON Schema exported from these models has a
``maxLength`` or ``maxItems`` everywhere, and a grammar-constrained decode of it always ends within
a token budget computed from the schema (``mangaka.llm.budget``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StringConstraints,
    model_serializer,
)
from pydantic.json_schema import SkipJsonSchema

SCREENPLAY_VERSION = 2
# Version 1 (before lines recorded their quote and panels their source) is still read.
SCREENPLAY_VERSIONS = (1, 2)

# Bounds (characters for strings, items for lists). Chosen for a manga chapter: a balloon holds
# about 120 characters; a panel description is a sentence or two. One script call writes at most
# two dozen panels (a scene); a chapter written scene by scene may have up to MAX_PANELS.
MAX_ID = 32
MAX_TITLE = 80
MAX_NAME = 40
MAX_APPEARANCE = 240
MAX_LINE = 120
MAX_ACTION = 240
MAX_EXPRESSION = 120
MAX_BACKGROUND = 160
MAX_LIGHTING = 80
MAX_PROP = 32
MAX_PROPS = 4
MAX_CHARACTERS = 16  # characters one cast call may list
MAX_CAST = 48  # characters of one screenplay (a chapter's scenes together)
MAX_SCENE_PANELS = 24  # panels of one script call
MAX_SCENE_DIALOGUE = 48  # lines of one script call
MAX_PANELS = 240  # panels of one chapter
MAX_DIALOGUE = 480  # lines of one chapter
MAX_SCENES = MAX_PANELS  # scenes of one chapter (each has a panel at least)
MAX_QUOTES = 100_000  # a chapter's quoted lines (numbers in ``Line.quote``)
MAX_UNITS = 1_000_000  # a chapter's source units (numbers in ``Panel.source``)

NARRATOR = "narrator"
ID_PATTERN = r"^[a-z][a-z0-9_]{0,31}$"

Language = Literal["zh", "en", "ja", "ko", "fr", "es", "ru", "de"]
Emotion = Literal[
    "neutral",
    "happy",
    "excited",
    "sad",
    "crying",
    "angry",
    "surprised",
    "afraid",
    "worried",
    "shy",
    "embarrassed",
    "determined",
    "smug",
    "confused",
    "serious",
    "tired",
    "pained",
    "whisper",
    "shout",
    "thinking",
    "narration",
]
Shot = Literal[
    "establishing",
    "wide",
    "full",
    "medium",
    "medium_close_up",
    "close_up",
    "extreme_close_up",
    "over_the_shoulder",
    "pov",
    "insert",
]
Angle = Literal["eye_level", "high", "low", "birds_eye", "worms_eye", "dutch"]

LANGUAGES: tuple[str, ...] = get_args(Language)
EMOTIONS: tuple[str, ...] = get_args(Emotion)
SHOTS: tuple[str, ...] = get_args(Shot)
ANGLES: tuple[str, ...] = get_args(Angle)


def _text(max_length: int, min_length: int = 1) -> StringConstraints:
    return StringConstraints(min_length=min_length, max_length=max_length)


Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID, pattern=ID_PATTERN)]
# [first, last] source units of a panel (the stored contract has no unions: an absent value is None).
SourceRange = Annotated[list[Annotated[int, Field(ge=1, le=MAX_UNITS)]], Field(min_length=2, max_length=2)]


def _json_number(value: Any) -> Any:
    """A number as JSON Schema reads one: ``true`` and ``"2"`` are not (pydantic's lax mode would
    take them as 1 and 2), ``2.0`` is. So the models accept exactly what the schema accepts."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"must be a number, not {type(value).__name__} {value!r}")
    return value


JsonNumber = BeforeValidator(_json_number)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Character(_Strict):
    """A member of the cast. ``appearance`` is the canonical look reused for every image prompt."""

    id: Id = Field(description="Stable lowercase id, e.g. 'akira'; never 'narrator'.")
    name: Annotated[str, _text(MAX_NAME)] = Field(description="Name as written in the story.")
    appearance: Annotated[str, _text(MAX_APPEARANCE)] = Field(
        description="Canonical look: hair, eyes, build, clothing (for image prompts)."
    )


class Line(_Strict):
    """One line of dialogue or narration, lettered into a balloon or caption box."""

    id: Id = Field(description="'d1', 'd2', … in reading order.")
    speaker: Id = Field(description="A character id, or 'narrator' for a caption box.")
    line: Annotated[str, _text(MAX_LINE)] = Field(description="The words, in the screenplay's language.")
    emotion: Emotion = Field(description="How it is said; also picks the balloon style.")
    # The bounds sit inside the union's int branch: on the field they would reach the schema as bare
    # "ge"/"le" keys (not "minimum"/"maximum") and fail on an explicit None.
    quote: Annotated[int, Field(ge=1, le=MAX_QUOTES), JsonNumber] | SkipJsonSchema[None] = Field(
        None,
        description="The chapter's quoted line this line letters, verbatim (1 = the chapter's first "
        "quote; a long quote is lettered over consecutive lines with the same number). Absent for a "
        "caption or a line in the screenplay's own words.",
    )


class Panel(_Strict):
    """One manga panel: what the camera sees and which lines it carries."""

    id: Id = Field(description="'p1', 'p2', … in reading order.")
    shot: Shot
    angle: Angle
    action: Annotated[str, _text(MAX_ACTION)] = Field(description="What happens, as it would be drawn.")
    characters: list[Id] = Field(max_length=MAX_CHARACTERS, description="Ids of the characters shown.")
    expression: Annotated[str, _text(MAX_EXPRESSION, 0)] = Field(
        description="Facial expressions and body language ('' when nobody is shown)."
    )
    background: Annotated[str, _text(MAX_BACKGROUND)] = Field(description="Setting and scenery.")
    lighting: Annotated[str, _text(MAX_LIGHTING, 0)] = Field(description="Light, time of day, mood.")
    props: list[Annotated[str, _text(MAX_PROP)]] = Field(max_length=MAX_PROPS)
    dialogue: list[Id] = Field(
        max_length=MAX_SCENE_DIALOGUE, description="Ids of the lines in this panel, in order."
    )
    scene: Annotated[int, JsonNumber] = Field(
        1,
        ge=1,
        le=MAX_SCENES,
        description="The chapter's scene this panel belongs to (1, 2, …); a long chapter is written "
        "scene by scene. Optional: 1 when absent.",
    )
    source: SourceRange | SkipJsonSchema[None] = Field(
        None,
        description="The part of the chapter this panel draws: [first, last] source units (the "
        "chapter's paragraphs, numbered from 1; a very long paragraph is cut at sentence ends), "
        "inclusive. Absent when not known (a screenplay written before version 2, or in free mode).",
    )


class Screenplay(_Strict):
    """A chapter as a manga screenplay: the cast, the dialogue, and the panels that carry it."""

    version: Annotated[Literal[1, 2], JsonNumber] = Field(
        description="Contract version of this format (2 adds a line's quote and a panel's source; 1 is "
        "still read)."
    )
    title: Annotated[str, _text(MAX_TITLE)]
    language: Language = Field(description="Language of names, lines and descriptions.")
    characters: list[Character] = Field(min_length=1, max_length=MAX_CAST)
    dialogue: list[Line] = Field(max_length=MAX_DIALOGUE)
    panels: list[Panel] = Field(min_length=1, max_length=MAX_PANELS)

    @model_serializer(mode="wrap")
    def _scenes_only_when_there_are_some(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """A chapter written in one call is stored as before scenes existed: no ``scene`` keys."""
        data = handler(self)
        panels = data.get("panels")
        if isinstance(panels, list) and all(isinstance(p, dict) and p.get("scene", 1) == 1 for p in panels):
            for p in panels:
                p.pop("scene", None)
        # Optional references are stored only when known, so a version-1 screenplay is stored as before.
        for items, key in ((data.get("dialogue"), "quote"), (panels, "source")):
            for item in items if isinstance(items, list) else ():
                if isinstance(item, dict) and item.get(key, 0) is None:
                    item.pop(key)
        return data

    def character(self, character_id: str) -> Character | None:
        return next((c for c in self.characters if c.id == character_id), None)

    def lines_of(self, panel: Panel) -> list[Line]:
        by_id = {line.id: line for line in self.dialogue}
        return [by_id[i] for i in panel.dialogue if i in by_id]
