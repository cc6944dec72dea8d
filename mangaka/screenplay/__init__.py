"""The Screenwriter: pydantic models of a screenplay, its JSON Schema, validation and generation."""

from .bible import BibleCharacter, SeriesBible, load_series_bible, parse_series_bible, save_series_bible
from .example import example_screenplay
from .generate import ScreenplayResult, assemble_screenplay, write_cast, write_screenplay
from .models import ANGLES, EMOTIONS, LANGUAGES, NARRATOR, SHOTS, Character, Line, Panel, Screenplay
from .request import ScreenplayRequest, check_chapter, sampling_settings
from .schema import (
    cast_call_schema,
    screenplay_json_schema,
    screenplay_schema_text,
    script_call_schema,
    write_schemas,
)
from .validate import load_screenplay, validate_screenplay

__all__ = [
    "ANGLES",
    "EMOTIONS",
    "LANGUAGES",
    "NARRATOR",
    "SHOTS",
    "BibleCharacter",
    "Character",
    "Line",
    "Panel",
    "Screenplay",
    "ScreenplayRequest",
    "ScreenplayResult",
    "SeriesBible",
    "assemble_screenplay",
    "cast_call_schema",
    "check_chapter",
    "example_screenplay",
    "load_screenplay",
    "load_series_bible",
    "parse_series_bible",
    "sampling_settings",
    "save_series_bible",
    "screenplay_json_schema",
    "screenplay_schema_text",
    "script_call_schema",
    "validate_screenplay",
    "write_cast",
    "write_schemas",
    "write_screenplay",
]
