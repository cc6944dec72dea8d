"""JSON Schemas: the stored contract (exported from the models) and the two per-request call schemas.

The call schemas are what the model decodes against. They are built per request so that the
grammar alone guarantees structure and references, even for a random-weight model: counts are
exact (``minItems == maxItems``), speakers and panel characters are enums of the cast's ids, and
each dialogue line names its panel from an enum of ``p1..pM``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema

from .models import (
    ANGLES,
    EMOTIONS,
    ID_PATTERN,
    MAX_ACTION,
    MAX_APPEARANCE,
    MAX_BACKGROUND,
    MAX_EXPRESSION,
    MAX_ID,
    MAX_LIGHTING,
    MAX_LINE,
    MAX_NAME,
    MAX_PROP,
    MAX_PROPS,
    MAX_TITLE,
    NARRATOR,
    SHOTS,
    Screenplay,
)

SCHEMA_FILE = "screenplay.schema.json"
# The pack's own schemas/ folder, where the exported contract is committed.
SCHEMAS_DIR = Path(__file__).resolve().parents[2] / "schemas"


class _ContractSchema(GenerateJsonSchema):
    """Pydantic's generator without the per-field ``title`` noise (model titles stay)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def contract_schema_text(model: type[BaseModel]) -> str:
    """A stored contract's JSON Schema text, as the files in ``schemas/`` hold it.

    Draft 2020-12, pydantic's generator without per-field titles, 2-space indent, trailing newline.
    """
    schema = model.model_json_schema(schema_generator=_ContractSchema)
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"


@cache
def _screenplay_schema_text() -> str:
    return contract_schema_text(Screenplay)


def screenplay_json_schema() -> dict[str, Any]:
    """The stored screenplay contract as a JSON Schema (Draft 2020-12, with ``$defs``)."""
    return json.loads(_screenplay_schema_text())


def screenplay_schema_text() -> str:
    """The exact text of ``schemas/screenplay.schema.json`` (2-space indent, trailing newline).

    Keys inside each schema object are sorted by pydantic; ``properties`` keep the models' field
    order on purpose, since the grammar emits properties in that order.
    """
    return _screenplay_schema_text()


def write_contract_schema(text: str, file_name: str, folder: str | Path = SCHEMAS_DIR) -> Path:
    """Write one contract's schema ``text`` as ``folder/file_name`` (the pack's ``schemas/``)."""
    path = Path(folder) / file_name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def write_schemas(folder: str | Path = SCHEMAS_DIR) -> list[Path]:
    """Write every output contract into ``folder`` (the pack's ``schemas/``); returns the files written."""
    return [write_contract_schema(screenplay_schema_text(), SCHEMA_FILE, folder)]


