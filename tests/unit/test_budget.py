from __future__ import annotations

import json
from typing import Any

import pytest

from mangaka.errors import SchemaError
from mangaka.llm.budget import CHAR_BYTES, INTEGER_BYTES, NUMBER_BYTES, json_byte_budget, json_token_budget
from mangaka.screenplay.schema import (
    cast_call_schema,
    grounded_script_call_schema,
    screenplay_json_schema,
    script_call_schema,
)

TINY = {
    "type": "object",
    "properties": {"a": {"type": "string", "maxLength": 3}},
    "required": ["a"],
    "additionalProperties": False,
}


def test_tiny_object_has_an_exact_budget():
    # '{' + ' ' | '"a"' + ' ' | ':' + ' ' | '"' + 3 chars x 4 bytes + '"' + ' ' | '}' + ' '
    assert json_byte_budget(TINY) == 2 + 4 + 2 + (2 + 12 + 1) + 2 == 25
    # one more token for the end of output
    assert json_token_budget(TINY) == 26


def test_space_per_gap_is_configurable():
    # five tokens ('{', key, ':', value, '}'), each followed by at most `space` bytes
    assert json_byte_budget(TINY, space=0) == 1 + 3 + 1 + 14 + 1
    assert json_byte_budget(TINY, space=22) == json_byte_budget(TINY, space=0) + 5 * 22


def test_array_of_enum_counts_the_longest_value_and_separators():
    schema = {"type": "array", "items": {"enum": ["x", "yy"]}, "maxItems": 2}
    # '[ ' + '"yy" ' + ', ' + '"yy" ' + '] '
    assert json_byte_budget(schema) == 2 + 5 + 2 + 5 + 2


def test_empty_array_and_zero_max_items():
    assert json_byte_budget({"type": "array", "items": {"type": "integer"}, "maxItems": 0}) == 4


def test_scalars():
    assert json_byte_budget({"type": "integer"}) == INTEGER_BYTES + 1
    assert json_byte_budget({"type": "number"}) == NUMBER_BYTES + 1
    assert json_byte_budget({"type": "boolean"}) == 6
    assert json_byte_budget({"type": "null"}) == 5
    assert json_byte_budget({"const": "ok"}) == 5
    # enum/const literals count in the converter's ASCII form ("\u00e9" is 8 bytes)
    assert json_byte_budget({"enum": ["é"]}) == 8 + 1


def test_string_formats_and_uuid():
    assert json_byte_budget({"type": "string", "format": "date"}) == 2 + 10 + 1
    assert json_byte_budget({"type": "string", "format": "date-time"}) == 2 + 29 + 1
    assert json_byte_budget({"type": "string", "format": "uuid"}) == 2 + 36 + 1


def test_pattern_is_bounded_by_its_longest_match():
    schema = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,31}$", "maxLength": 5}
    # the grammar follows the pattern and ignores maxLength
    assert json_byte_budget(schema) == 2 + 32 * CHAR_BYTES + 1


def test_prefix_items_are_a_tuple():
    schema = {"type": "array", "prefixItems": [{"const": 1}, {"type": "boolean"}], "items": False}
    assert json_byte_budget(schema) == 2 + 2 + 2 + 6 + 2


def test_any_of_takes_the_longest_branch():
    schema = {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "string", "maxLength": 10}]}
    assert json_byte_budget(schema) == 2 + 40 + 1


