from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mangaka.screenplay import (
    Character,
    Screenplay,
    screenplay_json_schema,
    validate_screenplay,
    write_schemas,
)
from mangaka.screenplay.example import example_screenplay as example
from mangaka.screenplay.schema import (
    SCHEMA_FILE,
    SCHEMAS_DIR,
    cast_call_schema,
    grounded_script_call_schema,
    screenplay_schema_text,
    script_call_schema,
)
from mangaka.structured import check_schema

REPO = Path(__file__).resolve().parents[2]


def test_schema_file_matches_the_models():
    path = SCHEMAS_DIR / SCHEMA_FILE
    assert path == REPO / "schemas" / SCHEMA_FILE
    assert path.exists(), f"{path} is missing: run `python -m mangaka schemas`"
    assert path.read_text(encoding="utf-8") == screenplay_schema_text(), (
        f"{path} is out of date with mangaka/screenplay/models.py: run `python -m mangaka schemas`"
    )


def test_write_schemas_writes_the_exported_schema(tmp_path: Path):
    (written,) = write_schemas(tmp_path / "out")
    text = written.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert json.loads(text) == screenplay_json_schema()
    assert written.name == SCHEMA_FILE


def _walk(schema: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(schema, dict):
        found.append((path, schema))
        for key, value in schema.items():
            if key in ("properties", "$defs"):
                for name, sub in value.items():
                    found += _walk(sub, f"{path}/{key}/{name}")
            elif key in ("items",) and isinstance(value, dict):
                found += _walk(value, f"{path}/items")
            elif key == "prefixItems":
                for i, sub in enumerate(value):
                    found += _walk(sub, f"{path}/prefixItems/{i}")
    return found


# The optional properties, so screenplays written before them still load: a panel's scene (1 when
# absent; a plain integer with a default), and version 2's references to the chapter, a line's quote
# and a panel's source (absent when not known: the schema has just the integer or array, no union
# with null).
OPTIONAL = {"/$defs/Panel": {"scene", "source"}, "/$defs/Line": {"quote"}}


@pytest.mark.parametrize(
    "schema",
    [
        screenplay_json_schema(),
        cast_call_schema(16),
        script_call_schema(["a", "b"], 24, 48),
        cast_call_schema(16, ["Mei", "Akira"], ["Mei", "Akira"]),
        grounded_script_call_schema(["a", "b"], 24, (1, 30), list(range(1, 41)), 48),
        grounded_script_call_schema(["a", "b"], 24, (5, 30), list(range(6, 61)), 48),
        grounded_script_call_schema(["a", "b"], 2, (1, 3), [], 2),  # a chapter without quote marks
    ],
    ids=["stored", "cast", "script", "cast-named", "grounded", "grounded-fewer", "grounded-no-quotes"],
)
def test_every_string_and_array_is_bounded_and_no_union_is_used(schema: dict[str, Any]):
    check_schema(schema)
    for path, node in _walk(schema):
        assert "anyOf" not in node and "oneOf" not in node, path
        assert not isinstance(node.get("type"), list), path
        if node.get("type") == "string" and "enum" not in node and "const" not in node:
            assert "maxLength" in node, f"{path} has no maxLength"
        if node.get("type") == "array":
            assert "maxItems" in node, f"{path} has no maxItems"
        if node.get("type") == "object":
            assert node.get("additionalProperties") is False, path
            optional = OPTIONAL.get(path, set())
            assert set(node["required"]) == set(node["properties"]) - optional, (
                f"{path}: every property is required"
            )


def test_properties_keep_the_models_field_order():
    schema = screenplay_json_schema()
    assert list(schema["properties"]) == ["version", "title", "language", "characters", "dialogue", "panels"]
    assert list(schema["$defs"]["Panel"]["properties"])[:3] == ["id", "shot", "angle"]
    assert "title" not in schema["$defs"]["Panel"]["properties"]["shot"]  # no per-field title noise


def test_example_screenplay_is_valid_and_round_trips():
    data = example()
    assert validate_screenplay(data) == []
    model = Screenplay.model_validate(data)
    assert model.model_dump(mode="json") == data
    assert model.character("mei").name == "Mei"
    assert [line.id for line in model.lines_of(model.panels[1])] == ["d2", "d3"]


@pytest.mark.parametrize("bad_id", ["Akira", "1abc", "", "a-b", "x" * 33, "akira "])
def test_character_ids_are_lowercase_slugs(bad_id: str):
    with pytest.raises(ValidationError):
        Character(id=bad_id, name="A", appearance="tall")


def test_models_are_strict():
    with pytest.raises(ValidationError):
        Character(id="a", name="A", appearance="tall", age=3)
    with pytest.raises(ValidationError):
        Screenplay.model_validate({**example(), "version": 3})
    with pytest.raises(ValidationError):
        Screenplay.model_validate({**example(), "language": "xx"})
