"""Repairs: problems with one obviously right fix, fixed deterministically instead of retried.

A small model that repeats itself repeats itself on every retry, so feeding such a problem back
does not help; fixing it does. Each fix is a ``Repair`` (the JSON path it touched and what
changed), logged at INFO and carried in the call's attempts, so the user sees what was changed.

Two generic mechanisms, used by every structured call and by the screenplay's own repairs:

- ``tidy_strings(data, schema)``: padded strings are trimmed, and a blank string where the value is
  optional (a property not in ``required``, an item of a list of strings) is removed; a string is
  changed only when its trimmed form still satisfies its own schema (``minLength``, ``pattern``),
  and enums and consts are never touched.
- ``merge_repeats(items, key, where, what)``: an item listed again under the same key is dropped,
  and the positions of the dropped items are mapped to the kept ones, so references can follow.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Repair:
    """One deterministic fix: where (a JSON path of the reply as it came) and what changed."""

    path: str
    change: str

    def __str__(self) -> str:
        return f"{self.path}: {self.change}"


def fold(text: str) -> str:
    """A name's comparison key: case folded, runs of whitespace (any kind) as one space, trimmed."""
    return " ".join(text.split()).casefold()


def merge_repeats(
    items: Sequence[T],
    key: Callable[[T], Hashable],
    where: str,
    what: str,
    label: Callable[[T], str] = repr,
) -> tuple[list[T], dict[int, int], list[Repair]]:
    """``items`` with every repeat of an earlier key dropped.

    Returns ``(kept, moved, repairs)``: ``moved`` maps the index of each dropped item to the
    index (in ``items``) of the kept item it repeats. ``where`` is the list's JSON path, ``what``
    names an item in the messages (``"character"``, ``"prop"``) and ``label(item)`` shows it.
    """
    first: dict[Hashable, int] = {}
    kept: list[T] = []
    moved: dict[int, int] = {}
    repairs: list[Repair] = []
    for i, item in enumerate(items):
        k = key(item)
        if k in first:
            moved[i] = first[k]
            repairs.append(
                Repair(f"{where}[{i}]", f"{what} {label(item)} listed again; merged into {where}[{first[k]}]")
            )
        else:
            first[k] = i
            kept.append(item)
    return kept, moved, repairs


def _resolve(schema: Any, root: dict[str, Any]) -> Any:
    """Follow local ``$ref`` pointers (``#/$defs/x``); anything else is returned as it is."""
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and seen < 32:
        ref = schema["$ref"]
        if not ref.startswith("#/"):
            return {}
        node: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return {}
            node = node[part]
        schema, seen = node, seen + 1
    return schema if isinstance(schema, dict) else {}


def _trimmed_fits(value: str, schema: dict[str, Any]) -> bool:
    if "enum" in schema or "const" in schema:
        return False
    if len(value) < schema.get("minLength", 0):
        return False
    pattern = schema.get("pattern")
    if isinstance(pattern, str):
        try:
            return re.search(pattern, value) is not None
        except re.error:
            return False
    return True


def _blank_removable(schema: dict[str, Any]) -> bool:
    return "enum" not in schema and "const" not in schema


def tidy_strings(data: Any, schema: dict[str, Any]) -> tuple[Any, list[Repair]]:
    """``data`` with padded strings trimmed and blank optional strings removed (see the module doc).

    Follows ``properties``, ``items``, ``prefixItems`` and local ``$ref``s; parts of the schema it
    does not follow (``anyOf``, …) are left as they are. ``data`` itself is not modified.
    """
    repairs: list[Repair] = []

    def walk(value: Any, sub: Any, path: str) -> Any:
        sub = _resolve(sub, schema)
        if isinstance(value, str):
            trimmed = value.strip()
            if trimmed != value and _trimmed_fits(trimmed, sub):
                repairs.append(Repair(path, f"trimmed the spaces around {_short(value)}"))
                return trimmed
            return value
        if isinstance(value, dict):
            props = sub.get("properties") if isinstance(sub.get("properties"), dict) else {}
            required = set(sub.get("required") or [])
            out: dict[str, Any] = {}
            for k, v in value.items():
                p = k if path == "(top level)" else f"{path}.{k}"
                child = _resolve(props.get(k, {}), schema)
                if isinstance(v, str) and not v.strip() and k not in required and _blank_removable(child):
                    repairs.append(Repair(p, "blank optional value removed"))
                    continue
                out[k] = walk(v, child, p)
            return out
        if isinstance(value, list):
            prefix = sub.get("prefixItems") if isinstance(sub.get("prefixItems"), list) else []
            rest = sub.get("items", {})
            kept: list[Any] = []
            for i, v in enumerate(value):
                child = _resolve(prefix[i] if i < len(prefix) else rest, schema)
                p = f"[{i}]" if path == "(top level)" else f"{path}[{i}]"
                removable = i >= len(prefix) and _blank_removable(child)
                if isinstance(v, str) and not v.strip() and removable:
                    if len(value) - (i - len(kept)) - 1 >= sub.get("minItems", 0):
                        repairs.append(Repair(p, "blank item removed"))
                        continue
                kept.append(walk(v, child, p))
            return kept
        return value

    return walk(data, schema, "(top level)"), repairs


def _short(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
