"""The character bible of one screenplay: one canonical look per character, inserted the same way
into every panel.

It starts from the screenplay's own cast (``characters[].appearance``). A series bible
(``mangaka.screenplay.bible``: the one bible format of the pack, ``schemas/bible.schema.json``;
earlier character bibles, ``{"characters": [{"id", "name", "appearance", "trigger"}]}`` or just the
list, still load) overrides it: its appearance and LoRA trigger words are the ones drawn. An entry
is matched to the cast by id, else by its name or an alias (said in the warnings); an entry that
matches nobody is a warning, not an error, so one bible serves a whole book.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..names import fold
from ..screenplay.bible import BibleCharacter, SeriesBible, load_series_bible, parse_series_bible
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
    """The entries of a bible given as JSON text (``[]`` for blank text), as plain dicts."""
    return _dicts(parse_series_bible(text, source=source))


def load_bible_file(path: str | Path) -> list[dict[str, Any]]:
    return _dicts(load_series_bible(path))


def _dicts(bible: SeriesBible) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json") for c in bible.characters]


def build_bible(
    screenplay: Screenplay, overrides: SeriesBible | list[dict[str, Any]] | None = None
) -> CharacterBible:
    """The screenplay's cast as a bible, with ``overrides`` (a series bible, or parsed entries,
    later ones winning) applied."""
    bible = CharacterBible(
        {c.id: BibleEntry(c.id, c.name, " ".join(c.appearance.split())) for c in screenplay.characters}
    )
    by_name = {fold(c.name): c.id for c in screenplay.characters}
    cast = ", ".join(bible.entries)
    entries = overrides.characters if isinstance(overrides, SeriesBible) else overrides or []
    for i, raw in enumerate(entries):
        entry = raw if isinstance(raw, BibleCharacter) else BibleCharacter.model_validate(raw)
        target = entry.id if entry.id in bible.entries else None
        name = next((n for n in entry.names if fold(n) in by_name), "")
        if target is None and name:
            target = by_name[fold(name)]
            bible.warnings.append(
                f"bible characters[{i}] {entry.id!r} matched {target!r} by its name {name!r}"
            )
        if target is None:
            bible.warnings.append(
                f"bible characters[{i}] {entry.id!r} is not in this screenplay ({cast}); it is not used here"
            )
            continue
        changes = {k: " ".join(getattr(entry, k).split()) for k in ("appearance", "trigger")}
        bible.entries[target] = replace(bible.entries[target], **{k: v for k, v in changes.items() if v})
    return bible