def test_refs_are_resolved():
    schema = {
        "$defs": {"name": {"type": "string", "maxLength": 2}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/name"}},
        "additionalProperties": False,
    }
    inline = {"type": "object", "properties": {"x": {"type": "string", "maxLength": 2}}}
    assert json_byte_budget(schema) == json_byte_budget(inline)


@pytest.mark.parametrize(
    ("schema", "path", "hint"),
    [
        ({"type": "object", "properties": {"a": {"type": "string"}}}, "at a:", "maxLength"),
        (
            {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "integer"}}}},
            "at xs:",
            "maxItems",
        ),
        (
            {
                "type": "array",
                "maxItems": 2,
                "items": {"type": "object", "properties": {"s": {"type": "string"}}},
            },
            "at [].s:",
            "maxLength",
        ),
        (
            {"type": "object", "properties": {}, "additionalProperties": True},
            "(top level)",
            "additionalProperties",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}},
            "(top level)",
            "additionalProperties",
        ),
        ({"type": "object"}, "(top level)", "properties"),
        ({}, "(top level)", "any keys"),
        ({"type": ["string", "null"], "maxLength": 4}, "(top level)", "anyOf"),
        ({"type": "string", "pattern": "^a+$", "maxLength": 4}, "(top level)", "any length"),
        ({"type": "string", "pattern": "a{0,3}"}, "(top level)", "^"),
        (
            {
                "$defs": {"n": {"type": "array", "maxItems": 2, "items": {"$ref": "#/$defs/n"}}},
                "$ref": "#/$defs/n",
            },
            "[]",
            "recursive",
        ),
        ({"$ref": "#/$defs/missing"}, "(top level)", "does not resolve"),
        ({"$ref": "other.json#/x"}, "(top level)", "outside"),
    ],
)
def test_unbounded_schemas_raise_with_the_path(schema: dict[str, Any], path: str, hint: str):
    with pytest.raises(SchemaError) as info:
        json_token_budget(schema)
    assert path in str(info.value)
    assert hint in str(info.value)


def _longest_instance(schema: dict[str, Any], root: dict[str, Any]) -> Any:
    """A worst-case output: every string full of 4-byte characters, every array full."""
    if "$ref" in schema:
        return _longest_instance(root["$defs"][schema["$ref"].split("/")[-1]], root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(json.dumps(v)))
    if schema.get("type") == "object":
        return {k: _longest_instance(v, root) for k, v in schema["properties"].items()}
    if schema.get("type") == "array":
        if "prefixItems" in schema:
            return [_longest_instance(s, root) for s in schema["prefixItems"]]
        return [_longest_instance(schema["items"], root) for _ in range(schema["maxItems"])]
    if schema.get("type") == "string":
        return "\U0001f600" * (32 if "pattern" in schema else schema["maxLength"])
    if schema.get("type") == "integer":
        return schema["maximum"]
    raise AssertionError(schema)


def _spaced(value: Any) -> str:
    """JSON with one space after every token, the most the grammar allows."""
    if isinstance(value, dict):
        items = ", ".join(f"{json.dumps(k)} : {_spaced(v)}" for k, v in value.items())
        return "{ " + items + "} "
    if isinstance(value, list):
        items = ", ".join(_spaced(v) for v in value)
        return "[ " + items + "] "
    return json.dumps(value, ensure_ascii=False) + " "


@pytest.mark.parametrize(
    "schema",
    [
        cast_call_schema(8),
        script_call_schema(["akira", "mei"], 6, 8),
        script_call_schema(["a"], 1, 0),
        screenplay_json_schema(),
        cast_call_schema(8, ["Mei", "Akira", "Sensei"], ["Mei", "Akira"]),
        grounded_script_call_schema(["akira", "mei"], 6, (3, 9), [4, 5, 6, 7], 8),
        grounded_script_call_schema(["akira", "mei"], 3, (1, 9), list(range(1, 11)), 4),
        grounded_script_call_schema(["akira"], 2, (1, 3), [], 2),
    ],
    ids=[
        "cast",
        "script",
        "script-minimal",
        "stored",
        "cast-named",
        "grounded",
        "grounded-fewer",
        "grounded-no-quotes",
    ],
)
def test_the_screenplay_schemas_are_bounded_and_their_longest_output_fits(schema: dict[str, Any]):
    budget = json_byte_budget(schema)
    worst = _spaced(_longest_instance(schema, schema))
    json.loads(worst)
    # enum literals get no trailing space in the grammar, so the budget may exceed the worst case a little
    assert len(worst.encode()) <= budget
    assert budget - len(worst.encode()) < 0.02 * budget


def test_default_request_budgets():
    assert json_token_budget(cast_call_schema(8)) < 12_000
    assert json_token_budget(script_call_schema(["akira", "mei", "old_man"], 6, 8)) < 25_000
