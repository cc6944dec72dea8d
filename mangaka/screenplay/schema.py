"""JSON Schemas: the stored contract (exported from the models) and the two per-request call schemas.

The call schemas are what the model decodes against. They are built per request so that the
grammar alone guarantees structure and references, even for a random-weight model: counts are
exact (``minItems == maxItems``), speakers and panel characters are enums of the cast's ids, and
each dialogue line names its panel from an enum of ``p1..pM``.
"""

from __future__ import annotations

import json
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


def cast_call_schema(max_characters: int) -> dict[str, Any]:
    """Schema of the first call: the cast, 1..``max_characters`` characters."""
    character = _object(
        {
            "id": {"type": "string", "minLength": 1, "maxLength": MAX_ID, "pattern": ID_PATTERN},
            "name": _string(MAX_NAME),
            "appearance": _string(MAX_APPEARANCE),
        }
    )
    return _object(
        {"characters": {"type": "array", "items": character, "minItems": 1, "maxItems": max_characters}}
    )


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
    panel_parts = {
        "shot": _enum(SHOTS),
        "angle": _enum(ANGLES),
        "characters": {"type": "array", "items": _enum(cast_ids), "maxItems": len(cast_ids)},
        "action": _string(MAX_ACTION),
        "expression": _string(MAX_EXPRESSION, 0),
        "background": _string(MAX_BACKGROUND),
        "lighting": _string(MAX_LIGHTING, 0),
        "props": {"type": "array", "items": _string(MAX_PROP), "maxItems": MAX_PROPS},
    }
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
