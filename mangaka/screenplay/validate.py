"""Semantic checks beyond the JSON Schema: unique ids, references that resolve, every line placed.

Each check returns human-readable problems that start with the JSON path they concern
(``characters[2].id: …``), so they can be shown to a user or fed back to the model.
"""

from __future__ import annotations

import logging
from functools import cache
from typing import Any

from pydantic import ValidationError

from ..errors import InputError
from ..fileio import parse_json
from ..repair import tidy_strings
from ..structured import check_schema, json_path, schema_problems
from .models import NARRATOR, Screenplay
from .repair import repair_screenplay
from .schema import screenplay_json_schema

logger = logging.getLogger(__name__)


@cache
def _screenplay_validator() -> Any:
    return check_schema(screenplay_json_schema())


def cast_problems(characters: list[dict[str, Any]], where: str = "characters") -> list[str]:
    """Ids unique and not ``narrator``; names not blank and not repeated."""
    if not characters:
        return [
            f"{where}: the cast is empty; list at least one character who appears in the chapter "
            "(the narrator is not a character)"
        ]
    problems: list[str] = []
    seen_ids: dict[str, int] = {}
    seen_names: dict[str, int] = {}
    for i, c in enumerate(characters):
        cid, name = c["id"], c["name"]
        if cid == NARRATOR:
            problems.append(
                f"{where}[{i}].id: 'narrator' is reserved for caption boxes; give this character another id"
            )
        elif cid in seen_ids:
            problems.append(
                f"{where}[{i}].id: {cid!r} is already the id of {where}[{seen_ids[cid]}]; ids must be unique"
            )
        else:
            seen_ids[cid] = i
        key = " ".join(name.split()).casefold()
        if not key:
            problems.append(f"{where}[{i}].name: is blank; give the name as the chapter writes it")
        elif key in seen_names:
            problems.append(
                f"{where}[{i}].name: {name!r} is already the name of {where}[{seen_names[key]}]; "
                "list each character once"
            )
        else:
            seen_names[key] = i
    return problems


def _unique(ids: list[str], where: str) -> list[str]:
    first: dict[str, int] = {}
    problems = []
    for i, x in enumerate(ids):
        if x in first:
            problems.append(
                f"{where}[{i}].id: {x!r} is already the id of {where}[{first[x]}]; ids must be unique"
            )
        else:
            first[x] = i
    return problems


def screenplay_semantic_problems(data: dict[str, Any]) -> list[str]:
    """Semantic problems of a screenplay that already matches the JSON Schema."""
    problems = cast_problems(data["characters"])
    cast_ids = [c["id"] for c in data["characters"]]
    known_speakers = ", ".join([*cast_ids, NARRATOR])

    lines = data["dialogue"]
    problems += _unique([d["id"] for d in lines], "dialogue")
    line_ids = {d["id"] for d in lines}
    for i, d in enumerate(lines):
        if d["speaker"] != NARRATOR and d["speaker"] not in cast_ids:
            problems.append(
                f"dialogue[{i}].speaker: {d['speaker']!r} is not one of the characters ({known_speakers})"
            )
        if not d["line"].strip():
            problems.append(f"dialogue[{i}].line: is blank")

    panels = data["panels"]
    problems += _unique([p["id"] for p in panels], "panels")
    placed: dict[str, int] = {}
    for j, p in enumerate(panels):
        shown: set[str] = set()
        for k, cid in enumerate(p["characters"]):
            if cid not in cast_ids:
                problems.append(
                    f"panels[{j}].characters[{k}]: {cid!r} is not a character id ({', '.join(cast_ids)})"
                )
            elif cid in shown:
                problems.append(f"panels[{j}].characters[{k}]: {cid!r} is listed twice in this panel")
            shown.add(cid)
        for k, lid in enumerate(p["dialogue"]):
            if lid not in line_ids:
                problems.append(f"panels[{j}].dialogue[{k}]: {lid!r} is not the id of a dialogue line")
            elif lid in placed:
                problems.append(
                    f"panels[{j}].dialogue[{k}]: line {lid!r} is already in panels[{placed[lid]}]; "
                    "each line belongs to one panel"
                )
            else:
                placed[lid] = j
    for i, d in enumerate(lines):
        if d["id"] in line_ids and d["id"] not in placed:
            problems.append(
                f"dialogue[{i}]: line {d['id']!r} is in no panel; add its id to one panel's dialogue"
            )
    return problems


def validate_screenplay(data: Any) -> list[str]:
    """Every problem of a screenplay given as parsed JSON: the JSON Schema first, then the semantic rules.

    Works on any screenplay JSON (ours or another pack's); an empty list means it is valid.
    """
    problems = schema_problems(data, _screenplay_validator())
    if problems:
        return problems
    return screenplay_semantic_problems(data)


def repaired_screenplay(data: Any, source: str = "screenplay") -> Any:
    """``data`` with its one-right-fix problems repaired (``repair.py``), each repair logged at INFO.

    Padded strings are trimmed; when the result matches the schema, a character listed twice is
    merged and its references remapped, and what a panel lists twice is listed once.
    """
    data, repairs = tidy_strings(data, _screenplay_validator().schema)
    if not schema_problems(data, _screenplay_validator()):
        data, more = repair_screenplay(data)
        repairs += more
    for r in repairs:
        logger.info("%s: repaired %s", source, r)
    return data


def load_screenplay(
    data: str | bytes | dict[str, Any], *, source: str = "screenplay", repair: bool = True
) -> Screenplay:
    """Parse, repair (unless ``repair=False``) and validate a screenplay (JSON text or parsed).

    ``InputError`` lists every problem that is left."""
    if isinstance(data, (str, bytes)):
        data = parse_json(data, source)
    if repair:
        data = repaired_screenplay(data, source)
    problems = validate_screenplay(data)
    if problems:
        listed = "\n".join(f"- {p}" for p in problems[:30])
        more = f"\n- … and {len(problems) - 30} more" if len(problems) > 30 else ""
        raise InputError(f"{source} is not a valid screenplay ({len(problems)} problems):\n{listed}{more}")
    return screenplay_model(data, source)  # the schema and the models agree (a property test says so)


def screenplay_model(data: Any, source: str = "screenplay") -> Screenplay:
    """``Screenplay.model_validate(data)`` with pydantic's error as an ``InputError`` listing the paths
    (no repair and no semantic checks: for code that draws what it is given)."""
    try:
        return Screenplay.model_validate(data)
    except ValidationError as e:
        listed = "\n".join(f"- {json_path(err['loc'])}: {err['msg']}" for err in e.errors()[:30])
        raise InputError(f"{source} is not a valid screenplay:\n{listed}") from None
