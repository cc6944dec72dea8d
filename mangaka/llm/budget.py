"""Worst-case token count of a grammar-constrained JSON output, computed from its JSON Schema.

A schema whose every string has a ``maxLength`` (or an ``enum``/``const``/``format``) and whose
every array has a ``maxItems`` describes a finite language: the longest output it allows has a
length we can compute. Passing that length as ``max_tokens`` means a constrained decode always
ends by itself; a ``finish_reason`` of ``length`` then only happens when the context runs out.

The walk mirrors the JSON-Schema-to-GBNF converter of llama.cpp / llama-cpp-python
(``SchemaConverter.visit``) branch for branch, because the grammar, not the schema's validation
semantics, decides what the model can emit. Where the two differ, the grammar wins:

- an object with ``properties`` and no ``additionalProperties`` gets no extra keys in the grammar
  (in both converters), so it counts as closed; ``additionalProperties: true`` or a schema is
  unbounded (any number of keys);
- a string with a ``pattern`` is bounded by the pattern (the converter ignores ``maxLength`` then);
- a ``type`` list becomes a union of bare types (the converter drops the other keywords), so
  ``{"type": ["string", "null"], "maxLength": 5}`` is unbounded: use ``anyOf`` instead.

Bytes: between any two tokens of the output the grammar allows at most ``space`` bytes of
whitespace (llama-cpp-python: one optional space; llama-server's converter allows a newline and
up to 20 indentation characters, pass ``space=22`` for it); a string character is at most 4
bytes (one UTF-8 code point, or a 2-byte escape such as ``\\n``; ``\\uXXXX`` escapes are
excluded from the grammar); numbers follow llama.cpp's number rule (at most 16 digits per part);
an enum or const value counts as its ASCII JSON literal (the converter's form). Tokens: every
token of a byte-level vocabulary is at least one byte, so tokens ≤ bytes; one more token is
added for the end-of-output token, which llama-cpp-python needs room for (it stops with
``length`` when the last allowed token is generated, even if the JSON is complete).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..errors import SchemaError

try:  # the standard library's own regex parser: gives the longest match of a pattern
    from re import _parser as _regex_parser  # Python 3.11+
except ImportError:  # Python 3.10
    import sre_parse as _regex_parser  # type: ignore[no-redef]

CHAR_BYTES = 4
# "-" + integral part (a digit, or [1-9] and up to 15 more digits).
INTEGER_BYTES = 1 + 16
# "-" integral "." decimal (1 + up to 15 digits) "e" sign integral.
NUMBER_BYTES = 1 + 16 + 1 + 16 + 1 + 1 + 16
# The converter's string formats, without the quotes.
FORMAT_BYTES = {"date": 10, "time": 18, "date-time": 29}
UUID_BYTES = 36


def json_token_budget(schema: dict[str, Any], *, space: int = 1) -> int:
    """Most tokens a grammar-constrained compact JSON output of ``schema`` can take, end token included.

    Raises ``SchemaError`` naming the JSON path (in the output) of the first unbounded part.
    """
    return json_byte_budget(schema, space=space) + 1


def json_byte_budget(schema: dict[str, Any], *, space: int = 1) -> int:
    """Most bytes (UTF-8) a grammar-constrained JSON output of ``schema`` can take."""
    if not isinstance(schema, dict):
        raise SchemaError(f"a JSON Schema must be an object, not {type(schema).__name__}")
    return _Walker(schema, space).bytes(schema, "", ())


def _path_text(path: str) -> str:
    return path or "(top level)"


class _Walker:
    def __init__(self, root: dict[str, Any], space: int) -> None:
        self.root = root
        self.space = space

    def fail(self, path: str, what: str) -> SchemaError:
        return SchemaError(f"schema at {_path_text(path)}: {what}")

    def literal(self, value: Any) -> int:
        return len(json.dumps(value).encode()) + self.space

    def resolve(self, ref: str, path: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            raise self.fail(path, f"$ref {ref!r} points outside the schema; only local refs are supported")
        node: Any = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise self.fail(path, f"$ref {ref!r} does not resolve")
        if not isinstance(node, dict):
            raise self.fail(path, f"$ref {ref!r} is not a schema object")
        return node

    def bytes(self, schema: Any, path: str, refs: tuple[str, ...]) -> int:
        if not isinstance(schema, dict):
            raise self.fail(path, "a boolean schema (true/false) has no bounded grammar; spell out the type")
        stype = schema.get("type")
        s = self.space

        if (ref := schema.get("$ref")) is not None:
            if ref in refs:
                raise self.fail(path, f"$ref {ref!r} is recursive, so the output has no length bound")
            return self.bytes(self.resolve(ref, path), path, (*refs, ref))

        if "oneOf" in schema or "anyOf" in schema:
            branches = schema.get("oneOf") or schema["anyOf"]
            return max(self.bytes(b, path, refs) for b in branches)

        if isinstance(stype, list):
            # The converter turns a type list into a union of bare types, dropping maxLength etc.
            try:
                return max(self.bytes({"type": t}, path, refs) for t in stype)
            except SchemaError as e:
                raise SchemaError(
                    f'{e} (a "type" list drops its constraints in the grammar; use anyOf)'
                ) from None

        if "const" in schema:
            return self.literal(schema["const"])

        if "enum" in schema:
            if not schema["enum"]:
                raise self.fail(path, "enum is empty")
            return max(self.literal(v) for v in schema["enum"])

        if stype in (None, "object") and (
            "properties" in schema
            or ("additionalProperties" in schema and schema["additionalProperties"] is not True)
        ):
            return self.object_bytes(schema, path, refs)

        if stype in (None, "object") and "allOf" in schema:
            raise self.fail(
                path, "allOf is not supported for budgeting; merge the properties into one object"
            )

        if stype in (None, "array") and ("items" in schema or "prefixItems" in schema):
            return self.array_bytes(schema, path, refs)

        fmt = schema.get("format") or ""
        if stype in (None, "string") and "pattern" in schema:
            return 2 + CHAR_BYTES * self.pattern_chars(schema["pattern"], path) + s
        if stype in (None, "string") and re.match(r"^uuid[1-5]?$", fmt):
            return 2 + UUID_BYTES + s
        if stype in (None, "string") and fmt in FORMAT_BYTES:
            return 2 + FORMAT_BYTES[fmt] + s
        if stype == "string" and "maxLength" in schema:
            return 2 + CHAR_BYTES * int(schema["maxLength"]) + s

        fixed = {"boolean": 5, "null": 4, "integer": INTEGER_BYTES, "number": NUMBER_BYTES}
        if stype in fixed:
            return fixed[stype] + s
        if stype == "string":
            raise self.fail(
                path,
                "a string without maxLength (or enum, const, format, pattern) can be any length; "
                "add maxLength",
            )
        if stype == "array":
            raise self.fail(path, "an array without items can hold anything; add items and maxItems")
        if stype in (None, "object"):
            raise self.fail(path, "an object without properties can hold any keys; list its properties")
        raise self.fail(path, f"unknown type {stype!r}")

    def object_bytes(self, schema: dict[str, Any], path: str, refs: tuple[str, ...]) -> int:
        extra = schema.get("additionalProperties")
        if extra is True or isinstance(extra, dict):
            raise self.fail(path, "additionalProperties allows any number of keys; set it to false")
        s = self.space
        props: dict[str, Any] = schema.get("properties") or {}
        total = 1 + s  # "{"
        for i, (name, sub) in enumerate(props.items()):
            if i:
                total += 1 + s  # ","
            sub_path = f"{path}.{name}" if path else name
            total += self.literal(name) + 1 + s + self.bytes(sub, sub_path, refs)  # "name" ":" value
        return total + 1 + s  # "}"

    def array_bytes(self, schema: dict[str, Any], path: str, refs: tuple[str, ...]) -> int:
        s = self.space
        items = schema.get("items") or schema.get("prefixItems")
        if isinstance(items, list):  # a tuple: exactly these items, in order
            bodies = [self.bytes(item, f"{path}[{i}]", refs) for i, item in enumerate(items)]
        elif isinstance(items, dict):
            if "maxItems" not in schema:
                raise self.fail(path, "an array without maxItems can be any length; add maxItems")
            count = int(schema["maxItems"])
            bodies = [self.bytes(items, f"{path}[]", refs)] * count if count else []
        else:
            raise self.fail(
                path, "an array whose items are unconstrained can hold anything; give items a schema"
            )
        return 1 + s + sum(bodies) + max(len(bodies) - 1, 0) * (1 + s) + 1 + s

    def pattern_chars(self, pattern: str, path: str) -> int:
        """Longest match of a regular expression, in characters."""
        if not (pattern.startswith("^") and pattern.endswith("$")):
            raise self.fail(path, f"pattern {pattern!r} must start with ^ and end with $ for the grammar")
        try:
            width = _regex_parser.parse(pattern).getwidth()[1]
        except (re.error, TypeError, ValueError, OverflowError) as e:
            raise self.fail(path, f"pattern {pattern!r} cannot be bounded: {e}") from None
        unbounded = width >= _regex_parser.MAXREPEAT
        if unbounded:
            raise self.fail(
                path,
                f"pattern {pattern!r} matches strings of any length (the grammar ignores maxLength when a "
                "pattern is present); bound its repetitions, e.g. {0,31} instead of *",
            )
        return int(width)
