"""The character bible: one canonical look per character, inserted the same way into every panel.

It starts from the screenplay's own cast (``characters[].appearance``). A user bible overrides it:
JSON text or a file in the screenplay's shape, ``{"characters": [{"id", "name", "appearance",
"trigger"}]}`` (or just the list), where every field but ``id`` is optional and ``trigger`` is the
LoRA trigger word put in front of the character's look. An entry is matched to the cast by id,
else by name (said in the warnings); an entry that matches nobody is a warning, not an error, so
one bible can serve a whole book.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..fileio import read_text
from ..screenplay.models import Screenplay

FIELDS = ("id", "name", "appearance", "trigger")


@dataclass(frozen=True)
class BibleEntry:
    id: str
    name: str
    appearance: str
    trigger: str = ""


@dataclass
class CharacterBible:
    entries: dict[str, BibleEntry]
    warnings: list[str] = field(default_factory=list)

    def __getitem__(self, character_id: str) -> BibleEntry:
        return self.entries[character_id]


def parse_bible_text(text: str, *, source: str = "bible") -> list[dict[str, Any]]:
    """The entries of a bible given as JSON text; ``[]`` for blank text."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(
            f"{source}: not valid JSON: {e.msg} at line {e.lineno} column {e.colno}; "
            'expected {"characters": [{"id": "akira", "appearance": "…", "trigger": "…"}]}'
        ) from None
    return _entries(data, source)


def load_bible_file(path: str | Path) -> list[dict[str, Any]]:
    path = Path(path)
    return parse_bible_text(read_text(path, "bible file"), source=f"bible file {path.name}")


def _entries(data: Any, source: str) -> list[dict[str, Any]]:
    if isinstance(data, dict) and "characters" in data:
        data = data["characters"]
    if not isinstance(data, list):
        raise InputError(
            f'{source}: expected {{"characters": [...]}} or a list of characters, got {type(data).__name__}'
        )
    problems: list[str] = []
    for i, entry in enumerate(data):
        where = f"{source}: characters[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: must be an object with an id, got {type(entry).__name__}")
            continue
        if not isinstance(entry.get("id"), str) or not entry["id"].strip():
            problems.append(f"{where}.id: missing; every entry needs the character's id")
        for key in FIELDS[1:]:
            if key in entry and not isinstance(entry[key], str):
                problems.append(f"{where}.{key}: must be text, got {type(entry[key]).__name__}")
    if problems:
        raise InputError("\n".join(problems))
    return data


def build_bible(screenplay: Screenplay, overrides: list[dict[str, Any]] | None = None) -> CharacterBible:
    """The screenplay's cast as a bible, with ``overrides`` (parsed user entries) applied."""
    bible = CharacterBible(
        {c.id: BibleEntry(c.id, c.name, " ".join(c.appearance.split())) for c in screenplay.characters}
    )
    by_name = {" ".join(c.name.split()).casefold(): c.id for c in screenplay.characters}
    cast = ", ".join(bible.entries)
    for i, entry in enumerate(overrides or []):
        eid = entry["id"].strip()
        target = eid if eid in bible.entries else None
        name = " ".join(str(entry.get("name", "")).split())
        if target is None and name.casefold() in by_name:
            target = by_name[name.casefold()]
            bible.warnings.append(f"bible characters[{i}] {eid!r} matched {target!r} by its name {name!r}")
        if target is None:
            bible.warnings.append(
                f"bible characters[{i}] {eid!r} is not in this screenplay ({cast}); it is not used here"
            )
            continue
        unknown = sorted(set(entry) - set(FIELDS))
        if unknown:
            bible.warnings.append(f"bible characters[{i}]: ignored unknown fields {', '.join(unknown)}")
        current = bible.entries[target]
        changes = {
            k: " ".join(entry[k].split()) for k in ("appearance", "trigger") if entry.get(k, "").strip()
        }
        bible.entries[target] = replace(current, **changes)
    return bible
