"""JSON Schema → GBNF grammar for constrained decoding, with llama-cpp-python's bugs fixed.

We use llama-cpp-python's own converter (the port of llama.cpp's json-schema-to-grammar), and:

- replace its string-character rule, which lets raw control characters (U+0000–U+001F, U+007F)
  into strings so the output is not valid JSON, by one that excludes them, as upstream llama.cpp
  does; ``\\u`` escapes are left out too, so every string character costs at most 4 bytes and the
  output length is bounded by the schema (``mangaka.llm.budget``);
- raise ``SchemaError`` when a schema cannot be compiled, instead of falling back to "any JSON"
  as ``response_format`` does;
- name the keywords the converter ignores (they are still enforced by validation after decoding).
"""

from __future__ import annotations

import functools
import json
import logging
import re
from typing import Any

from ..errors import SchemaError
from .native import import_llama_cpp

log = logging.getLogger(__name__)

# A JSON string character: anything but the quote, the backslash and the control characters,
# or a two-character escape.
SAFE_CHAR_RULE = r'char ::= [^"\\\x7F\x00-\x1F] | "\\" ["\\/bfnrt]'
_CHAR_RULE_RE = re.compile(r"^char ::= .*$", re.MULTILINE)

# Keywords the converter cannot express: compiling them would silently drop the constraint.
UNSUPPORTED = (
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependentRequired",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
)
# Keywords the converter ignores; validation after decoding still enforces them.
IGNORED = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "patternProperties",
    "propertyNames",
)


def _walk(node: Any, path: str):
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from _walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, f"{path}/{i}")


def _check(schema: dict[str, Any]) -> None:
    from jsonschema import exceptions, validators

    if not isinstance(schema, dict):
        raise SchemaError(f"a JSON Schema must be an object, got {type(schema).__name__}")
    try:
        validators.validator_for(schema).check_schema(schema)
    except exceptions.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise SchemaError(f"the JSON Schema is invalid at {where}: {exc.message}") from None
    ignored: set[str] = set()
    for path, node in _walk(schema, "#"):
        if path.endswith("/properties") or path.endswith("/$defs") or path.endswith("/definitions"):
            continue  # keys here are property or definition names, not keywords
        for key in UNSUPPORTED:
            if key in node:
                raise SchemaError(
                    f"the JSON Schema uses {key!r} at {path}, which constrained decoding cannot "
                    "enforce; rewrite it without that keyword (e.g. with enum, anyOf or separate "
                    "properties). Nothing falls back to unconstrained JSON."
                )
        ignored.update(k for k in IGNORED if k in node)
    if ignored:
        log.warning(
            "the grammar cannot enforce %s; they are checked after decoding", ", ".join(sorted(ignored))
        )


@functools.lru_cache(maxsize=64)
def _compile(schema_json: str) -> str:
    import_llama_cpp()
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(schema_json)
    except Exception as exc:  # noqa: BLE001 - the converter raises bare Exceptions and asserts
        raise SchemaError(f"the JSON Schema cannot be compiled to a grammar: {exc}") from None
    if _CHAR_RULE_RE.search(gbnf):
        gbnf = _CHAR_RULE_RE.sub(lambda _m: SAFE_CHAR_RULE, gbnf, count=1)
    return gbnf


def schema_to_gbnf(schema: dict[str, Any]) -> str:
    """Compile a JSON Schema to a GBNF grammar (cached); ``SchemaError`` if it cannot be done."""
    _check(schema)
    return _compile(json.dumps(schema, sort_keys=True, ensure_ascii=False))