def _string(max_length: int, min_length: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": min_length, "maxLength": max_length}


def _enum(values: list[str] | tuple[str, ...]) -> dict[str, Any]:
    return {"type": "string", "enum": list(values)}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def cast_call_schema(
    max_characters: int,
    names: Sequence[str] = (),
    required: Sequence[str] = (),
    ids: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Schema of the first call: the cast, 1..``max_characters`` characters.

    With ``required`` names (the names the chapter uses, ``screenplay/grounded.py``), the cast is
    exactly those, in order (at most ``max_characters``): each a ``prefixItems`` entry whose name is
    a ``const``, and so is its id where ``ids`` gives one; the model writes the rest. ``names`` is
    accepted for the callers' symmetry; a name outside it is a problem the call's check reports."""

    def character(name: dict[str, Any], cid: str | None = None) -> dict[str, Any]:
        free = {"type": "string", "minLength": 1, "maxLength": MAX_ID, "pattern": ID_PATTERN}
        return _object(
            {
                "id": {"type": "string", "const": cid} if cid else free,
                "name": name,
                "appearance": _string(MAX_APPEARANCE),
            }
        )

    forced = list(dict.fromkeys(required))[:max_characters]
    if not forced:
        items = {"type": "array", "items": character(_string(MAX_NAME)), "minItems": 1}
        return _object({"characters": {**items, "maxItems": max_characters}})
    array = {
        "type": "array",
        "prefixItems": [character({"type": "string", "const": n}, (ids or {}).get(n)) for n in forced],
        "items": False,
        "minItems": len(forced),
        "maxItems": len(forced),
    }
    return _object({"characters": array})


def _panel_parts(cast_ids: list[str]) -> dict[str, Any]:
    """A panel's drawn parts, shared by both script schemas (each a ``$defs`` entry)."""
    return {
        "shot": _enum(SHOTS),
        "angle": _enum(ANGLES),
        "characters": {"type": "array", "items": _enum(cast_ids), "maxItems": len(cast_ids)},
        "action": _string(MAX_ACTION),
        "expression": _string(MAX_EXPRESSION, 0),
        "background": _string(MAX_BACKGROUND),
        "lighting": _string(MAX_LIGHTING, 0),
        "props": {"type": "array", "items": _string(MAX_PROP), "maxItems": MAX_PROPS},
    }


def grounded_script_call_schema(
    cast_ids: list[str],
    panels: int,
    units: tuple[int, int],
    lines: Sequence[int],
    dialogue: int,
    starts: Sequence[int] | None = None,
    hints: dict[int, str] | None = None,
    sure: dict[int, str] | None = None,
    title: str | None = None,
) -> dict[str, Any]:
    """Schema of the script call when dialogue comes from the chapter (``screenplay/grounded.py``).

    ``sure`` speakers (quoted line number → cast id: what the text settles) are a ``const``, as is
    the ``title`` when the chapter has a heading.

    ``panels`` panels, each with ``from``, the source unit where it starts (a ``const`` from
    ``starts`` when given, else an enum of ``units`` with the first panel's the first unit); then
    the quoted lines (``lines``: their numbers) with a speaker and an emotion each (a ``likely``
    speaker written by the grammar before the speaker where ``hints`` has one); then narrator
    captions. When ``dialogue`` lines hold every quoted
    line, each is a ``prefixItems`` entry with a ``const`` quote number (the grammar writes them all,
    in order) and the rest are captions; with fewer, ``dialogue`` lines each pick a quote number.
    A line's panel is not asked: it is the panel whose part of the chapter holds the quote."""
    ids = panel_ids(panels)
    first, last = units
    unit_numbers = list(range(first, last + 1))
    panel_parts = _panel_parts(cast_ids)
    defs: dict[str, Any] = {f"panel_{k}": v for k, v in panel_parts.items()}
    defs["speaker"] = _enum(cast_ids)  # a quoted line is someone's speech; captions are the narrator's
    defs["emotion"] = _enum(EMOTIONS)
    defs["from"] = {"type": "integer", "enum": unit_numbers}
    refs = {k: {"$ref": f"#/$defs/panel_{k}"} for k in panel_parts}
    panel_items = [
        _object(
            {
                "id": {"type": "string", "const": pid},
                "from": {"type": "integer", "const": starts[j] if starts else first}
                if starts or j == 0
                else {"$ref": "#/$defs/from"},
                **refs,
            }
        )
        for j, pid in enumerate(ids)
    ]
    quoted = _quoted_lines(lines, dialogue, hints or {}, sure or {})
    caption = _object({"line": _string(MAX_LINE), "panel": _enum(ids)})
    captions = dialogue - quoted["maxItems"]
    schema = _object(
        {
            "title": {"type": "string", "const": title} if title else _string(MAX_TITLE),
            "panels": {
                "type": "array",
                "prefixItems": panel_items,
                "items": False,
                "minItems": panels,
                "maxItems": panels,
            },
            "dialogue": quoted,
            "captions": {"type": "array", "items": caption, "minItems": captions, "maxItems": captions},
        }
    )
    return {"$defs": defs, **schema}


def _quoted_lines(
    lines: Sequence[int], dialogue: int, hints: dict[int, str], sure: dict[int, str]
) -> dict[str, Any]:
    """The grounded script's ``dialogue`` array: every quoted line of ``lines``, in order (a
    ``const`` number each; a ``const`` speaker where ``sure`` has one, else a ``const`` ``likely``
    speaker where ``hints`` has one) when ``dialogue`` holds them all; else ``dialogue`` items that
    each pick a number (a sure speaker is then set by the call's repair). With no quoted line (a
    chapter without quote marks), an empty array: JSON Schema wants ``prefixItems`` and ``enum``
    non-empty, and llama-server wants ``items`` an object."""

    def line(quote: dict[str, Any], likely: str | None = None, forced: str | None = None) -> dict[str, Any]:
        hint = {"likely": {"type": "string", "const": likely}} if likely and not forced else {}
        speaker = {"type": "string", "const": forced} if forced else {"$ref": "#/$defs/speaker"}
        return _object({"quote": quote, **hint, "speaker": speaker, "emotion": {"$ref": "#/$defs/emotion"}})

    kept = min(dialogue, len(lines))
    if not lines:
        quoted: dict[str, Any] = {
            "type": "array",
            "items": line({"type": "integer", "minimum": 1, "maximum": 1}),
        }
    elif dialogue >= len(lines):
        quoted = {
            "type": "array",
            "prefixItems": [line({"type": "integer", "const": n}, hints.get(n), sure.get(n)) for n in lines],
            "items": False,
        }
    else:
        quoted = {"type": "array", "items": line({"type": "integer", "enum": list(lines)})}
    return {**quoted, "minItems": kept, "maxItems": kept}


def panel_ids(panels: int) -> list[str]:
    return [f"p{i}" for i in range(1, panels + 1)]


def script_call_schema(cast_ids: list[str], panels: int, dialogue: int) -> dict[str, Any]:
    """Schema of the second call: exactly ``dialogue`` lines, then exactly ``panels`` panels.

    Each panel is a ``prefixItems`` entry whose ``id`` is a ``const`` (``p1``, ``p2``, …), so the
    model sees the id it is writing and the lines' ``panel`` enum points at visible ids.
    """
    ids = panel_ids(panels)
    line = _object(
        {
            "speaker": _enum([*cast_ids, NARRATOR]),
            "line": _string(MAX_LINE),
            "emotion": _enum(EMOTIONS),
            "panel": _enum(ids),
        }
    )
    # Each panel is its own tuple entry (for its const id); the shared parts live in $defs, so the
    # grammar has one rule for each of them instead of one per panel.
    panel_parts = _panel_parts(cast_ids)
    defs = {f"panel_{k}": v for k, v in panel_parts.items()}
    panel_refs = {k: {"$ref": f"#/$defs/panel_{k}"} for k in panel_parts}
    schema = _object(
        {
            "title": _string(MAX_TITLE),
            "dialogue": {"type": "array", "items": line, "minItems": dialogue, "maxItems": dialogue},
            "panels": {
                "type": "array",
                "prefixItems": [
                    _object({"id": {"type": "string", "const": pid}, **panel_refs}) for pid in ids
                ],
                "items": False,
                "minItems": panels,
                "maxItems": panels,
            },
        }
    )
    return {"$defs": defs, **schema}
